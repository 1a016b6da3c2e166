#include "support/namespace_keys.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

namespace pathlock::test {

std::vector<std::string> tagged_keys(const RedisServer& server, const std::string& ns) {
  // Namespaces are [A-Za-z0-9._:-]: nothing in them is special to MATCH.
  return server.keys("*{" + ns + "}*");
}

std::vector<std::string> keys_left_after_drain(const RedisServer& server, const std::string& ns) {
  const std::string tag = "{" + ns + "}";
  std::vector<std::string> left;
  for (const std::string& key : tagged_keys(server, ns)) {
    std::string rest = key.substr(key.find(tag) + tag.size());
    if (!rest.empty()) rest.erase(0, 1);  // the separator after the tag
    if (std::find(kOnlyMeta.begin(), kOnlyMeta.end(), rest) == kOnlyMeta.end())
      left.push_back(key);
  }
  return left;
}

void reap_by_a_write(LockEngine& engine, const std::string& ns) {
  const AcquireResult r = engine.acquire(LockRequest{ns, "reaper", "upload", {{"target", "/reaped/by/a/write"}}});
  REQUIRE(r.granted());
  REQUIRE(engine.release(ns, r.grant.id, r.grant.token));
}

}  // namespace pathlock::test
