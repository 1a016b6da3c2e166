// The Redis client and engine on a real Redis Cluster of 3 masters + 3
// replicas (support/redis_server.hpp: shared_cluster()): slots, routing of
// namespaces to every master, MOVED after a slot moved, ASK while a slot is
// half moved, a graceful failover with calls continuing, Functions on every
// master, WAIT, and wake-ups through SSUBSCRIBE that follow their slot.
// Tests here move slots and fail masters over, so none assumes a layout.
#include <catch2/catch.hpp>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <pathlock/engine.hpp>
#include <random>
#include <set>
#include <thread>

#include "redis/redis_client.hpp"
#include "redis/slot.hpp"
#include "support/admin_status.hpp"
#include "support/backends.hpp"
#include "support/background.hpp"
#include "support/redis_server.hpp"

using namespace pathlock;
using namespace std::chrono_literals;
using namespace pathlock::test;  // servers, engines and key helpers of support/

namespace {

std::unique_ptr<redis::RedisClient> client_on(const std::string& url, int replicas = 0, Millis timeout = 5000ms) {
  redis::ClientOptions o{redis::parse_redis_url(url)};
  o.command_timeout = timeout;
  o.replicas = replicas;
  return std::make_unique<redis::RedisClient>(o);
}

// Namespaces (fresh names) until every current master serves at least `per_master` of them.
std::map<std::size_t, std::vector<std::string>> namespaces_on_every_master(ClusterServers& cluster,
                                                                          std::size_t per_master) {
  std::map<std::size_t, std::vector<std::string>> out;
  const std::vector<std::size_t> masters = cluster.masters();
  std::map<int, std::size_t> owner_of_slot;
  while (true) {
    const std::string ns = test::unique_namespace("route");
    const int slot = redis::key_slot(prefix_of(ns));
    if (!owner_of_slot.count(slot)) owner_of_slot[slot] = cluster.master_of(slot);
    auto& list = out[owner_of_slot[slot]];
    if (list.size() < per_master) list.push_back(ns);
    bool done = true;
    for (const std::size_t m : masters) done = done && out[m].size() >= per_master;
    if (done) return out;
  }
}

// Keys whose slot is `slot`: "{tag}:0", "{tag}:1", ... with a tag found by search.
std::string tag_in_slot(int slot) {
  for (int i = 0;; ++i) {
    const std::string tag = "t" + std::to_string(i);
    if (redis::key_slot(tag) == slot) return tag;
  }
}

// How many error replies of kind `error` (MOVED, TRYAGAIN, ...) `node` has sent.
long long error_count(const test::RedisServer& node, const std::string& error) {
  const std::string stats = node.command({"INFO", "errorstats"}).str;
  const std::string field = "errorstat_" + error + ":count=";
  const std::size_t at = stats.find(field);
  return at == std::string::npos ? 0 : std::stoll(stats.substr(at + field.size()));
}

long long asking_calls(const test::RedisServer& node) { return test::command_calls(node, "asking"); }

}  // namespace

TEST_CASE("CRC16 and key slots follow the Redis Cluster spec", "[cluster][slot]") {
  CHECK(redis::crc16("123456789") == 0x31C3);  // the spec's check value
  CHECK(redis::crc16("") == 0);
  CHECK(redis::key_slot("foo") == 12182);
  CHECK(redis::key_slot("bar") == 5061);
  CHECK(redis::key_slot("{user1000}.following") == redis::key_slot("user1000"));
  CHECK(redis::key_slot("{user1000}.followers") == redis::key_slot("{user1000}.following"));
  CHECK(redis::hash_tag("foo{}{bar}") == "foo{}{bar}");  // an empty tag: the whole key
  CHECK(redis::hash_tag("foo{{bar}}zap") == "{bar");
  CHECK(redis::hash_tag("foo{bar}{zap}") == "bar");
  CHECK(redis::hash_tag("no tag}{") == "no tag}{");
  CHECK(redis::key_slot("pl:{project-42}:fence") == redis::key_slot("project-42"));
}

TEST_CASE("a Cluster node's port leaves room for its bus port, port + 10000", "[cluster][ports]") {
  // A node on a port above 55535 cannot start (its bus port would be over
  // 65535): a CI run drew one. The rule is the one launcher's
  // (tests/support/pathlock-testenv, drawn 2000 times by
  // tests/redis_cli/test_redis_load.py); RedisServer goes through it. Ten
  // servers: about a fifth of the ephemeral range lies above 55535.
  for (int i = 0; i < 10; ++i) {
    test::RedisServer node({"--cluster-enabled", "yes"});
    INFO("port " << node.port());
    CHECK(node.port() + 10000 <= 65535);
    CHECK(node.command({"INFO", "cluster"}).str.find("cluster_enabled:1") != std::string::npos);
  }
}

TEST_CASE("key slots match CLUSTER KEYSLOT on a real server", "[cluster][slot]") {
  ClusterServers& cluster = shared_cluster();
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> byte(0, 255), length(0, 24);
  std::vector<std::string> keys{"", "{", "}", "{}", "a{b}c", "{a}{b}", "pl:{ns}:n:/p/A", "\xff\xfe{\x01}"};
  for (int i = 0; i < 300; ++i) {
    std::string k;
    for (int n = length(rng); n > 0; --n) k += static_cast<char>(byte(rng) % 5 == 0 ? '{' + (byte(rng) % 3) : byte(rng));
    keys.push_back(k);
  }
  for (const std::string& k : keys) {
    INFO(k);
    CHECK(redis::key_slot(k) == cluster.keyslot(k));
  }
}

TEST_CASE("one url finds the cluster, which has only database 0", "[cluster][url]") {
  ClusterServers& cluster = shared_cluster();
  CHECK(client_on(cluster.url())->mode() == redis::RedisClient::Mode::cluster);
  // Any single node is enough as a seed, and an unreachable seed is skipped.
  std::string gone;
  {
    test::RedisServer stopped;
    gone = stopped.url().substr(8);
  }
  CHECK(client_on("redis://" + gone + "," + cluster.node(4).url().substr(8))->mode() ==
        redis::RedisClient::Mode::cluster);
  CHECK_THROWS_WITH(client_on(cluster.url() + "/2"), Catch::Contains("database 0"));
  CHECK_THROWS_WITH(client_on("redis://" + gone), Catch::Contains("cannot connect"));
}

TEST_CASE("namespaces on every master: acquire, release and list through the engine", "[cluster][routing]") {
  ClusterServers& cluster = shared_cluster();
  auto engine = redis_engine(cluster.url());
  for (const auto& [master, names] : namespaces_on_every_master(cluster, 3)) {
    for (const std::string& ns : names) {
      INFO(ns << " on node " << master);
      const AcquireResult a = engine->acquire(one_target_request(ns, "alice", "delete_folder", "/p/A"));
      REQUIRE(a.granted());
      const AcquireResult refused = engine->acquire(one_target_request(ns, "bob", "upload", "/p/A/f"));
      CHECK_FALSE(refused.granted());
      CHECK(engine->list(ns).size() == 1);
      // The namespace's keys are on the master that serves its slot, and only there.
      CHECK(cluster.node(master).command({"EXISTS", prefix_of(ns) + "meta"}).integer == 1);
      CHECK(engine->release(ns, a.grant.id, a.grant.token));
      CHECK(engine->list(ns).empty());
    }
  }
}

TEST_CASE("a moved slot answers MOVED and the client follows it", "[cluster][routing][moved]") {
  ClusterServers& cluster = shared_cluster();
  auto engine = redis_engine(cluster.url());
  const std::string ns = test::unique_namespace("moved");
  const int slot = redis::key_slot(prefix_of(ns));
  const AcquireResult held = engine->acquire(one_target_request(ns, "alice", "upload", "/p/A/f"));
  REQUIRE(held.granted());
  const std::size_t from = cluster.master_of(slot);
  std::size_t to = from;
  for (const std::size_t m : cluster.masters())
    if (m != from) to = m;
  const long long moved_before = error_count(cluster.node(from), "MOVED");
  cluster.move_slot(slot, to);
  REQUIRE(cluster.master_of(slot) == to);
  // The engine's map still names `from`: it gets MOVED, learns, and goes on.
  CHECK(engine->list(ns).size() == 1);
  CHECK_FALSE(engine->acquire(one_target_request(ns, "bob", "delete_folder", "/p")).granted());
  CHECK(engine->release(ns, held.grant.id, held.grant.token));
  CHECK(cluster.node(to).command({"EXISTS", prefix_of(ns) + "meta"}).integer == 1);
  CHECK(error_count(cluster.node(from), "MOVED") > moved_before);
}

TEST_CASE("a half-migrated slot: ASK sends ASKING and the command to the new node", "[cluster][routing][ask]") {
  ClusterServers& cluster = shared_cluster();
  auto client = client_on(cluster.url());
  const int slot = redis::key_slot(test::unique_namespace("ask"));
  const std::string tag = "{" + tag_in_slot(slot) + "}";
  for (int i = 0; i < 10; ++i) client->command({"SET", tag + std::to_string(i), "v" + std::to_string(i)});
  const std::size_t from = cluster.master_of(slot);
  std::size_t to = from;
  for (const std::size_t m : cluster.masters())
    if (m != from) to = m;
  cluster.begin_migration(slot, to);
  REQUIRE(cluster.migrate_keys(slot, 5) == 5);
  const long long asking_before = asking_calls(cluster.node(to));
  // Every key reads back, wherever it is now: moved ones through ASK.
  for (int i = 0; i < 10; ++i) CHECK(client->command({"GET", tag + std::to_string(i)}).str == "v" + std::to_string(i));
  CHECK(asking_calls(cluster.node(to)) - asking_before >= 5);
  // A new key in the slot goes where it can be created: the source answers
  // ASK (the key is not there), the target creates it after ASKING.
  client->command({"SET", tag + "new", "n"});
  // A multi-key command over moved and unmoved keys cannot run anywhere
  // yet: the source answers ASK, the target TRYAGAIN; the client backs off
  // and tries again until the migration ends, within its command timeout.
  const std::vector<std::string> both_sides{"MGET", tag + "0", tag + "1", tag + "2", tag + "3", tag + "4",
                                            tag + "5", tag + "6", tag + "7", tag + "8", tag + "9"};
  const auto tryagains = [&] { return error_count(cluster.node(from), "TRYAGAIN") + error_count(cluster.node(to), "TRYAGAIN"); };
  const long long tryagain_before = tryagains();
  auto mget = std::async(std::launch::async, [&] { return client->call(both_sides); });
  devtools::until([&] { return tryagains() != tryagain_before; });
  while (cluster.migrate_keys(slot, 100) > 0) {
  }
  cluster.finish_migration(slot);
  const redis::Reply all = mget.get();
  REQUIRE(all.type == redis::Reply::Type::array);
  for (int i = 0; i < 10; ++i) CHECK(all.at(static_cast<std::size_t>(i)).str == "v" + std::to_string(i));
  CHECK(tryagains() > tryagain_before);
  for (int i = 0; i < 10; ++i) CHECK(client->command({"GET", tag + std::to_string(i)}).str == "v" + std::to_string(i));
  CHECK(client->command({"GET", tag + "new"}).str == "n");
  CHECK(cluster.node(to).command({"DBSIZE"}).integer >= 11);
}

TEST_CASE("Functions are loaded on every master that needs them, again after FUNCTION FLUSH", "[cluster][functions]") {
  ClusterServers& cluster = shared_cluster();
  auto client = client_on(cluster.url());
  const std::string code =
      "#!lua name=pathlock_test\n"
      "redis.register_function('pathlock_test_incr', function(keys, args) return redis.call('INCRBY', keys[1], "
      "args[1]) end)";
  client->load_library("pathlock_test", code);
  CHECK_THROWS_AS(client->load_library("broken", "#!lua name=broken\nthis is not lua"), BackendError);
  const auto names = namespaces_on_every_master(cluster, 1);
  for (const auto& [master, list] : names) {
    const std::string key = prefix_of(list.front()) + "counter";
    CHECK(client->fcall("pathlock_test_incr", {key}, {"2"}).number() == 2);
    // A master that lost the library (a restart, a new master): loaded again, FCALL sent once more.
    REQUIRE(cluster.node(master).command({"FUNCTION", "FLUSH"}).str == "OK");
    CHECK(client->fcall("pathlock_test_incr", {key}, {"3"}).number() == 5);
    CHECK(cluster.node(master).command({"FUNCTION", "LIST", "LIBRARYNAME", "pathlock_test"}).elements.size() == 1);
  }
  // Error replies of the function itself are BackendError, not retried.
  CHECK_THROWS_WITH(client->fcall("pathlock_test_incr", {prefix_of(names.begin()->second.front()) + "counter"}, {"x"}),
                    Catch::Contains("not an integer"));
}

TEST_CASE("WAIT reports how many replicas acknowledged a write", "[cluster][wait]") {
  ClusterServers& cluster = shared_cluster();
  const std::string ns = test::unique_namespace("wait");
  int acked = -1;
  auto one = client_on(cluster.url(), 1);
  one->load_library(test::kSetLibraryName, test::kSetLibrary);
  CHECK(one->fcall(test::kSetFunction, {prefix_of(ns) + "x"}, {"1"}, &acked).text() == "OK");
  CHECK(acked == 1);
  // Each master has one replica: asking for two cannot be met.
  auto two = client_on(cluster.url(), 2, 1000ms);
  two->load_library(test::kSetLibraryName, test::kSetLibrary);
  acked = -1;
  CHECK(two->fcall(test::kSetFunction, {prefix_of(ns) + "x"}, {"2"}, &acked).text() == "OK");
  CHECK(acked == 1);
  auto none = client_on(cluster.url());
  none->load_library(test::kSetLibraryName, test::kSetLibrary);
  CHECK(none->fcall(test::kSetFunction, {prefix_of(ns) + "x"}, {"3"}, &acked).text() == "OK");
  CHECK(acked == 0);
}

TEST_CASE("a waiter is woken through SSUBSCRIBE on the slot's master, and follows the slot", "[cluster][subscribe]") {
  ClusterServers& cluster = shared_cluster();
  auto client = client_on(cluster.url());
  const std::string ns = test::unique_namespace("ssub");
  const std::string channel = prefix_of(ns) + "wake";
  const int slot = redis::key_slot(channel);
  const auto shard_subscribers = [&](std::size_t node) {
    return cluster.node(node).command({"PUBSUB", "SHARDNUMSUB", channel}).elements.at(1).integer;
  };
  auto sub = client->subscribe(channel);
  std::size_t master = cluster.master_of(slot);
  CHECK(shard_subscribers(master) == 1);
  CHECK(sub->node() == "127.0.0.1:" + std::to_string(cluster.node(master).port()));
  std::vector<std::string> payloads;
  REQUIRE(cluster.node(master).command({"SPUBLISH", channel, "/p/A"}).integer == 1);
  CHECK(sub->wait(2000ms, payloads) == redis::Subscription::Wake::message);
  CHECK(payloads == std::vector<std::string>{"/p/A"});

  // The slot moves: Redis ends the sharded subscription, the waiter is told
  // to look again and listens on the new master.
  std::size_t to = master;
  for (const std::size_t m : cluster.masters())
    if (m != master) to = m;
  cluster.move_slot(slot, to);
  payloads.clear();
  CHECK(sub->wait(5000ms, payloads) == redis::Subscription::Wake::reopened);
  CHECK(shard_subscribers(to) == 1);
  REQUIRE(cluster.node(to).command({"SPUBLISH", channel, "/p/B"}).integer == 1);
  payloads.clear();
  CHECK(sub->wait(2000ms, payloads) == redis::Subscription::Wake::message);
  CHECK(payloads == std::vector<std::string>{"/p/B"});
  sub.reset();
  CHECK(shard_subscribers(to) == 0);

  // Through the engine: a refused waiter gets the lock once the holder releases.
  auto engine = redis_engine(cluster.url());
  const AcquireResult held = engine->acquire(one_target_request(ns, "h", "delete_folder", "/p/A"));
  REQUIRE(held.granted());
  auto waiter = std::async(std::launch::async,
                           [&] { return engine->acquire(one_target_request(ns, "w", "upload", "/p/A/x", 10000ms)); });
  devtools::until([&] { return shard_subscribers(to) == 1; });
  CHECK(shard_subscribers(to) == 1);
  REQUIRE(engine->release(ns, held.grant.id, held.grant.token));
  const AcquireResult got = waiter.get();
  REQUIRE(got.granted());
  CHECK(engine->release(ns, got.grant.id, got.grant.token));
}

TEST_CASE("admin status without --namespace lists the namespaces of every master", "[cluster][admin]") {
  ClusterServers& cluster = shared_cluster();
  auto engine = redis_engine(cluster.url());
  std::map<std::string, std::size_t> expected;  // namespace -> its master
  std::vector<std::pair<std::string, Grant>> held;
  for (const auto& [master, names] : namespaces_on_every_master(cluster, 2))
    for (const std::string& ns : names) {
      const AcquireResult a = engine->acquire(one_target_request(ns, "alice", "upload", "/p/f"));
      REQUIRE(a.granted());
      held.emplace_back(ns, a.grant);
      expected[ns] = master;
    }
  // The shared cluster holds other tests' namespaces too: ours must all be
  // there, once each, with their lock.
  std::map<std::string, int> seen;
  const std::vector<nlohmann::json> all = test::admin_status({"status", "--redis", cluster.url()});
  for (const nlohmann::json& line : all) {
    REQUIRE(line.contains("namespace"));  // no "truncated" line: under the default limit
    const std::string ns = line["namespace"];
    if (!expected.count(ns)) continue;
    ++seen[ns];
    REQUIRE(line["matrices"].size() == 1);
    CHECK(line["matrices"][0]["locks"] == 1);
  }
  CHECK(seen.size() == expected.size());
  for (const auto& [ns, n] : seen) CHECK(n == 1);

  // --limit counts across the masters.
  const std::size_t limit = std::min<std::size_t>(all.size() - 1, 4);
  const std::vector<nlohmann::json> some =
      test::admin_status({"status", "--redis", cluster.url(), "--limit", std::to_string(limit)});
  REQUIRE(some.size() == limit + 1);
  CHECK(some.back() == nlohmann::json{{"truncated", true}, {"limit", limit}});
  for (const auto& [ns, grant] : held) CHECK(engine->release(ns, grant.id, grant.token));
}

TEST_CASE("a graceful failover: calls reach the new master and no lock is lost", "[cluster][failover]") {
  ClusterServers& cluster = shared_cluster();
  auto engine = redis_engine(cluster.url(), nullptr, 4, 10000ms);
  const auto names = namespaces_on_every_master(cluster, 2);
  const std::size_t old_master = names.begin()->first;
  std::vector<std::pair<std::string, Grant>> held;
  for (const std::string& ns : names.begin()->second) {
    const AcquireResult a = engine->acquire(one_target_request(ns, "alice", "upload", "/p/A/f"));
    REQUIRE(a.granted());
    held.emplace_back(ns, a.grant);
  }
  // Calls keep going on another thread while the replica takes over.
  std::atomic<int> calls{0}, errors{0};
  std::size_t new_master = old_master;
  {
    Background load([&] {
      try {
        engine->list(held.front().first);
        ++calls;
      } catch (const BackendError&) {
        ++errors;
      }
    });
    new_master = cluster.failover(old_master);
    std::this_thread::sleep_for(200ms);
  }
  CHECK(errors == 0);
  CHECK(calls > 0);
  CHECK(new_master != old_master);
  for (const auto& [ns, grant] : held) {
    INFO(ns);
    const std::vector<LockInfo> locks = engine->list(ns);
    REQUIRE(locks.size() == 1);
    CHECK(locks.front().id == grant.id);
    CHECK_FALSE(engine->acquire(one_target_request(ns, "bob", "delete_folder", "/p/A")).granted());
    CHECK(engine->release(ns, grant.id, grant.token));
    CHECK(cluster.node(new_master).command({"EXISTS", prefix_of(ns) + "meta"}).integer == 1);
  }
}

TEST_CASE("a crashed master: calls wait for the promoted replica within the command timeout", "[cluster][failover][crash]") {
  ClusterServers cluster;  // private: this one loses a node for good
  auto engine = redis_engine(cluster.url(), nullptr, 4, 20000ms);
  const auto names = namespaces_on_every_master(cluster, 1);
  const std::size_t victim = names.begin()->first;
  const std::size_t replica = cluster.replica_of(victim);
  const std::string ns = names.begin()->second.front();
  const AcquireResult held = engine->acquire(one_target_request(ns, "alice", "delete_folder", "/p/A"));
  REQUIRE(held.granted());
  // Only what reached the replica survives the crash (docs/operations.md#failover).
  test::RedisConnection on_replica(cluster.node(replica).url());
  REQUIRE(on_replica.command({"READONLY"}).str == "OK");  // a cluster replica answers reads only after READONLY
  const auto replicated = [&] { return on_replica.command({"HEXISTS", prefix_of(ns) + "locks", held.grant.id}).integer == 1; };
  devtools::until([&] { return replicated(); });
  REQUIRE(replicated());
  cluster.node(victim).kill_hard();
  // The node is gone: calls retry (reloading the slot map) until the
  // cluster promotes the replica, then reach it.
  const std::vector<LockInfo> locks = engine->list(ns);
  REQUIRE(locks.size() == 1);
  CHECK(locks.front().id == held.grant.id);
  CHECK_FALSE(engine->acquire(one_target_request(ns, "bob", "upload", "/p/A/f")).granted());
  CHECK(engine->release(ns, held.grant.id, held.grant.token));
  const RedisReply role = cluster.node(replica).command({"ROLE"});
  CHECK(role.elements.at(0).str == "master");
  // Namespaces on the other masters never noticed.
  for (const auto& [master, list] : names) {
    if (master == victim) continue;
    const AcquireResult a = engine->acquire(one_target_request(list.front(), "carol", "upload", "/p/x"));
    REQUIRE(a.granted());
    CHECK(engine->release(list.front(), a.grant.id, a.grant.token));
  }
}
