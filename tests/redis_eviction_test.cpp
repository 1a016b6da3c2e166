// Eviction (issue 47, point 1; docs/operations.md#eviction-and-memory-limits):
// under every maxmemory-policy pathlock accepts, no key that holds a live
// lock, a live place in line or a fence can be evicted. Redis evicts only
// keys with a TTL under the volatile-* policies, so the library gives live
// data none there (it reads the policy from INFO itself), and refuses to
// grant under allkeys-*. Each case has a private redis-server with a small
// maxmemory, filled by another application's keys.
#include "support/backends.hpp"
#include "support/lock_request.hpp"
#include "support/process.hpp"
#include "support/redis_server.hpp"

#include "redis/library.hpp"

#include <pathlock/engine.hpp>
#include <pathlock/redis.hpp>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

using namespace pathlock;
using namespace pathlock::test;

namespace {

// maxmemory: what the server uses now (the library loaded) plus `headroom`.
void limit_memory(const RedisServer& server, long long headroom) {
  const long long used = info_field(server, "memory", "used_memory");
  REQUIRE(server.command({"CONFIG", "SET", "maxmemory", std::to_string(used + headroom)}).str == "OK");
}

// Another application's cache: `keys` 200-byte values, with EX 3600 when
// `ttl`. Returns how many SETs were refused (OOM).
int fill(const RedisServer& server, int first, int keys, bool ttl) {
  const std::string value(200, 'v');
  int refused = 0;
  for (int i = first; i < first + keys; ++i) {
    std::vector<std::string> set{"SET", fmt::format("cache:{}", i), value};
    if (ttl) set.insert(set.end(), {"EX", "3600"});
    refused += server.command(set).is_error() ? 1 : 0;
  }
  return refused;
}

// The PTTL of every key of namespace `ns`.
std::vector<long long> pttls(const RedisServer& server, const std::string& ns) {
  std::vector<long long> out;
  for (const std::string& key : server.keys(prefix_of(ns) + "*")) out.push_back(server.command({"PTTL", key}).integer);
  return out;
}

bool none_expires(const std::vector<long long>& ttls) {
  for (long long t : ttls)
    if (t != -1) return false;
  return !ttls.empty();
}

using devtools::until;  // the C++ tests' one wait (tools/dev/until.hpp)

constexpr Millis kLease{60000};

}  // namespace

TEST_CASE("under every volatile policy memory pressure evicts no lock, no place in line and no fence",
          "[redis][eviction]") {
  for (const char* policy : {"volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"}) {
    INFO(policy);
    const RedisServer server({"--maxmemory-policy", policy});
    const auto engine = redis_engine(server.url(), nullptr, 4);
    const auto waiter_engine = redis_engine(server.url(), nullptr, 1);
    std::vector<std::string> names;
    std::vector<Grant> grants;
    for (int i = 0; i < 20; ++i) {
      names.push_back(unique_namespace("evict"));
      grants.push_back(granted(*engine, request(names.back(), "alice", "move_folder",
                                                {{"src", "/p/A"}, {"dst", "/p/B"}}, kLease)));
    }
    LockRequest bob = request(names[0], "bob", "upload", {{"target", "/p/A/x"}});
    bob.wait = kLease;
    auto waiting = std::async(std::launch::async, [&] { return waiter_engine->acquire(bob); });
    REQUIRE(until([&] { return engine->waiters(names[0]).size() == 1; }));
    limit_memory(server, 3 << 20);

    CHECK(fill(server, 0, 20000, true) == 0);  // evicted, never refused: there are keys with a TTL
    CHECK(info_field(server, "stats", "evicted_keys") > 0);
    for (std::size_t i = 0; i < names.size(); ++i) {
      INFO(names[i]);
      CHECK(none_expires(pttls(server, names[i])));
      CHECK(engine->is_held(names[i], grants[i].id, grants[i].token));
      CHECK_FALSE(engine->acquire(request(names[i], "carol", "upload", {{"target", "/p/A/y"}})).granted());
    }
    CHECK(waiting.wait_for(std::chrono::seconds(0)) == std::future_status::timeout);
    CHECK(engine->waiters(names[0]).size() == 1);

    // The last lock released: the other namespaces still hold theirs.
    REQUIRE(engine->release(names[0], grants[0].id, grants[0].token));
    const AcquireResult b = waiting.get();
    REQUIRE(b.granted());
    CHECK(b.grant.fence > grants[0].fence);
    REQUIRE(engine->release(names[0], b.grant.id, b.grant.token));
  }
}

TEST_CASE("under noeviction the keys expire, and memory pressure refuses writes instead of evicting",
          "[redis][eviction]") {
  const RedisServer server({"--maxmemory-policy", "noeviction"});
  const auto engine = redis_engine(server.url(), nullptr, 2);
  const std::string ns = unique_namespace("noevict");
  const Grant g = granted(*engine, request(ns, "alice", "move_folder", {{"src", "/p/A"}, {"dst", "/p/B"}}, kLease));
  for (long long t : pttls(server, ns)) CHECK(t > 0);  // expiring: dormant namespaces clean up by themselves
  limit_memory(server, 3 << 20);
  CHECK(fill(server, 0, 20000, true) > 0);
  CHECK(info_field(server, "stats", "evicted_keys") == 0);
  CHECK(engine->is_held(ns, g.id, g.token));
  try {  // refused, or (while the server is above maxmemory) not run at all
    CHECK_FALSE(engine->acquire(request(ns, "bob", "upload", {{"target", "/p/A/x"}})).granted());
  } catch (const BackendError& e) {
    CHECK_THAT(e.what(), Catch::Contains("OOM"));
  }
  CHECK(engine->release(ns, g.id, g.token));  // release works at maxmemory
}

TEST_CASE("a namespace whose keys expire keeps them without a TTL once the server's policy may evict them",
          "[redis][eviction]") {
  const RedisServer server({"--maxmemory-policy", "noeviction"});
  const auto engine = redis_engine(server.url(), nullptr, 2);
  const std::string ns = unique_namespace("switch");
  const Grant g = granted(*engine, request(ns, "alice", "upload", {{"target", "/p/a"}}, kLease));
  REQUIRE(server.command({"HGET", prefix_of(ns) + "meta", "layout"}).str == redis::kExpiringLayout);
  REQUIRE(server.command({"CONFIG", "SET", "maxmemory-policy", "volatile-lru"}).str == "OK");
  // The library reads the policy at most once a second: the first writing
  // call after that takes every TTL off.
  REQUIRE(until([&] {
    const AcquireResult r = engine->acquire(request(ns, "bob", "upload", {{"target", "/p/b"}}, kLease));
    REQUIRE(r.granted());
    REQUIRE(engine->release(ns, r.grant.id, r.grant.token));
    return server.command({"HGET", prefix_of(ns) + "meta", "layout"}).str == std::to_string(redis::kLayoutVersion);
  }));
  CHECK(none_expires(pttls(server, ns)));
  CHECK(engine->is_held(ns, g.id, g.token));

  // Drained, only meta is left: it expires (its fence is then the clock's),
  // and the next lock takes its TTL off again.
  REQUIRE(engine->release(ns, g.id, g.token));
  const std::vector<long long> left = pttls(server, ns);
  REQUIRE(left.size() == 1);
  CHECK(left[0] > 0);
  CHECK(left[0] <= redis::kExpiryMarginMs + 1000);
  const Grant again = granted(*engine, request(ns, "carol", "upload", {{"target", "/p/c"}}, kLease));
  CHECK(again.fence > g.fence);
  CHECK(none_expires(pttls(server, ns)));
  CHECK(server.command({"HGET", prefix_of(ns) + "meta", "layout"}).str == std::to_string(redis::kLayoutVersion));
}

TEST_CASE("under an allkeys policy the library itself refuses to grant, and holders can still finish",
          "[redis][eviction]") {
  const RedisServer server({"--maxmemory-policy", "noeviction"});
  const auto engine = redis_engine(server.url(), nullptr, 1);
  const std::string ns = unique_namespace("allkeys");
  const Grant g = granted(*engine, request(ns, "alice", "upload", {{"target", "/p/a"}}, kLease));
  // Set after the engine connected, so its connect check does not see it.
  REQUIRE(server.command({"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"}).str == "OK");
  std::string refused;
  REQUIRE(until([&] {
    try {
      const AcquireResult r = engine->acquire(request(ns, "bob", "upload", {{"target", "/p/b"}}, kLease));
      if (r.granted()) REQUIRE(engine->release(ns, r.grant.id, r.grant.token));
      return false;
    } catch (const BackendError& e) {
      refused = e.what();
      return true;
    }
  }));
  CHECK_THAT(refused, Catch::Contains("allkeys-lru") && Catch::Contains("nothing was changed"));
  CHECK(engine->list(ns).size() == 1);
  CHECK(engine->renew(ns, g.id, g.token, kLease));
  CHECK(engine->release(ns, g.id, g.token));
}

TEST_CASE("with CONFIG disabled the policy is read from INFO: allkeys refused, volatile accepted",
          "[redis][eviction][config]") {
  {
    const RedisServer server({"--rename-command", "CONFIG", "", "--maxmemory-policy", "allkeys-lfu"});
    CHECK_THROWS_WITH(redis_engine(server.url()), Catch::Contains("allkeys-lfu"));
  }
  const RedisServer server({"--rename-command", "CONFIG", "", "--maxmemory-policy", "volatile-lru"});
  std::unique_ptr<LockEngine> engine;
  const std::string err = test::capture_stderr([&] { engine = redis_engine(server.url()); });
  CHECK(err.find("maxmemory-policy") == std::string::npos);
  const std::string ns = unique_namespace("noconfig");
  const Grant g = granted(*engine, request(ns, "alice", "upload", {{"target", "/p/a"}}, kLease));
  CHECK(none_expires(pttls(server, ns)));
  CHECK(engine->release(ns, g.id, g.token));
}
