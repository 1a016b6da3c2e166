// Network partitions between an engine and its PostgreSQL server, for real
// (issue 37): the lab of support/partition.hpp with a PostgreSQL 15 server
// (tools/dev/pg_devtools, run as `nobody`) inside the server's namespace,
// listening on both link addresses and on that namespace's loopback, where
// the test looks at it. Instances A and B make and call their engines inside
// their own namespaces.
//
//   - A call in flight when the link is cut (silent drops both ways): A's
//     release of a held lock and A's acquire of another fail within their
//     timeouts with "effect unknown"; the release never arrived, so the lock
//     stays until its lease ends and B, waiting, gets it then, not before;
//     the acquire never arrived, so nothing was granted; A's late release
//     after the heal frees nothing of B's.
//   - A grant whose commit is in flight when the link goes (replies to A
//     dropped, requests arriving): the server commits the grant and A is
//     told "effect unknown". Nobody else gets the lock meanwhile; after the
//     heal A's retry with the same idempotency key finds that very lock (same
//     id and fence), A releases it, and B, waiting, gets it.
// Each history is checked by `pathlock-stress check` (support/history.hpp).
#include <fmt/format.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <iostream>
#include <pathlock/engine.hpp>
#include <pathlock/postgres.hpp>
#include <sstream>

#include "pg_devtools/postgres_server.hpp"
#include "support/backends.hpp"
#include "support/history.hpp"
#include "support/netns.hpp"
#include "support/partition.hpp"
#include "support/process.hpp"
#include "support/waiting_probe.hpp"

using namespace pathlock;
using namespace std::chrono_literals;
using namespace pathlock::test;
using devtools::PostgresServer;

namespace {

// Trust for the loopback and the lab's link-local addresses; in a directory
// the server's user (nobody) can read.
std::string write_hba(const ScratchDir& dir) {
  ::chmod(dir.dir().c_str(), 0755);
  const std::string path = dir.path("pg_hba.conf");
  std::ofstream(path) << "local all all trust\nhost all all 127.0.0.1/32 trust\nhost all all 169.254.0.0/16 trust\n";
  ::chmod(path.c_str(), 0644);
  return path;
}

std::unique_ptr<LockEngine> postgres_engine_on(const std::string& url, Millis command_timeout) {
  PostgresOptions options;
  options.url = url;
  options.command_timeout = command_timeout;
  return make_postgres_engine(options);
}

// The lab with its PostgreSQL server; the server goes before the links.
struct PostgresLab : PartitionLab {
  PostgresLab() : PartitionLab("pg") {}
  const ScratchDir conf{"partition-pg"};
  const std::string hba = write_hba(conf);
  std::unique_ptr<PostgresServer> server = inside(server_ns, [&] {
    return std::make_unique<PostgresServer>(std::vector<std::string>{
        fmt::format("listen_addresses=127.0.0.1,{},{}", link_a.address_b(), link_b.address_b()), "hba_file=" + hba});
  });
  // Over the server's loopback; made first, so it creates the schema.
  std::unique_ptr<LockEngine> observer = inside(server_ns, [&] { return postgres_engine_on(server->url(), 5000ms); });

  std::unique_ptr<LockEngine> engine_a(Millis command_timeout) {
    return inside(a_ns, [&] { return postgres_engine_on(url_for(link_a), command_timeout); });
  }
  std::unique_ptr<LockEngine> engine_b() {
    return inside(b_ns, [&] { return postgres_engine_on(url_for(link_b), 2000ms); });
  }
  std::vector<LockInfo> locks(const std::string& ns) {
    return inside(server_ns, [&] { return observer->list(ns); });
  }

 private:
  std::string url_for(const VethLink& link) const {
    return fmt::format("postgresql://postgres@{}:{}/postgres", link.address_b(), server->port());
  }
};

// Runs `call` inside `ns`; true when it threw BackendError (what the
// caller sees of a call cut off in flight), and how long it took in `took`.
template <class Call>
bool fails_in_flight(const NetworkNamespace& ns, Call call, std::int64_t& took) {
  const std::int64_t start = monotonic_ns();
  bool failed = false;
  try {
    inside(ns, call);
  } catch (const BackendError& e) {
    failed = std::string(e.what()).find("unknown") != std::string::npos;  // "the call's effect is unknown"
  }
  took = (monotonic_ns() - start) / 1000000;
  return failed;
}

}  // namespace

// ---------------------------------------------------------------------------
// Calls in flight when the link is cut.

namespace {

constexpr Millis kTimeoutA = 1000ms;  // A's command timeout

// A holds delete_folder /p/A on engine `a`; engine `a2` (A's too) has one
// connection open for the acquire that will be in flight; B waits.
struct CallsCut {
  PostgresLab lab;
  const std::string ns = unique_namespace("part-pg-calls");
  std::unique_ptr<LockEngine> a = lab.engine_a(kTimeoutA), a2 = lab.engine_a(kTimeoutA), b = lab.engine_b();
  const ScratchDir scratch{"partition"};
  History history{scratch, "pg_calls.log"};
  LockRequest request_a{ns, "A", "delete_folder", {{"target", "/p/A"}}, 4000ms};
  LockRequest request_x = keyed(LockRequest{ns, "A", "upload", {{"target", "/q/x"}}, 30000ms});
  LockRequest request_b{ns, "B", "delete_folder", {{"target", "/p/A"}}, 10000ms, 20000ms};

  static LockRequest keyed(LockRequest r) {
    r.idempotency_key = "partition-in-flight-1";
    return r;
  }
  // The server's sessions of clients at `address`.
  std::string sessions_from(const std::string& address) {
    return inside(lab.server_ns, [&] {
      return lab.server->sql(fmt::format("SELECT pid FROM pg_stat_activity WHERE client_addr = '{}'", address));
    });
  }
};

// After the heal, once the sessions that were cut off have ended (what
// their sockets still held, the release and the acquire, was delivered and
// ran): A's retry of the acquire with its key has the one lock of /q/x,
// A's release of /p/A freed nothing of B's, and B's lock is there.
void after_heal(CallsCut& s, const std::string& stale_sessions, const Grant& b_grant, const Grant& x_grant) {
  REQUIRE(until(
      [&] {
        const std::string now = s.sessions_from(s.lab.link_a.address_a());
        std::istringstream pids(stale_sessions);
        for (std::string pid; std::getline(pids, pid);)
          if (!pid.empty() && now.find(pid) != std::string::npos) return false;
        return true;
      },
      40s));
  const std::vector<LockInfo> locks = s.lab.locks(s.ns);
  REQUIRE(locks.size() == 2);
  CHECK(find_lock(locks, b_grant.id));
  CHECK(find_lock(locks, x_grant.id));
  CHECK(answer(s.lab.b_ns, [&] { return s.b->is_held(s.ns, b_grant.id, b_grant.token); }));
}

}  // namespace

TEST_CASE("partition: PostgreSQL calls cut off in flight fail as unknown, and the lock they held ends with its lease",
          "[partition][postgres]") {
  CallsCut s;
  INFO("history in " << s.history.path());
  const std::int64_t sent_a = monotonic_ns();
  const AcquireResult got_a = inside(s.lab.a_ns, [&] { return s.a->acquire(s.request_a); });
  const std::int64_t from_a = monotonic_ns();
  REQUIRE(got_a.granted());
  REQUIRE(inside(s.lab.a_ns, [&] { return s.a2->list(s.ns).size() == 1; }));  // a2's connection is open
  Attempt waiter_b(s.lab.b_ns, *s.b, s.request_b);
  REQUIRE(until_waiting(s.ns, "B"));

  s.lab.link_a.cut();
  const std::string stale = s.sessions_from(s.lab.link_a.address_a());
  const std::int64_t release_sent = monotonic_ns();
  std::int64_t release_ms = 0, acquire_ms = 0;
  CHECK(fails_in_flight(
      s.lab.a_ns, [&] { return s.a->release(s.ns, got_a.grant.id, got_a.grant.token); }, release_ms));
  const std::int64_t x_sent = monotonic_ns();
  CHECK(fails_in_flight(
      s.lab.a_ns, [&] { return s.a2->acquire(s.request_x); }, acquire_ms));
  s.history.maybe(s.request_x, x_sent, monotonic_ns());
  CHECK(find_lock(s.lab.locks(s.ns), got_a.grant.id));  // the release has not arrived

  waiter_b.join();
  INFO("B: " << waiter_b.error);
  REQUIRE(waiter_b.result.granted());
  const Grant& b_grant = waiter_b.result.grant;
  CHECK(b_grant.fence > got_a.grant.fence);
  CHECK(waiter_b.answered >= sent_a + ms_to_ns(s.request_a.ttl));  // not before A's lease could end

  s.lab.link_a.heal();
  const std::int64_t x_retry = monotonic_ns();
  const AcquireResult x = answer(s.lab.a_ns, [&] { return s.a2->acquire(s.request_x); });
  const std::int64_t x_from = monotonic_ns();
  REQUIRE(x.granted());
  after_heal(s, stale, b_grant, x.grant);
  std::cout << fmt::format(
      "partition, PostgreSQL calls in flight: command timeout {} ms; release failed after {} ms, acquire after {} ms "
      "(effect unknown); B granted {} ms after A's grant (lease {} ms); the cut-off sessions ended {} ms after the "
      "heal\n",
      kTimeoutA.count(), release_ms, acquire_ms, (waiter_b.answered - from_a) / 1000000, s.request_a.ttl.count(),
      (monotonic_ns() - x_retry) / 1000000);
  const std::int64_t released = monotonic_ns();
  CHECK(answer(s.lab.a_ns, [&] { return s.a2->release(s.ns, x.grant.id, x.grant.token); }));
  CHECK(answer(s.lab.b_ns, [&] { return s.b->release(s.ns, b_grant.id, b_grant.token); }));

  s.history.hold(s.request_a, got_a.grant, sent_a, from_a, release_sent);
  s.history.hold(s.request_x, x.grant, x_sent, x_from, released);
  s.history.hold(s.request_b, b_grant, waiter_b.sent, waiter_b.answered, released);
  std::string verdict;
  const int status = s.history.check(verdict);
  INFO(verdict);
  CHECK(status == 0);
}

// ---------------------------------------------------------------------------
// A grant whose commit is in flight when the link goes.

namespace {

struct CommitCut {
  PostgresLab lab;
  const std::string ns = unique_namespace("part-pg-commit");
  std::unique_ptr<LockEngine> a = lab.engine_a(kTimeoutA), b = lab.engine_b();
  const ScratchDir scratch{"partition"};
  History history{scratch, "pg_commit.log"};
  LockRequest request_a = keyed(LockRequest{ns, "A", "delete_folder", {{"target", "/p/A"}}, 30000ms});
  LockRequest request_b{ns, "B", "delete_folder", {{"target", "/p/A"}}, 10000ms, 20000ms};

  static LockRequest keyed(LockRequest r) {
    r.idempotency_key = "partition-commit-1";
    return r;
  }
};

}  // namespace

TEST_CASE("partition: a PostgreSQL grant committed while its reply is lost holds off others and is found by its key",
          "[partition][postgres]") {
  CommitCut s;
  INFO("history in " << s.history.path());
  s.lab.link_a.drop_arriving_at_a();  // requests arrive, replies are lost
  const std::int64_t sent_a = monotonic_ns();
  std::int64_t took = 0;
  CHECK(fails_in_flight(
      s.lab.a_ns, [&] { return s.a->acquire(s.request_a); }, took));
  s.history.maybe(s.request_a, sent_a, monotonic_ns());
  // The server committed the grant that A was not told about.
  const std::vector<LockInfo> committed = s.lab.locks(s.ns);
  REQUIRE(committed.size() == 1);
  CHECK(committed[0].owner == "A");
  LockRequest now_b = s.request_b;
  now_b.wait = 0ms;
  const AcquireResult refused = inside(s.lab.b_ns, [&] { return s.b->acquire(now_b); });
  REQUIRE_FALSE(refused.granted());
  CHECK(refused.conflict.id == committed[0].id);
  Attempt waiter_b(s.lab.b_ns, *s.b, s.request_b);
  REQUIRE(until_waiting(s.ns, "B"));  // refused by A's committed grant

  s.lab.link_a.heal();
  const std::int64_t retry_sent = monotonic_ns();
  const AcquireResult again = answer(s.lab.a_ns, [&] { return s.a->acquire(s.request_a); });
  const std::int64_t from_a = monotonic_ns();
  REQUIRE(again.granted());
  CHECK(again.grant.id == committed[0].id);  // that very lock, not a new one
  CHECK(again.grant.fence == committed[0].fence);
  const std::vector<LockInfo> before_release = s.lab.locks(s.ns);  // B still waits
  REQUIRE(before_release.size() == 1);
  CHECK(before_release[0].id == again.grant.id);
  const std::int64_t released_a = monotonic_ns();
  CHECK(answer(s.lab.a_ns, [&] { return s.a->release(s.ns, again.grant.id, again.grant.token); }));
  waiter_b.join();
  INFO("B: " << waiter_b.error);
  REQUIRE(waiter_b.result.granted());
  CHECK(waiter_b.answered > released_a);
  CHECK(waiter_b.result.grant.fence > again.grant.fence);
  std::cout << fmt::format(
      "partition, PostgreSQL commit in flight: acquire failed after {} ms (effect unknown) with its grant committed; "
      "the retry with its key got lock {} back {} ms after the heal\n",
      took, again.grant.id, (from_a - retry_sent) / 1000000);

  const std::int64_t released_b = monotonic_ns();
  CHECK(answer(s.lab.b_ns, [&] { return s.b->release(s.ns, waiter_b.result.grant.id, waiter_b.result.grant.token); }));
  s.history.hold(s.request_a, again.grant, sent_a, from_a, released_a);
  s.history.hold(s.request_b, waiter_b.result.grant, waiter_b.sent, waiter_b.answered, released_b);
  std::string verdict;
  const int status = s.history.check(verdict);
  INFO(verdict);
  CHECK(status == 0);
}
