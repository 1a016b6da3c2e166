// The Redis client and engine on a real Sentinel deployment (master,
// replica, 3 sentinels; support/redis_server.hpp: shared_sentinel()):
// discovery of the master by name, a SENTINEL FAILOVER with calls
// continuing on the new master, and a crashed master that the sentinels
// replace by its replica.
#include "support/background.hpp"
#include "support/backends.hpp"
#include "support/redis_server.hpp"

#include "redis/redis_client.hpp"
#include "redis/sentinel.hpp"

#include <pathlock/engine.hpp>
#include <pathlock/redis.hpp>

#include <catch2/catch.hpp>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <thread>

using namespace pathlock;
using namespace std::chrono_literals;
using namespace pathlock::test;  // servers, engines and key helpers of support/

TEST_CASE("the sentinels name the master, and an unknown name is a BackendError", "[sentinel]") {
  SentinelServers& deployment = shared_sentinel();
  redis::RedisClient client(redis::ClientOptions{redis::parse_redis_url(deployment.url())});
  CHECK(client.mode() == redis::RedisClient::Mode::sentinel);
  CHECK(client.node_for("x").port == deployment.master().port());

  const std::string ns = test::unique_namespace("sentinel");
  auto engine = redis_engine(deployment.url());
  const AcquireResult a = engine->acquire(one_target_request(ns, "alice", "upload", "/p/A/f"));
  REQUIRE(a.granted());
  CHECK(deployment.master().command({"EXISTS", prefix_of(ns) + "meta"}).integer == 1);
  CHECK(engine->release(ns, a.grant.id, a.grant.token));

  // WAIT: the one replica acknowledges.
  redis::ClientOptions with_wait{redis::parse_redis_url(deployment.url())};
  with_wait.replicas = 1;
  redis::RedisClient waiting(with_wait);
  waiting.load_library(test::kSetLibraryName, test::kSetLibrary);
  int acked = -1;
  CHECK(waiting.fcall(test::kSetFunction, {prefix_of(ns) + "x"}, {"1"}, &acked).text() == "OK");
  CHECK(acked == 1);

  const std::string other = deployment.url().substr(0, deployment.url().find('#')) + "#nosuchmaster";
  CHECK_THROWS_WITH(redis_engine(other), Catch::Contains("does not know master 'nosuchmaster'"));
  CHECK_THROWS_AS(redis_engine("redis-sentinel://127.0.0.1:1"), InvalidRequest);  // no master name
}

TEST_CASE("SENTINEL FAILOVER: calls reach the new master, locks and waiters carry on", "[sentinel][failover]") {
  SentinelServers& deployment = shared_sentinel();
  auto engine = redis_engine(deployment.url(), nullptr, 4, 15000ms);
  const std::string ns = test::unique_namespace("sfail");
  const AcquireResult held = engine->acquire(one_target_request(ns, "alice", "delete_folder", "/p/A"));
  REQUIRE(held.granted());
  // Wait until the replica has the lock: a failover keeps what was replicated.
  devtools::until([&] { return deployment.replica().command({"HEXISTS", prefix_of(ns) + "locks", held.grant.id}).integer == 1; });
  REQUIRE(deployment.replica().command({"HEXISTS", prefix_of(ns) + "locks", held.grant.id}).integer == 1);
  const int old_port = deployment.master().port();

  std::atomic<int> calls{0}, errors{0};
  // A client that makes no call meanwhile learns the switch from +switch-master.
  redis::RedisClient idle(redis::ClientOptions{redis::parse_redis_url(deployment.url())});
  REQUIRE(idle.node_for("x").port == old_port);
  auto waiter = std::async(std::launch::async,
                           [&] { return engine->acquire(one_target_request(ns, "w", "upload", "/p/A/x", 20000ms)); });
  {
    Background load([&] {
      try {
        engine->list(ns);
        ++calls;
      } catch (const BackendError&) {
        ++errors;
      }
      std::this_thread::sleep_for(2ms);
    });
    deployment.failover();
    REQUIRE(deployment.master().port() != old_port);
    devtools::until([&] { return idle.node_for("x").port != old_port; }, 10s);
    CHECK(idle.node_for("x").port == deployment.master().port());
    const int after_failover = calls;
    REQUIRE(devtools::until([&] { return calls >= after_failover + 20; }));  // the load goes on on the new master
  }
  CHECK(calls > 0);
  CHECK(errors == 0);

  const std::vector<LockInfo> locks = engine->list(ns);
  REQUIRE(locks.size() == 1);
  CHECK(locks.front().id == held.grant.id);
  CHECK(engine->release(ns, held.grant.id, held.grant.token));
  const AcquireResult got = waiter.get();
  REQUIRE(got.granted());
  CHECK(engine->release(ns, got.grant.id, got.grant.token));
  CHECK(deployment.master().command({"EXISTS", prefix_of(ns) + "meta"}).integer == 1);
  redis::RedisClient client(redis::ClientOptions{redis::parse_redis_url(deployment.url())});
  CHECK(client.node_for("x").port == deployment.master().port());
}

TEST_CASE("a crashed master: the sentinels promote the replica and calls reach it within the command timeout",
          "[sentinel][failover][crash]") {
  SentinelServers deployment;  // private: its master is killed
  auto engine = redis_engine(deployment.url(), nullptr, 4, 20000ms);
  const std::string ns = test::unique_namespace("scrash");
  const AcquireResult held = engine->acquire(one_target_request(ns, "alice", "delete_folder", "/p/A"));
  REQUIRE(held.granted());
  // Only what reached the replica survives the crash (docs/operations.md#failover).
  const auto replicated = [&] {
    return deployment.replica().command({"HEXISTS", prefix_of(ns) + "locks", held.grant.id}).integer == 1;
  };
  devtools::until([&] { return replicated(); });
  REQUIRE(replicated());
  RedisServer& old_master = deployment.master();
  RedisServer& promoted = deployment.replica();
  old_master.kill_hard();
  // No SENTINEL FAILOVER: the sentinels find the master down (1 s), agree
  // and promote the replica. Meanwhile calls fail to connect, ask the
  // sentinels again and retry until the promoted replica answers.
  const std::vector<LockInfo> locks = engine->list(ns);
  REQUIRE(locks.size() == 1);
  CHECK(locks.front().id == held.grant.id);
  CHECK(promoted.command({"ROLE"}).elements.at(0).str == "master");
  const AcquireResult refused = engine->acquire(one_target_request(ns, "bob", "upload", "/p/A/f"));
  CHECK_FALSE(refused.granted());
  CHECK(refused.conflict.id == held.grant.id);
  CHECK(engine->release(ns, held.grant.id, held.grant.token));
  const AcquireResult after = engine->acquire(one_target_request(ns, "bob", "upload", "/p/A/f"));
  REQUIRE(after.granted());
  CHECK(after.grant.fence > held.grant.fence);  // fences go on from the replica's copy
  CHECK(engine->release(ns, after.grant.id, after.grant.token));

  // The old master comes back, and for a while (until the sentinels turn
  // it into a replica, which can take them several seconds) it still calls
  // itself master: calls keep going to the master the sentinels name.
  old_master.restart();
  const AcquireResult again = engine->acquire(one_target_request(ns, "carol", "upload", "/p/A/g"));
  REQUIRE(again.granted());
  CHECK(promoted.command({"HEXISTS", prefix_of(ns) + "locks", again.grant.id}).integer == 1);
  CHECK(engine->release(ns, again.grant.id, again.grant.token));
}

TEST_CASE("replicas = n: a grant returns once n replicas have it - fewer is a BackendError and no lock",
          "[sentinel][replicas]") {
  SentinelServers& sentinel = shared_sentinel();  // one primary, one replica
  const std::string ns = test::unique_namespace("replicated");
  RedisOptions options;
  options.url = sentinel.url();
  options.command_timeout = 3000ms;  // WAIT waits up to half of it (a loaded machine needs room)
  options.replicas = 1;
  // After a failover earlier in the process, the old master may still be
  // syncing as the new replica: wait until the master sees its replica.
  devtools::until([&] {
    const std::string info = sentinel.master().command({"INFO", "replication"}).str;
    return info.find("connected_slaves:1") != std::string::npos && info.find("state=online") != std::string::npos;
  });
  auto engine = make_redis_engine(options);
  const auto got = engine->acquire(one_target_request(ns, "a", "delete_folder", "/p"));
  REQUIRE(got.granted());
  CHECK(engine->release(ns, got.grant.id, got.grant.token));

  options.replicas = 2;  // more than the deployment has
  auto demanding = make_redis_engine(options);
  CHECK_THROWS_WITH(demanding->acquire(one_target_request(ns, "a", "delete_folder", "/p")),
                    Catch::Contains("not replicated") && Catch::Contains("1 of 2") && Catch::Contains("was released"));
  // The grant was given back: nothing refuses a conflicting request.
  auto plain = redis_engine(sentinel.url());
  const auto after = plain->acquire(one_target_request(ns, "b", "upload", "/p/f"));
  CHECK(after.granted());
  CHECK(plain->list(ns).size() == 1);

  options.replicas = -1;
  CHECK_THROWS_AS(make_redis_engine(options), InvalidRequest);
}

TEST_CASE("the switch watcher stops at once while its sentinel does not answer", "[redis][sentinel]") {
  // A "sentinel" that accepts connections and never answers: the watcher's
  // thread blocks in its first PING for the command timeout (a minute).
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(listener >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(listener, 4) == 0);
  socklen_t len = sizeof addr;
  REQUIRE(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  redis::RedisUrl url;
  url.kind = redis::RedisUrl::Kind::sentinel;
  url.nodes = {redis::Endpoint{"127.0.0.1", ntohs(addr.sin_port)}};
  url.host = "127.0.0.1";
  url.port = url.nodes[0].port;
  url.master_name = "silent";
  redis::ConnectionSettings settings;
  settings.connect_timeout = settings.command_timeout = 60000ms;
  std::atomic<int> switches{0};
  int conn = -1;
  {
    redis::SwitchWatcher watcher(url, settings, [&] { ++switches; });
    conn = ::accept(listener, nullptr, nullptr);  // the watcher is connected and waits for its PONG
    REQUIRE(conn >= 0);
  }
  // The destructor has returned while the thread still waits (it would
  // have closed the connection had the destructor waited for it), and it
  // never called on_switch.
  char buffer[256];
  ssize_t got = 0;
  while ((got = ::recv(conn, buffer, sizeof buffer, MSG_DONTWAIT)) > 0) {
  }
  CHECK(got < 0);  // no end of file: the connection is still open
  CHECK(switches == 0);
  ::close(conn);  // the thread's PING fails now; it sees the stop and ends, calling nothing
  ::close(listener);
}
