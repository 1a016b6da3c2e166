// A Redis Cluster master on the minority side of a partition (issue 37), in
// network namespaces joined by one switch (support/netns.hpp, Switch):
//
//   six nodes (169.254.11.1-6, three masters and their replicas)  A (.7)  B (.8)
//
// The partition puts the master M that serves the test's namespace, and
// instance A, on one side; the other two masters, every replica (M's among
// them) and instance B on the other (nftables drops on both sides, silent).
// After cluster-node-timeout (2 s) the majority fails M over to its replica;
// M, seeing no majority of masters for as long, refuses every command
// (CLUSTERDOWN). Between the cut and that moment M still acknowledges writes
// that its replica never gets. When the partition heals, M rejoins as a
// replica of the new master and drops what it took alone
// (docs/operations.md#failover):
//   - without WAIT (RedisOptions::replicas = 0) a lock A is granted in that
//     window is granted again to B by the new master: the documented limit,
//     shown by the checker finding the two holders;
//   - with replicas = 1 nothing M acknowledges alone counts: a grant fails
//     ("not replicated") and a lease A keeps is not extended, so A's keeper
//     reports it lost before B, on the new master, gets it. No two holders
//     across the partition and its healing (the checker).
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

using namespace pathlock;
using namespace std::chrono_literals;
using namespace pathlock::test;

namespace {

constexpr int kNodes = 6;

// The cluster and the two instances; see the file comment.
struct ClusterLab {
  std::vector<std::unique_ptr<NetworkNamespace>> node_ns = make_namespaces();
  NetworkNamespace a_ns{"a"}, b_ns{"b"};
  Switch net{11};
  std::vector<std::string> node_at = attach_nodes();
  const std::string a_at = net.attach(a_ns, 7), b_at = net.attach(b_ns, 8);
  std::vector<std::unique_ptr<RedisServer>> nodes = start_nodes();

  ClusterLab() { create(); }

  static std::vector<std::unique_ptr<NetworkNamespace>> make_namespaces() {
    std::vector<std::unique_ptr<NetworkNamespace>> out;
    for (int i = 0; i < kNodes; ++i) out.push_back(std::make_unique<NetworkNamespace>(fmt::format("node{}", i)));
    return out;
  }
  std::vector<std::string> attach_nodes() {
    std::vector<std::string> out;
    for (int i = 0; i < kNodes; ++i) out.push_back(net.attach(*node_ns[i], i + 1));
    return out;
  }
  std::vector<std::unique_ptr<RedisServer>> start_nodes() const {
    std::vector<std::unique_ptr<RedisServer>> out;
    for (int i = 0; i < kNodes; ++i) {
      const std::vector<std::string> args{"--cluster-enabled", "yes", "--cluster-node-timeout", "2000",
                                          "--cluster-config-file", "nodes.conf", "--cluster-announce-ip", node_at[i],
                                          "--repl-diskless-sync-delay", "0", "--bind", "127.0.0.1", node_at[i],
                                          "--protected-mode", "no"};
      out.push_back(inside(*node_ns[i], [&] { return std::make_unique<RedisServer>(args); }));
    }
    return out;
  }
  // redis-cli --cluster create, run in node 0's namespace (it reaches all).
  void create() const {
    std::vector<std::string> argv{"redis-cli", "--cluster", "create"};
    for (int i = 0; i < kNodes; ++i) argv.push_back(fmt::format("{}:{}", node_at[i], nodes[i]->port()));
    argv.insert(argv.end(), {"--cluster-replicas", "1", "--cluster-yes"});
    node_ns[0]->run(argv);
    devtools::wait_for("ClusterLab", "every node to report cluster_state:ok", [&] {
      for (int i = 0; i < kNodes; ++i)
        if (ask(i, {"CLUSTER", "INFO"}).str.find("cluster_state:ok") == std::string::npos) return false;
      return true;
    });
    devtools::wait_for("ClusterLab", "every slot range to list its master and a replica in sync", [&] {
      for (const RedisReply& range : ask(0, {"CLUSTER", "SLOTS"}).elements) {
        if (range.elements.size() != 4) return false;
        const int master = index_of(range.elements[2].elements[0].str);
        if (ask(master, {"INFO", "replication"}).str.find("state=online") == std::string::npos) return false;
      }
      return true;
    });
  }
  RedisReply ask(int i, const std::vector<std::string>& command) const {
    return inside(*node_ns[i], [&] { return nodes[i]->command(command); });
  }
  int index_of(const std::string& address) const {
    for (int i = 0; i < kNodes; ++i)
      if (node_at[i] == address) return i;
    return -1;
  }
  // The master that node `asked` names for the slot of namespace `ns`, and
  // its replicas, as node indexes.
  std::vector<int> serving(int asked, const std::string& ns) const {
    const long long slot = ask(asked, {"CLUSTER", "KEYSLOT", "pl:{" + ns + "}:meta"}).integer;
    for (const RedisReply& range : ask(asked, {"CLUSTER", "SLOTS"}).elements) {
      if (range.elements.size() < 3 || slot < range.elements[0].integer || slot > range.elements[1].integer) continue;
      std::vector<int> out;
      for (std::size_t n = 2; n < range.elements.size(); ++n) out.push_back(index_of(range.elements[n].elements[0].str));
      return out;
    }
    return {};
  }
  std::unique_ptr<LockEngine> engine_in(const NetworkNamespace& ns, int replicas) const {
    RedisOptions options;
    options.url.clear();
    for (int i = 0; i < kNodes; ++i)
      options.url += fmt::format("{}{}:{}", i == 0 ? "redis://" : ",", node_at[i], nodes[i]->port());
    options.replicas = replicas;
    options.command_timeout = 1000ms;
    return inside(ns, [&] { return make_redis_engine(options); });
  }
};

// The partition: master `m` and A against the rest. Healed when destroyed.
struct MinorityCut {
  MinorityCut(const ClusterLab& lab, int m) {
    std::vector<std::string> minority{lab.node_at[m], lab.a_at}, majority{lab.b_at};
    for (int i = 0; i < kNodes; ++i)
      if (i != m) majority.push_back(lab.node_at[i]);
    drops.push_back(std::make_unique<Drop>(*lab.node_ns[m], majority));
    drops.push_back(std::make_unique<Drop>(lab.a_ns, majority));
    for (int i = 0; i < kNodes; ++i)
      if (i != m) drops.push_back(std::make_unique<Drop>(*lab.node_ns[i], minority));
    drops.push_back(std::make_unique<Drop>(lab.b_ns, minority));
  }
  std::vector<std::unique_ptr<Drop>> drops;
};

// Waits until node `asked` (of the majority) names `replica` as the master of ns's slot.
bool promoted(const ClusterLab& lab, int asked, const std::string& ns, int replica) {
  return until(
      [&] {
        const std::vector<int> s = lab.serving(asked, ns);
        return !s.empty() && s[0] == replica;
      },
      30s);
}

// Waits until the old master `m` follows the new one, in sync. A look that
// fails while it changes role (its connections are reset as it turns into a
// replica) looks again.
bool rejoined(const ClusterLab& lab, int m) {
  return until(
      [&] {
        std::string info;
        try {
          info = lab.ask(m, {"INFO", "replication"}).str;
        } catch (const std::runtime_error&) {
          return false;
        }
        return info.find("role:slave") != std::string::npos && info.find("master_link_status:up") != std::string::npos;
      },
      30s);
}

// The test's namespace, its master and that master's replica, and a node of
// the majority other than the replica to ask.
struct Placement {
  std::string ns;
  int master = -1, replica = -1, other = -1;
};

Placement place(const ClusterLab& lab, const std::string& tag) {
  Placement p{unique_namespace(tag)};
  const std::vector<int> s = lab.serving(0, p.ns);
  REQUIRE(s.size() == 2);
  p.master = s[0];
  p.replica = s[1];
  for (int i = 0; i < kNodes && p.other < 0; ++i)
    if (i != p.master && i != p.replica) p.other = i;
  return p;
}

}  // namespace

TEST_CASE("partition: a Cluster master on the minority side grants a lock its replacement grants too, without WAIT",
          "[partition][cluster]") {
  ClusterLab lab;
  const Placement at = place(lab, "part-cluster");
  const auto a = lab.engine_in(lab.a_ns, 0), b = lab.engine_in(lab.b_ns, 0);
  const ScratchDir scratch{"partition"};
  History history{scratch, "cluster_limit.log"};
  const LockRequest request_a{at.ns, "A", "delete_folder", {{"target", "/p/A"}}, 20000ms};
  const LockRequest request_b{at.ns, "B", "delete_folder", {{"target", "/p/A"}}, 20000ms};
  answer(lab.a_ns, [&] { return a->list(at.ns); });  // A's engine knows the slots
  std::optional<MinorityCut> cut(std::in_place, lab, at.master);
  const std::int64_t sent_a = monotonic_ns();
  const AcquireResult got_a = inside(lab.a_ns, [&] { return a->acquire(request_a); });  // within node-timeout
  const std::int64_t from_a = monotonic_ns();
  REQUIRE(got_a.granted());
  REQUIRE(promoted(lab, at.other, at.ns, at.replica));
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
  REQUIRE(rejoined(lab, at.master));
  CHECK_FALSE(answer(lab.a_ns, [&] { return a->is_held(at.ns, got_a.grant.id, got_a.grant.token); }));
  CHECK(answer(lab.b_ns, [&] { return b->is_held(at.ns, got_b.grant.id, got_b.grant.token); }));
  std::cout << "partition, Cluster master on the minority side, no WAIT: both sides granted delete_folder /p/A; the "
               "checker: "
            << verdict.substr(0, verdict.find('\n')) << "\n";
}

TEST_CASE("partition: with WAIT for a replica, a Cluster master on the minority side grants and renews nothing alone",
          "[partition][cluster]") {
  ClusterLab lab;
  const Placement at = place(lab, "part-cluster-wait");
  const auto a = lab.engine_in(lab.a_ns, 1), b = lab.engine_in(lab.b_ns, 1);
  const auto keeper = inside(lab.a_ns, [&] { return std::make_unique<LeaseKeeper>(*a); });
  const ScratchDir scratch{"partition"};
  History history{scratch, "cluster_wait.log"};
  const LockRequest request_a{at.ns, "A", "delete_folder", {{"target", "/p/A"}}, 3000ms};
  const LockRequest request_b{at.ns, "B", "delete_folder", {{"target", "/p/A"}}, 20000ms};
  const std::int64_t sent_a = monotonic_ns();
  const AcquireResult got_a = answer(lab.a_ns, [&] { return a->acquire(request_a); });
  const std::int64_t from_a = monotonic_ns();
  REQUIRE(got_a.granted());
  Moment lost;
  const auto lease = keeper->keep(at.ns, got_a.grant, request_a.ttl, [&](const Lease&) { lost.mark(); });
  REQUIRE(until([&] { return lease->renewals() >= 1; }));

  std::optional<MinorityCut> cut(std::in_place, lab, at.master);
  const LockRequest other{at.ns, "A", "upload", {{"target", "/q/x"}}, 20000ms};
  CHECK_THROWS_AS(inside(lab.a_ns, [&] { return a->acquire(other); }), BackendError);  // not replicated
  REQUIRE(lost.wait(15s));  // the lone master's renewals do not count
  REQUIRE(promoted(lab, at.other, at.ns, at.replica));
  cut.reset();
  REQUIRE(rejoined(lab, at.master));
  check_b_after_lost_lease(*a, lab.a_ns, *b, lab.b_ns, FirstHold{request_a, got_a.grant, sent_a, from_a}, lost, request_b,
                           history, "partition, Cluster master on the minority side, WAIT 1");
}
