// A runaway client (issue 47, point 4; docs/operations.md#limits-per-namespace):
// a client acquiring in a loop on one namespace, never releasing, is stopped
// at its namespace's limit, and Redis' memory stays where it was once the
// limit was reached however long the loop goes on; without a limit the same
// loop grows it by about a kilobyte per lock. Another namespace keeps
// working throughout. (Its pair latency during such a run is a benchmark:
// pathlock-runaway-bench, docs/benchmarks.md.) A private redis-server per case.
#include "support/backends.hpp"
#include "support/redis_server.hpp"

#include <pathlock/engine.hpp>
#include <pathlock/metrics.hpp>
#include <pathlock/redis.hpp>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace pathlock;
using namespace pathlock::test;

namespace {

long long used_memory(const RedisServer& server) { return info_field(server, "memory", "used_memory"); }

// `calls` acquires of new locks by `owner` in `ns`, never released; each
// fair, waiting 0. Returns how many were granted and checks that every other
// was refused by a limit (never an error, never a conflict).
int runaway(LockEngine& engine, const std::string& ns, const std::string& owner, int from, int calls) {
  int granted = 0;
  for (int i = from; i < from + calls; ++i) {
    const AcquireResult r = engine.acquire({ns, owner, "upload", {{"target", fmt::format("/r/{}/f{}", i % 97, i)}}});
    if (r.granted()) ++granted;
    else REQUIRE(r.over_limit());
  }
  return granted;
}

using devtools::until;  // the C++ tests' one wait (tools/dev/until.hpp)

}  // namespace

TEST_CASE("runaway: a client acquiring in a loop is stopped at its limit and memory stays flat",
          "[redis][tenant-limits][runaway]") {
  RedisServer server({"--maxmemory-policy", "noeviction"});
  auto engine = make_redis_engine(RedisOptions{.url = server.url()});
  const std::string ns = unique_namespace("runaway");
  engine->set_limits(ns, Limits{2000, std::nullopt, std::nullopt});
  CHECK(runaway(*engine, ns, "loop", 0, 2000) == 2000);
  const long long at_limit = used_memory(server);
  CHECK(runaway(*engine, ns, "loop", 2000, 20000) == 0);  // ten times the limit more
  const long long after = used_memory(server);
  INFO("used_memory at the limit " << at_limit << ", after 20000 more calls " << after);
  CHECK(after - at_limit < 64 * 1024);
  CHECK(engine->limits(ns).locks == 2000);
  // Another namespace is untouched by it, and unlimited: it grows.
  const std::string other = unique_namespace("neighbour");
  const long long before_other = used_memory(server);
  CHECK(runaway(*engine, other, "svc", 0, 2000) == 2000);
  const long long grown = used_memory(server) - before_other;
  INFO("2000 locks of an unlimited namespace: " << grown << " bytes");
  CHECK(grown > 2000 * 200);  // what the limit saved: a lock costs far more than the flat line's noise
}

TEST_CASE("runaway: the default limit and one owner's limit stop it too, and places in line are bounded",
          "[redis][tenant-limits][runaway]") {
  RedisServer server({"--maxmemory-policy", "noeviction"});
  auto engine = make_redis_engine(RedisOptions{.url = server.url()});
  engine->set_default_limits(Limits{1500, 50, 400});
  const std::string ns = unique_namespace("runaway");
  // One owner: 400 locks, then refused; other owners go on to the namespace's 1500.
  CHECK(runaway(*engine, ns, "loop", 0, 1000) == 400);
  CHECK(runaway(*engine, ns, "other-1", 1000, 400) == 400);
  CHECK(runaway(*engine, ns, "other-2", 1400, 400) == 400);
  CHECK(runaway(*engine, ns, "other-3", 1800, 400) == 300);  // the namespace's 1500
  const long long at_limit = used_memory(server);
  CHECK(runaway(*engine, ns, "other-4", 2200, 5000) == 0);
  CHECK(used_memory(server) - at_limit < 64 * 1024);
  // Fair waiters in a loop: at most 50 places, the rest refused at once.
  engine->set_default_limits(Limits{std::nullopt, 50, std::nullopt});
  const Grant held = granted(*engine, one_target_request(ns, "holder", "delete_folder", "/w", Millis{0}));
  std::vector<std::future<AcquireResult>> waiting;
  for (int i = 0; i < 50; ++i)
    waiting.push_back(std::async(std::launch::async, [&, i] {
      return engine->acquire(one_target_request(ns, "w" + std::to_string(i), "upload", "/w/" + std::to_string(i),
                                                Millis{20000}));
    }));
  REQUIRE(until([&] { return engine->limits(ns).places == 50; }));
  for (int i = 0; i < 200; ++i) {
    const AcquireResult r =
        engine->acquire(one_target_request(ns, "late", "upload", "/w/x" + std::to_string(i), Millis{20000}));
    REQUIRE(r.over_limit());
    CHECK(r.limit.limit == LimitKind::places);
  }
  CHECK(engine->limits(ns).places == 50);
  engine->set_default_limits(Limits{});
  CHECK(engine->force_release(ns, held.id));
  for (auto& w : waiting) CHECK(w.get().granted());
}

// A service user that may not read pl:limits (ACL: -get): its engine tells
// so once and sends no default, and keeps working; a namespace's own limits,
// which the library reads itself, still bind it.
TEST_CASE("runaway: a user that may not GET the default limits is told once, and a namespace's own still bind it",
          "[redis][tenant-limits][acl]") {
  RedisServer server({"--maxmemory-policy", "noeviction"});
  REQUIRE(server.command({"ACL", "SETUSER", "noget", "on", ">pw", "~pl:*", "&pl:*", "+@all", "-get"}).str == "OK");
  auto admin = make_redis_engine(RedisOptions{.url = server.url()});
  admin->set_default_limits(Limits{1, std::nullopt, std::nullopt});
  std::vector<std::string> warnings;
  std::mutex mu;
  RedisOptions options;
  options.url = "redis://noget:pw@127.0.0.1:" + std::to_string(server.port());
  options.observe.log = [&](LogLevel level, std::string_view message, const std::vector<LogField>&) {
    std::lock_guard guard(mu);
    if (level == LogLevel::warning) warnings.emplace_back(message);
  };
  auto engine = make_redis_engine(options);
  const std::string ns = unique_namespace("noget");
  CHECK(runaway(*engine, ns, "svc", 0, 3) == 3);  // no default reached it
  {
    std::lock_guard guard(mu);
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0].find("may not GET pl:limits") != std::string::npos);
  }
  admin->set_limits(ns, Limits{4, std::nullopt, std::nullopt});
  CHECK(runaway(*engine, ns, "svc", 3, 5) == 1);
  CHECK(admin->limits(ns).locks == 4);
  admin->set_default_limits(Limits{});
}
