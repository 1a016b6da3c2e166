// Network partitions between an engine and its Redis server, for real
// (issue 37): each test makes its own network namespaces (support/netns.hpp),
//
//   ns a  --veth 169.254.1.0/30--  ns redis  --veth 169.254.2.0/30--  ns b
//   (instance A)                   (redis-server)                     (instance B)
//
// a redis-server inside "redis" listening on both link addresses and on that
// namespace's loopback (where the test looks at it, whatever the links do),
// and the engines of two service instances, A and B, each made and called
// inside its own namespace. The link of A is cut with nftables drops on both
// ends (silent: no error, calls run into their timeouts) and healed.
//
// Scenarios, each with its history checked by `pathlock-stress check`
// (support/history.hpp: no two conflicting holders at once, fences never
// backwards):
//   - a holder cut off: its LeaseKeeper reports the lease lost while the
//     server still holds it; B, waiting in line, gets the lock after the
//     lease ends; A's late renew and release after the network returns
//     change nothing of B's lock; a storage write with A's stale grant is
//     refused (is_held, and the fence once B wrote: docs/guard.md);
//   - a waiter cut off while in line: it is granted nothing, and the next
//     waiter gets the lock once the cut-off waiter's reservation ends.
#include "support/partition.hpp"

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <condition_variable>
#include <iostream>
#include <map>
#include <mutex>
#include <pathlock/engine.hpp>
#include <pathlock/keeper.hpp>
#include <thread>

#include "support/backends.hpp"
#include "support/history.hpp"
#include "support/netns.hpp"
#include "support/process.hpp"
#include "support/redis_server.hpp"
#include "support/waiting_probe.hpp"

using namespace pathlock;
using namespace std::chrono_literals;
using namespace pathlock::test;

namespace {

// The three namespaces, their two links and the redis-server; see the file
// comment. The server goes first, then the links and namespaces.
struct RedisLab : PartitionLab {
  RedisLab() : PartitionLab("redis") {}
  std::unique_ptr<RedisServer> server = inside(server_ns, [&] {
    return std::make_unique<RedisServer>(std::vector<std::string>{"--bind", "127.0.0.1", link_a.address_b(),
                                                                  link_b.address_b(), "--protected-mode", "no"});
  });

  // Over the server's loopback, connected once (a read is one round trip).
  std::unique_ptr<LockEngine> observer = inside(server_ns, [&] { return redis_engine(server->url()); });

  std::string url_for(const VethLink& link) const {
    return fmt::format("redis://{}:{}", link.address_b(), server->port());
  }
  // An engine of instance A (B), made inside its namespace.
  std::unique_ptr<LockEngine> engine_a(Millis command_timeout) {
    return inside(a_ns, [&] { return redis_engine(url_for(link_a), nullptr, 4, command_timeout); });
  }
  std::unique_ptr<LockEngine> engine_b() {
    return inside(b_ns, [&] { return redis_engine(url_for(link_b)); });
  }
  // The server's live locks and places in line of `ns`, read over its loopback.
  std::vector<LockInfo> locks(const std::string& ns) {
    return inside(server_ns, [&] { return observer->list(ns); });
  }
  std::vector<WaiterInfo> waiters(const std::string& ns) {
    return inside(server_ns, [&] { return observer->waiters(ns); });
  }
  // How many connections the server has from `address` (CLIENT LIST).
  int clients_from(const std::string& address) {
    const std::string list = inside(server_ns, [&] { return server->command({"CLIENT", "LIST"}).str; });
    int n = 0;
    for (std::size_t at = list.find(" addr=" + address + ":"); at != std::string::npos;
         at = list.find(" addr=" + address + ":", at + 1))
      ++n;
    return n;
  }
};

}  // namespace

// ---------------------------------------------------------------------------
// A holder cut off from Redis.

namespace {

constexpr Millis kHolderTtl = 4000ms;      // A's lease: its keeper renews every 1.3 s, reports 50 ms early
constexpr Millis kHolderTimeout = 1000ms;  // A's command timeout (docs/operations.md's example)

// Instance A holding delete_folder /p/A under a LeaseKeeper, B waiting for
// the same lock, and what the scenario saw.
struct CutHolder {
  RedisLab lab;
  const std::string ns = unique_namespace("part-holder");
  std::unique_ptr<LockEngine> a = lab.engine_a(kHolderTimeout), b = lab.engine_b();
  std::unique_ptr<LeaseKeeper> keeper = inside(lab.a_ns, [&] { return std::make_unique<LeaseKeeper>(*a); });
  const ScratchDir scratch{"partition"};
  History history{scratch, "holder.log"};
  LockRequest request_a{ns, "A", "delete_folder", {{"target", "/p/A"}}, kHolderTtl};
  LockRequest request_b{ns, "B", "delete_folder", {{"target", "/p/A"}}, 10000ms, 15000ms};
  AcquireResult got_a;
  Moment lost;
};

// A's late renew and release once the network is back: both refused, and
// B's lock neither freed nor extended.
void late_calls_change_nothing(CutHolder& s, const Grant& b_grant) {
  const std::vector<LockInfo> before = s.lab.locks(s.ns);
  REQUIRE(find_lock(before, b_grant.id));
  const Grant& stale = s.got_a.grant;
  CHECK_FALSE(answer(s.lab.a_ns, [&] { return s.a->renew(s.ns, stale.id, stale.token, Millis{60000}); }));
  CHECK_FALSE(answer(s.lab.a_ns, [&] { return s.a->release(s.ns, stale.id, stale.token); }));
  CHECK_FALSE(answer(s.lab.a_ns, [&] { return s.a->is_held(s.ns, stale.id, stale.token); }));
  const std::vector<LockInfo> after = s.lab.locks(s.ns);
  REQUIRE(after.size() == 1);
  CHECK(after[0].id == b_grant.id);
  CHECK(after[0].expires_in <= find_lock(before, b_grant.id)->expires_in);  // not extended to 60 s
  CHECK(answer(s.lab.b_ns, [&] { return s.b->is_held(s.ns, b_grant.id, b_grant.token); }));
}

}  // namespace

TEST_CASE("partition: a holder cut off from Redis is told before its lease ends, and its late calls change nothing",
          "[partition][redis]") {
  CutHolder s;
  INFO("history in " << s.history.path());
  const std::int64_t sent_a = monotonic_ns();
  s.got_a = inside(s.lab.a_ns, [&] { return s.a->acquire(s.request_a); });
  const std::int64_t from_a = monotonic_ns();
  REQUIRE(s.got_a.granted());
  const auto lease = s.keeper->keep(s.ns, s.got_a.grant, kHolderTtl, [&](const Lease&) { s.lost.mark(); });
  REQUIRE(until([&] { return lease->renewals() >= 1; }));  // renewals work while the network does

  Attempt waiter_b(s.lab.b_ns, *s.b, s.request_b);
  REQUIRE(until_waiting(s.ns, "B"));
  s.lab.link_a.cut();
  const std::int64_t cut_at = monotonic_ns();
  // Where the server's lease of A ends, at the earliest: the lease left it
  // reports (whole ms) counted from before the read was sent. A renewal that
  // reached the server before the cut only moves the end later.
  const std::int64_t read_at = monotonic_ns();
  const std::vector<LockInfo> after_cut = s.lab.locks(s.ns);
  REQUIRE(find_lock(after_cut, s.got_a.grant.id));
  const std::int64_t server_end = read_at + ms_to_ns(find_lock(after_cut, s.got_a.grant.id)->expires_in - 1ms);
  REQUIRE(s.lost.wait(10s));
  CHECK(s.lost.at < server_end);  // told while the server still held the lease
  FencedStore store;
  CHECK_FALSE(store.write(*s.a, s.lab.a_ns, s.ns, s.got_a.grant, "/p/A/f"));  // is_held cannot be asked

  waiter_b.join();
  INFO("B: " << waiter_b.error);
  REQUIRE(waiter_b.result.granted());
  const Grant& b_grant = waiter_b.result.grant;
  CHECK(b_grant.fence > s.got_a.grant.fence);
  CHECK(waiter_b.answered > s.lost.at);
  std::cout << fmt::format(
      "partition, holder cut off: lease {} ms, command timeout {} ms; lost reported {} ms after the cut, at least {} "
      "ms before the server's lease ended; B granted {} ms after the report\n",
      kHolderTtl.count(), kHolderTimeout.count(), (s.lost.at - cut_at) / 1000000, (server_end - s.lost.at) / 1000000,
      (waiter_b.answered - s.lost.at) / 1000000);

  s.lab.link_a.heal();
  CHECK_FALSE(store.write(*s.a, s.lab.a_ns, s.ns, s.got_a.grant, "/p/A/f"));  // not held any more
  CHECK(store.write(*s.b, s.lab.b_ns, s.ns, b_grant, "/p/A/f"));
  CHECK_FALSE(store.write(*s.a, s.lab.a_ns, s.ns, s.got_a.grant, "/p/A/f"));  // and below B's fence
  late_calls_change_nothing(s, b_grant);
  const std::int64_t released_b = monotonic_ns();
  CHECK(answer(s.lab.b_ns, [&] { return s.b->release(s.ns, b_grant.id, b_grant.token); }));

  s.history.hold(s.request_a, s.got_a.grant, sent_a, from_a, s.lost.at);
  s.history.hold(s.request_b, b_grant, waiter_b.sent, waiter_b.answered,
                 std::min(released_b, waiter_b.sent + ms_to_ns(s.request_b.ttl)));
  std::string verdict;
  const int status = s.history.check(verdict);
  INFO(verdict);
  CHECK(status == 0);
  CHECK(s.history.holds() == 2);
}

// ---------------------------------------------------------------------------
// A waiter cut off while in line.

namespace {

// B holds delete_folder /p/A; A (in its namespace) and then C (in B's) wait
// for the same lock, fair, so A is first in line.
struct CutWaiter {
  RedisLab lab;
  const std::string ns = unique_namespace("part-waiter");
  std::unique_ptr<LockEngine> a = lab.engine_a(1000ms), b = lab.engine_b(), c = lab.engine_b();
  const ScratchDir scratch{"partition"};
  History history{scratch, "waiter.log"};
  LockRequest request_b{ns, "B", "delete_folder", {{"target", "/p/A"}}, 30000ms};
  LockRequest request_a{ns, "A", "delete_folder", {{"target", "/p/A"}}, 30000ms, 8000ms};
  LockRequest request_c{ns, "C", "delete_folder", {{"target", "/p/A"}}, 30000ms, 8000ms};
};

// A's acquire, which waited while its link was cut, and A's engine are
// gone; once the network is back and every connection A had has ended
// (what their sockets still held was delivered and ran, a re-check of A's
// among it), A holds nothing and C's lock is the only one.
void cut_off_waiter_got_nothing(CutWaiter& s, const Attempt& waiter_a, const Grant& c_grant) {
  INFO("A: " << (waiter_a.error.empty() ? "answered" : waiter_a.error));
  CHECK_FALSE(waiter_a.result.granted());
  if (!waiter_a.error.empty()) s.history.maybe(s.request_a, waiter_a.sent, waiter_a.answered);
  s.a.reset();  // the instance gives up (a restart): its sockets close
  s.lab.link_a.heal();
  REQUIRE(until([&] { return s.lab.clients_from(s.lab.link_a.address_a()) == 0; }, 40s));
  const std::vector<LockInfo> locks = s.lab.locks(s.ns);
  REQUIRE(locks.size() == 1);
  CHECK(locks[0].id == c_grant.id);
}

}  // namespace

TEST_CASE("partition: a waiter cut off in line is granted nothing, and the line moves on without it",
          "[partition][redis]") {
  CutWaiter s;
  INFO("history in " << s.history.path());
  const std::int64_t sent_b = monotonic_ns();
  const AcquireResult got_b = inside(s.lab.b_ns, [&] { return s.b->acquire(s.request_b); });
  const std::int64_t from_b = monotonic_ns();
  REQUIRE(got_b.granted());
  Attempt waiter_a(s.lab.a_ns, *s.a, s.request_a);
  REQUIRE(until_waiting(s.ns, "A"));
  Attempt waiter_c(s.lab.b_ns, *s.c, s.request_c);
  REQUIRE(until_waiting(s.ns, "C"));
  const std::vector<WaiterInfo> line = s.lab.waiters(s.ns);
  REQUIRE(line.size() == 2);
  CHECK(line[0].owner == "A");  // first in line

  s.lab.link_a.cut();
  const std::int64_t released_b = monotonic_ns();
  REQUIRE(inside(s.lab.b_ns, [&] { return s.b->release(s.ns, got_b.grant.id, got_b.grant.token); }));
  waiter_c.join();
  INFO("C: " << waiter_c.error);
  REQUIRE(waiter_c.result.granted());  // within its 8 s wait, though A was first
  const Grant& c_grant = waiter_c.result.grant;
  CHECK(c_grant.fence > got_b.grant.fence);
  waiter_a.join();
  std::cout << fmt::format(
      "partition, waiter cut off: C granted {} ms after the release, past A's place in line; A's acquire answered "
      "{} ms after the cut: {}\n",
      (waiter_c.answered - released_b) / 1000000, (waiter_a.answered - released_b) / 1000000,
      waiter_a.error.empty() ? "not granted" : waiter_a.error);
  cut_off_waiter_got_nothing(s, waiter_a, c_grant);

  const std::int64_t released_c = monotonic_ns();
  CHECK(inside(s.lab.b_ns, [&] { return s.c->release(s.ns, c_grant.id, c_grant.token); }));
  // A, back on the network with a new engine, gets the lock.
  const auto a = s.lab.engine_a(1000ms);
  const AcquireResult again = inside(s.lab.a_ns, [&] { return a->acquire(s.request_a); });
  CHECK(again.granted());
  CHECK(again.grant.fence > c_grant.fence);

  s.history.hold(s.request_b, got_b.grant, sent_b, from_b, released_b);
  s.history.hold(s.request_c, c_grant, waiter_c.sent, waiter_c.answered, released_c);
  std::string verdict;
  const int status = s.history.check(verdict);
  INFO(verdict);
  CHECK(status == 0);
}
