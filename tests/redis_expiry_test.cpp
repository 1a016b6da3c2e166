// Namespaces that clean up after themselves (issue 37, point 5, Redis;
// docs/lua-protocol.md#expiry): every key of a namespace of layout "4.2"
// expires kExpiryMarginMs after the latest lease end, reservation end or
// fence time, so namespaces left with abandoned locks vanish with no call
// touching them, and a new lock there still gets a larger fence. Against a
// private redis-server (its key count and memory are this test's alone).
//
// PATHLOCK_EXPIRY_NAMESPACES=N runs the first case with N namespaces (default
// 300) and prints the figures: docs/benchmarks.md reports N = 10,000.
#include "support/backends.hpp"
#include "support/lock_request.hpp"
#include "support/redis_server.hpp"

#include "redis/library.hpp"

#include <pathlock/engine.hpp>
#include <pathlock/redis.hpp>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace pathlock;
using namespace pathlock::test;

namespace {

long long dbsize(const RedisServer& server) { return server.command({"DBSIZE"}).integer; }

int namespace_count() {
  const char* n = std::getenv("PATHLOCK_EXPIRY_NAMESPACES");
  return n && *n ? std::max(1, std::atoi(n)) : 300;
}

// Every key of `ns` expires (PTTL > 0) no later than `by_ms` from now.
void check_volatile(const RedisServer& server, const std::string& ns, long long by_ms) {
  for (const std::string& suffix : ns_keys(server, ns)) {
    const long long pttl = server.command({"PTTL", prefix_of(ns) + suffix}).integer;
    INFO(ns << " " << suffix << " PTTL " << pttl);
    CHECK(pttl > 0);
    CHECK(pttl <= by_ms);
  }
}

}  // namespace

TEST_CASE("namespaces left with abandoned locks vanish once their leases end, and their fences still grow",
          "[redis][expiry]") {
  const RedisServer server;
  const int n = namespace_count();
  const auto engine = redis_engine(server.url(), nullptr, 4, Millis{5000});
  const std::string warm = unique_namespace("exp-warm");
  const Grant w = granted(*engine, request(warm, "svc", "upload", {{"target", "/w"}}, Millis{1}));
  (void)w;
  REQUIRE(server.command({"FLUSHDB"}).str == "OK");  // the library stays; no key at the start
  const long long memory_start = info_field(server, "memory", "used_memory");
  const long long dataset_start = info_field(server, "memory", "used_memory_dataset");
  std::vector<std::string> names;
  std::vector<std::uint64_t> fences;
  constexpr Millis kLease{300};
  const auto begun = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    names.push_back(unique_namespace("exp"));
    const Grant g = granted(*engine, request(names.back(), "svc", "move_folder",
                                             {{"src", "/project/a/" + std::to_string(i)}, {"dst", "/project/b"}}, kLease));
    fences.push_back(g.fence);  // abandoned: never released, renewed or touched again
  }
  const long long keys_full = dbsize(server);
  const long long memory_full = info_field(server, "memory", "used_memory");
  CHECK(keys_full == 5LL * n);  // meta, idx, locks, exp, ent
  CHECK(server.command({"HGET", prefix_of(names[0]) + "meta", "layout"}).str == redis::kExpiringLayout);
  check_volatile(server, names[0], kLease.count() + redis::kExpiryMarginMs + 1000);
  check_volatile(server, names[n - 1], kLease.count() + redis::kExpiryMarginMs + 1000);
  // Once the leases ended the keys stay for the margin (the lease end is
  // no moment to drop them: the fences need the time to pass)...
  devtools::wait_for("expiry test", "the leases to end", [&] {
    return std::chrono::steady_clock::now() - begun > kLease + Millis{100};
  });
  CHECK(dbsize(server) == keys_full);
  // ...then go, with no call touching them.
  devtools::wait_for("expiry test", "every key to expire", [&] { return dbsize(server) == 0; },
                     static_cast<int>(redis::kExpiryMarginMs / 1000) + 20);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - begun).count();
  const long long memory_end = info_field(server, "memory", "used_memory");
  const long long dataset_end = info_field(server, "memory", "used_memory_dataset");
  std::printf("expiry: %d namespaces, %lld keys, used_memory %lld -> %lld -> %lld bytes (%+.2f%% of the start), "
              "dataset %lld -> %lld; all keys gone %.1f s after the first grant\n",
              n, keys_full, memory_start, memory_full, memory_end,
              100.0 * static_cast<double>(memory_end - memory_start) / static_cast<double>(memory_start),
              dataset_start, dataset_end, waited);
  CHECK(static_cast<double>(memory_end) <= 1.05 * static_cast<double>(memory_start));
  // A new lock in a namespace that vanished: its fence is still larger.
  const Grant again = granted(*engine, request(names[0], "svc", "upload", {{"target", "/project/a/0"}}));
  CHECK(again.fence > fences[0]);
  CHECK(again.fence > fences[n - 1]);
}

TEST_CASE("what moves a namespace's expiry: a renewal and a reservation move it, a release leaves it", "[redis][expiry]") {
  const RedisServer& server = shared_redis_server();
  const std::string ns = unique_namespace("exp-move");
  const auto engine = redis_engine(server.url());
  const Grant g = granted(*engine, request(ns, "svc", "upload", {{"target", "/a"}}, Millis{1000}));
  const auto x = [&] { return std::stoll(server.command({"HGET", prefix_of(ns) + "meta", "x"}).str); };
  const long long first = x();
  CHECK(server.command({"PEXPIRETIME", prefix_of(ns) + "locks"}).integer == first);
  REQUIRE(engine->renew(ns, g.id, g.token, Millis{600000}));
  const long long renewed = x();
  CHECK(renewed >= first + 599000);
  for (const char* key : {"meta", "idx", "locks", "exp", "ent"})
    CHECK(server.command({"PEXPIRETIME", prefix_of(ns) + key}).integer == renewed);
  // A waiter's place: its keys get the namespace's expiry.
  FunctionCaller eval(server.url(), default_matrix(), ns);
  const RedisReply refused =
      eval("acquire", {"w", "move_folder", "1000", "i2", "t2", "", "", "", "/a", "/z", "1", "w-place", "2000"});
  REQUIRE(refused.elements.at(0).str == "refused");
  for (const char* key : {"wq", "wexp", "wrec"})
    CHECK(server.command({"PEXPIRETIME", prefix_of(ns) + key}).integer == renewed);
  CHECK(eval("leave", {"w-place"}).elements.at(0).str == "left");
  REQUIRE(engine->release(ns, g.id, g.token));
  CHECK(ns_keys(server, ns) == kOnlyMeta);
  CHECK(server.command({"PEXPIRETIME", prefix_of(ns) + "meta"}).integer == renewed);  // a release moves nothing
}

TEST_CASE("a namespace of layout 4 where an older library may write keeps its keys until it drains",
          "[redis][expiry][upgrade]") {
  const RedisServer& server = shared_redis_server();
  const std::string ns = unique_namespace("exp-old");
  const auto engine = redis_engine(server.url());
  const std::string meta = prefix_of(ns) + "meta";
  // A lock as a library before 4.2 leaves it: layout "4", no expiry.
  const Grant old = granted(*engine, request(ns, "old", "upload", {{"target", "/old"}}));
  for (const std::string& suffix : ns_keys(server, ns)) server.command({"PERSIST", prefix_of(ns) + suffix});
  server.command({"HSET", meta, "layout", "4"});
  server.command({"HDEL", meta, "x"});
  // A new lock beside it: still layout 4, still no expiry (an older library
  // writing here would not move it).
  const Grant beside = granted(*engine, request(ns, "new", "upload", {{"target", "/new"}}));
  CHECK(server.command({"HGET", meta, "layout"}).str == "4");
  for (const std::string& suffix : ns_keys(server, ns)) CHECK(server.command({"PTTL", prefix_of(ns) + suffix}).integer == -1);
  // Drained, its next lock makes it expire.
  REQUIRE(engine->release(ns, old.id, old.token));
  REQUIRE(engine->release(ns, beside.id, beside.token));
  const Grant next = granted(*engine, request(ns, "new", "upload", {{"target", "/next"}}));
  CHECK(next.fence > beside.fence);
  CHECK(server.command({"HGET", meta, "layout"}).str == redis::kExpiringLayout);
  check_volatile(server, ns, 30000 + redis::kExpiryMarginMs + 1000);
}

TEST_CASE("a user that may not run PEXPIREAT: its new namespaces keep their keys, expiring ones refuse it",
          "[redis][expiry][acl]") {
  const RedisServer server;  // private: this test adds an ACL user
  REQUIRE(server.command({"ACL", "SETUSER", "nopex", "on", ">pw", "~pl:*", "&pl:*", "+@all", "-pexpireat"}).str ==
          "OK");
  const auto admin = redis_engine(server.url());  // loads the library (the user may too; it need not)
  const std::string url = "redis://nopex:pw@127.0.0.1:" + std::to_string(server.port());
  const auto engine = redis_engine(url);
  const std::string plain = unique_namespace("exp-nopex");
  const Grant g = granted(*engine, request(plain, "svc", "upload", {{"target", "/a"}}));
  CHECK(server.command({"HGET", prefix_of(plain) + "meta", "layout"}).str == "4");
  CHECK(server.command({"PTTL", prefix_of(plain) + "locks"}).integer == -1);
  CHECK(engine->release(plain, g.id, g.token));
  // In a namespace whose keys expire it may not write: it could not move them.
  const std::string expiring = unique_namespace("exp-nopex2");
  (void)granted(*admin, request(expiring, "svc", "upload", {{"target", "/a"}}));
  CHECK_THROWS_WITH(engine->acquire(request(expiring, "svc", "upload", {{"target", "/b"}})),
                    Catch::Contains("PEXPIREAT") && Catch::Contains("nothing was changed"));
  CHECK(admin->list(expiring).size() == 1);
}

// Limits per namespace (docs/lua-protocol.md#limits): an operator's
// setting, which the expiry of a dormant namespace must not drop. A
// namespace given limits of its own keeps its keys without a TTL (an
// expiring one is made layout 4), drained too; with its limits taken away
// it expires again.
TEST_CASE("a namespace with limits of its own keeps its keys, and without them it expires again",
          "[redis][expiry][tenant-limits]") {
  const RedisServer& server = shared_redis_server();
  const std::string ns = unique_namespace("exp-limits");
  const auto engine = redis_engine(server.url());
  const std::string meta = prefix_of(ns) + "meta";
  const Grant g = granted(*engine, request(ns, "svc", "upload", {{"target", "/a"}}, Millis{1000}));
  REQUIRE(server.command({"HGET", meta, "layout"}).str == redis::kExpiringLayout);
  engine->set_limits(ns, Limits{10, std::nullopt, std::nullopt});
  CHECK(server.command({"HGET", meta, "layout"}).str == "4");
  for (const std::string& suffix : ns_keys(server, ns)) CHECK(server.command({"PTTL", prefix_of(ns) + suffix}).integer == -1);
  // Drained: meta stays, with the limits, and no TTL; a new lock adds none.
  REQUIRE(engine->release(ns, g.id, g.token));
  CHECK(ns_keys(server, ns) == kOnlyMeta);
  CHECK(server.command({"PTTL", meta}).integer == -1);
  const Grant again = granted(*engine, request(ns, "svc", "upload", {{"target", "/b"}}, Millis{1000}));
  CHECK(again.fence > g.fence);
  CHECK(server.command({"HGET", meta, "layout"}).str == "4");
  REQUIRE(engine->release(ns, again.id, again.token));
  CHECK(engine->limits(ns).overrides == Limits{10, std::nullopt, std::nullopt});
  // Taken away: the drained namespace's meta expires, and its next lock makes it expiring.
  engine->set_limits(ns, std::nullopt);
  const long long pttl = server.command({"PTTL", meta}).integer;
  CHECK(pttl > 0);
  CHECK(pttl <= redis::kExpiryMarginMs + 1000);
  const Grant next = granted(*engine, request(ns, "svc", "upload", {{"target", "/c"}}, Millis{1000}));
  CHECK(next.fence > again.fence);
  CHECK(server.command({"HGET", meta, "layout"}).str == redis::kExpiringLayout);
  check_volatile(server, ns, 1000 + redis::kExpiryMarginMs + 1000);
}
