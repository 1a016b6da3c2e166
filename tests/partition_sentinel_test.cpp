// A Redis Sentinel deployment whose master is cut off (issue 37), in
// network namespaces joined by one switch (support/netns.hpp, Switch):
//
//   master (169.254.10.1)  replica (.2)  three sentinels (.3)  A (.4)  B (.5)
//
// The partition puts the master and instance A on one side, the replica, the
// sentinels (a quorum) and instance B on the other (nftables drops on both
// sides, silent). The sentinels promote the replica after
// down-after-milliseconds (1 s); A still reaches the old master, which does
// not know it was replaced. When the partition heals, the sentinels turn
// the old master into a replica of the new one, which drops what it took
// alone. Replication is asynchronous, so what the lone master acknowledged
// is lost (docs/operations.md#failover):
//   - without WAIT (RedisOptions::replicas = 0, the default) A and B are both
//     granted the same lock, one on each side: the documented limit, shown
//     by the checker finding the two holders;
//   - with replicas = 1 a grant is returned only once a replica has it: the
//     lone master's grants are given back and fail ("not replicated"), and
//     a lock held and kept alive by A before the cut is not extended by the
//     renewals the lone master acknowledges alone, so A's keeper reports it
//     lost before B, on the new master, gets it. No two holders across the
//     partition and its healing (the checker).
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <iostream>
#include <optional>
#include <pathlock/engine.hpp>
#include <pathlock/keeper.hpp>
#include <pathlock/redis.hpp>

#include "support/backends.hpp"
#include "support/history.hpp"
#include "support/netns.hpp"
#include "support/partition.hpp"
#include "support/partition_wait.hpp"
#include "support/process.hpp"
#include "support/redis_server.hpp"
#include "support/waiting_probe.hpp"

using namespace pathlock;
using namespace std::chrono_literals;
using namespace pathlock::test;

namespace {

constexpr const char* kMaster = "pathlock";

// The deployment and the two instances; see the file comment. Servers go
// first, then the switch and the namespaces.
struct SentinelLab {
  NetworkNamespace master_ns{"master"}, replica_ns{"replica"}, sentinel_ns{"sentinels"}, a_ns{"a"}, b_ns{"b"};
  Switch net{10};
  const std::string master_at = net.attach(master_ns, 1), replica_at = net.attach(replica_ns, 2),
                    sentinel_at = net.attach(sentinel_ns, 3), a_at = net.attach(a_ns, 4), b_at = net.attach(b_ns, 5);
  std::unique_ptr<RedisServer> master = server_in(master_ns, master_at, {"--repl-diskless-sync-delay", "0"});
  std::unique_ptr<RedisServer> replica =
      server_in(replica_ns, replica_at,
                {"--replicaof", master_at, std::to_string(master->port()), "--repl-diskless-sync-delay", "0"});
  std::vector<std::unique_ptr<RedisServer>> sentinels = start_sentinels();

  SentinelLab() { wait_until_ready(); }

  static std::unique_ptr<RedisServer> server_in(const NetworkNamespace& ns, const std::string& address,
                                                std::vector<std::string> args, const std::string& config = "") {
    args.insert(args.end(), {"--bind", "127.0.0.1", address, "--protected-mode", "no"});
    return inside(ns, [&] { return std::make_unique<RedisServer>(args, config); });
  }
  std::vector<std::unique_ptr<RedisServer>> start_sentinels() const {
    const std::string config = fmt::format(
        "sentinel monitor {0} {1} {2} 2\nsentinel down-after-milliseconds {0} 1000\n"
        "sentinel failover-timeout {0} 3000\nsentinel parallel-syncs {0} 1\n",
        kMaster, master_at, master->port());
    std::vector<std::unique_ptr<RedisServer>> out;
    for (int i = 0; i < 3; ++i) out.push_back(server_in(sentinel_ns, sentinel_at, {"--sentinel"}, config));
    return out;
  }
  // What sentinel 0 says (over its namespace's loopback).
  RedisReply ask_sentinel(const std::vector<std::string>& command) const {
    return inside(sentinel_ns, [&] { return sentinels[0]->command(command); });
  }
  int known(const RedisServer& sentinel, const char* what) const {
    return static_cast<int>(inside(sentinel_ns, [&] {
                              return sentinel.command({"SENTINEL", what, kMaster});
                            }).elements.size());
  }
  void wait_until_ready() const {
    devtools::wait_for("SentinelLab", "the replica to sync", [&] {
      return inside(master_ns, [&] {
               return master->command({"INFO", "replication"}).str;
             }).find("state=online") != std::string::npos;
    });
    devtools::wait_for("SentinelLab", "the sentinels to know each other and the replica", [&] {
      for (const auto& s : sentinels)
        if (known(*s, "replicas") != 1 || known(*s, "sentinels") != 2) return false;
      return true;
    });
  }
  // The address the sentinels give for the master now.
  std::string named_master() const {
    const RedisReply r = ask_sentinel({"SENTINEL", "get-master-addr-by-name", kMaster});
    return r.elements.empty() ? "" : r.elements[0].str;
  }
  std::string url() const {
    std::string seeds;
    for (const auto& s : sentinels) seeds += fmt::format("{}{}:{}", seeds.empty() ? "" : ",", sentinel_at, s->port());
    return fmt::format("redis-sentinel://{}#{}", seeds, kMaster);
  }
  std::unique_ptr<LockEngine> engine_in(const NetworkNamespace& ns, int replicas) const {
    RedisOptions options;
    options.url = url();
    options.replicas = replicas;
    options.command_timeout = 1000ms;
    return inside(ns, [&] { return make_redis_engine(options); });
  }
};

// The partition: the master and A against the rest. Healed when destroyed.
struct MasterCutOff {
  explicit MasterCutOff(const SentinelLab& lab) {
    const std::vector<std::string> minority{lab.master_at, lab.a_at},
        majority{lab.replica_at, lab.sentinel_at, lab.b_at};
    for (const NetworkNamespace* ns : {&lab.master_ns, &lab.a_ns})
      drops.push_back(std::make_unique<Drop>(*ns, majority));
    for (const NetworkNamespace* ns : {&lab.replica_ns, &lab.sentinel_ns, &lab.b_ns})
      drops.push_back(std::make_unique<Drop>(*ns, minority));
  }
  std::vector<std::unique_ptr<Drop>> drops;
};

}  // namespace

namespace {

// Waits until the sentinels name the replica as the master and it says so.
bool replica_promoted(const SentinelLab& lab) {
  return until(
      [&] {
        if (lab.named_master() != lab.replica_at) return false;
        const RedisReply role = inside(lab.replica_ns, [&] { return lab.replica->command({"ROLE"}); });
        return !role.elements.empty() && role.elements[0].str == "master";
      },
      30s);
}

// Waits until the old master follows the new one, in sync. A look that
// fails while it changes role (its connections are reset as it turns into a
// replica: "Connection reset by peer", once in ten runs) looks again.
bool old_master_rejoined(const SentinelLab& lab) {
  return until(
      [&] {
        std::string info;
        try {
          info = inside(lab.master_ns, [&] { return lab.master->command({"INFO", "replication"}).str; });
        } catch (const std::runtime_error&) {
          return false;
        }
        return info.find("role:slave") != std::string::npos && info.find("master_link_status:up") != std::string::npos;
      },
      30s);
}

}  // namespace

TEST_CASE("partition: a Sentinel master cut off grants a lock its replacement grants too, without WAIT (the limit)",
          "[partition][sentinel]") {
  SentinelLab lab;
  const std::string ns = unique_namespace("part-sentinel");
  const auto a = lab.engine_in(lab.a_ns, 0), b = lab.engine_in(lab.b_ns, 0);
  const ScratchDir scratch{"partition"};
  History history{scratch, "sentinel_limit.log"};
  const LockRequest request_a{ns, "A", "delete_folder", {{"target", "/p/A"}}, 20000ms};
  const LockRequest request_b{ns, "B", "delete_folder", {{"target", "/p/A"}}, 20000ms};
  std::optional<MasterCutOff> cut(lab);
  REQUIRE(replica_promoted(lab));
  const std::int64_t sent_a = monotonic_ns();
  const AcquireResult got_a = inside(lab.a_ns, [&] { return a->acquire(request_a); });  // the lone master
  const std::int64_t from_a = monotonic_ns();
  REQUIRE(got_a.granted());
  answer(lab.b_ns, [&] { return b->list(ns); });  // until B's engine follows the sentinels to the new master
  const std::int64_t sent_b = monotonic_ns();
  const AcquireResult got_b = answer(lab.b_ns, [&] { return b->acquire(request_b); });
  const std::int64_t from_b = monotonic_ns();
  REQUIRE(got_b.granted());  // the same lock, on the other side
  history.hold(request_a, got_a.grant, sent_a, from_a, monotonic_ns());
  history.hold(request_b, got_b.grant, sent_b, from_b, monotonic_ns());
  std::string verdict;
  const int status = history.check(verdict);
  INFO(verdict);
  CHECK(status == 1);  // the checker sees the two holders
  CHECK(verdict.find("VIOLATION") != std::string::npos);

  cut.reset();  // heal: the old master becomes a replica and drops A's grant
  REQUIRE(old_master_rejoined(lab));
  CHECK_FALSE(answer(lab.a_ns, [&] { return a->is_held(ns, got_a.grant.id, got_a.grant.token); }));
  CHECK(answer(lab.b_ns, [&] { return b->is_held(ns, got_b.grant.id, got_b.grant.token); }));
  std::cout << "partition, Sentinel master cut off, no WAIT: both sides granted delete_folder /p/A; the checker: "
            << verdict.substr(0, verdict.find('\n')) << "\n";
}

TEST_CASE("partition: with WAIT for a replica, a Sentinel master cut off grants and renews nothing alone",
          "[partition][sentinel]") {
  SentinelLab lab;
  const std::string ns = unique_namespace("part-sentinel-wait");
  const auto a = lab.engine_in(lab.a_ns, 1), b = lab.engine_in(lab.b_ns, 1);
  const auto keeper = inside(lab.a_ns, [&] { return std::make_unique<LeaseKeeper>(*a); });
  const ScratchDir scratch{"partition"};
  History history{scratch, "sentinel_wait.log"};
  const LockRequest request_a{ns, "A", "delete_folder", {{"target", "/p/A"}}, 3000ms};
  const LockRequest request_b{ns, "B", "delete_folder", {{"target", "/p/A"}}, 20000ms};
  const std::int64_t sent_a = monotonic_ns();
  const AcquireResult got_a = inside(lab.a_ns, [&] { return a->acquire(request_a); });
  const std::int64_t from_a = monotonic_ns();
  REQUIRE(got_a.granted());
  Moment lost;
  const auto lease = keeper->keep(ns, got_a.grant, request_a.ttl, [&](const Lease&) { lost.mark(); });
  REQUIRE(until([&] { return lease->renewals() >= 1; }));

  std::optional<MasterCutOff> cut(lab);
  const LockRequest other{ns, "A", "upload", {{"target", "/q/x"}}, 20000ms};
  CHECK_THROWS_AS(inside(lab.a_ns, [&] { return a->acquire(other); }), BackendError);  // not replicated
  REQUIRE(lost.wait(15s));  // the lone master's renewals do not count
  REQUIRE(replica_promoted(lab));
  cut.reset();
  REQUIRE(old_master_rejoined(lab));
  check_b_after_lost_lease(*a, lab.a_ns, *b, lab.b_ns, FirstHold{request_a, got_a.grant, sent_a, from_a}, lost, request_b,
                           history, "partition, Sentinel master cut off, WAIT 1");
}
