// Resharding a namespace's slot while its locks are held and requests keep
// arriving, on a local Redis Cluster (support/redis_server.hpp).
//
// The hazard: Redis protects, during a slot migration, only the keys a
// script or function declares. A call that reached the new node (after ASK)
// while some of the namespace's keys were still on the old one would see
// part of the index and could grant a lock that conflicts with one it
// cannot see. Every pathlock function declares every key it touches, so
// Redis answers ASK or TRYAGAIN until the keys are together again, and the
// client retries within the command timeout (docs/operations.md, Resharding).
#include "support/backends.hpp"
#include "support/process.hpp"
#include "support/redis_server.hpp"

#include <pathlock/redis.hpp>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <atomic>
#include <fstream>
#include <thread>

using namespace pathlock;
using namespace std::chrono_literals;
using test::shared_cluster;

namespace {

std::unique_ptr<LockEngine> cluster_engine(Millis command_timeout) {
  RedisOptions options;
  options.url = shared_cluster().url();
  options.command_timeout = command_timeout;
  return make_redis_engine(options);
}

// A master other than the one serving `slot`.
std::size_t other_master(test::ClusterServers& cluster, int slot) {
  const std::size_t from = cluster.master_of(slot);
  for (const std::size_t m : cluster.masters())
    if (m != from) return m;
  FAIL("no second master");
  return from;
}

}  // namespace

TEST_CASE("a slot moved key by key under load never lets a conflicting request in", "[cluster][reshard]") {
  test::ClusterServers& cluster = shared_cluster();
  auto engine = cluster_engine(5000ms);
  const std::string ns = test::unique_namespace("reshard");
  // Held locks spread over the tree, so the namespace has many keys' worth
  // of index and lock records to move.
  std::vector<Grant> held;
  for (int i = 0; i < 12; ++i) {
    const auto g = engine->acquire(
        LockRequest{ns, "holder", "upload", {{"target", fmt::format("/p/d{}/f{}", i % 4, i)}}, 120000ms, 0ms});
    REQUIRE(g.granted());
    held.push_back(g.grant);
  }
  const auto moving = engine->acquire(
      LockRequest{ns, "mover", "move_folder", {{"src", "/m/A"}, {"dst", "/m/B"}}, 120000ms, 0ms});
  REQUIRE(moving.granted());

  const int slot = cluster.keyslot("pl:{" + ns + "}:meta");
  const std::size_t to = other_master(cluster, slot);
  std::atomic<bool> done{false};
  std::atomic<int> wrong_grants{0}, refusals{0}, errors{0}, free_grants{0};
  // Requests that every held lock refuses, and ones nothing refuses, from
  // two threads with short command timeouts: during the move they may fail
  // (BackendError) but must never be granted wrongly.
  auto load = [&](int seed) {
    auto client = cluster_engine(300ms);
    for (int i = 0; !done; ++i) {
      const int d = (i + seed) % 4;
      try {
        const auto conflicting = client->acquire(
            LockRequest{ns, "intruder", "delete_folder", {{"target", fmt::format("/p/d{}", d)}}, 60000ms, 0ms});
        if (conflicting.granted()) ++wrong_grants;
        else ++refusals;
        const auto into_move = client->acquire(
            LockRequest{ns, "intruder", "upload", {{"target", "/m/A/x"}}, 60000ms, 0ms});
        if (into_move.granted()) ++wrong_grants;
        else ++refusals;
        const auto elsewhere = client->acquire(
            LockRequest{ns, "other", "upload", {{"target", fmt::format("/free/{}/{}", seed, i)}}, 60000ms, 0ms});
        if (elsewhere.granted()) {
          ++free_grants;
          client->release(ns, elsewhere.grant.id, elsewhere.grant.token);
        }
      } catch (const BackendError&) {
        ++errors;  // the slot is in motion: Redis said TRYAGAIN or ASK past our timeout
      }
    }
  };
  std::size_t moved = 0;
  {
    std::jthread a([&] { load(1); }), b([&] { load(2); });
    struct Stop {
      std::atomic<bool>& done;
      ~Stop() { done = true; }  // before the threads join, also on a failure
    } stop{done};
    // Answers so far, to wait on: each thread's requests have begun, and
    // more arrive after the move.
    const auto answers = [&] { return refusals + errors + free_grants + wrong_grants; };
    REQUIRE(devtools::until([&] { return answers() >= 6; }));
    cluster.begin_migration(slot, to);
    for (std::size_t n; (n = cluster.migrate_keys(slot, 1)) > 0;) {
      moved += n;
      std::this_thread::sleep_for(40ms);  // the pace of the move: requests arrive between every two keys
    }
    cluster.finish_migration(slot);
    const int after_move = answers();
    REQUIRE(devtools::until([&] { return answers() >= after_move + 6; }));
  }
  INFO(moved << " keys moved; " << refusals << " refusals, " << errors << " errors, " << free_grants
             << " grants elsewhere");
  CHECK(moved >= 2);
  CHECK(wrong_grants == 0);
  CHECK(refusals > 0);
  CHECK(free_grants > 0);
  CHECK(cluster.master_of(slot) == to);

  // After the move every lock is still there and still refuses.
  CHECK_FALSE(engine->acquire(LockRequest{ns, "intruder", "delete_folder", {{"target", "/p"}}, 1000ms, 0ms}).granted());
  // (Under /free there may be locks whose grant reply a load thread lost to
  // its short timeout; they are not the test's business.)
  CHECK(engine->list(ns, "/p").size() == held.size());
  CHECK(engine->list(ns, "/m").size() == 1);
  for (const Grant& g : held) CHECK(engine->release(ns, g.id, g.token));
  CHECK(engine->release(ns, moving.grant.id, moving.grant.token));
  CHECK(engine->list(ns, "/p").empty());
  CHECK(engine->list(ns, "/m").empty());
}

TEST_CASE("multi-process stress across a reshard: the history checker finds no violation", "[cluster][reshard][stress]") {
  test::ClusterServers& cluster = shared_cluster();
  const std::string ns = test::unique_namespace("reshard-stress");
  const test::ScratchDir scratch("reshard");
  INFO("logs in " << scratch.dir());
  std::vector<std::string> logs;
  std::vector<pid_t> pids;
  for (int p = 0; p < 3; ++p) {
    logs.push_back(scratch.path(fmt::format("reshard_stress_{}.log", p)));
    pids.push_back(test::spawn({PATHLOCK_STRESS, "run", "--backend", "redis", "--redis", cluster.url(), "--namespace",
                                ns, "--threads", "3", "--duration", "4000", "--ops", "100000", "--seed",
                                std::to_string(p + 7), "--command-timeout", "1000", "--max-backend-errors", "100000",
                                "--log", logs.back()}));
  }
  // Calls the cluster has run (FCALL, every node), to wait on: the
  // processes have started, and they go on after each move.
  const auto fcalls = [&] {
    long long sum = 0;
    for (std::size_t i = 0; i < cluster.size(); ++i) sum += test::command_calls(cluster.node(i), "fcall");
    return sum;
  };
  const long long before = fcalls();
  REQUIRE(devtools::until([&] { return fcalls() >= before + 30; }));
  // Move the namespace's slot back and forth, key by key, while they run.
  const int slot = cluster.keyslot("pl:{" + ns + "}:meta");
  for (int round = 0; round < 2; ++round) {
    cluster.begin_migration(slot, other_master(cluster, slot));
    while (cluster.migrate_keys(slot, 1) > 0) std::this_thread::sleep_for(20ms);  // the pace of the move
    cluster.finish_migration(slot);
    const long long after_move = fcalls();
    REQUIRE(devtools::until([&] { return fcalls() >= after_move + 30; }));
  }
  for (const pid_t pid : pids) CHECK(test::wait_exit(pid) == 0);
  std::vector<std::string> check{PATHLOCK_STRESS, "check"};
  check.insert(check.end(), logs.begin(), logs.end());
  CHECK(test::wait_exit(test::spawn(check)) == 0);
}
