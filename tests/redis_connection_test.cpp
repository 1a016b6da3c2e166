// The Redis backend's connection to its server, against a real redis-server
// (support/redis_server.hpp; PATHLOCK_TEST_REDIS_URL selects an existing one):
// URLs and options, AUTH and SELECT, the server's configuration (eviction
// policy, CONFIG renamed away, out of memory), and connections that are
// closed, time out or find the server stopped or its library flushed.
// Tests that need a server configured differently start a private one.
#include "support/backends.hpp"
#include "support/lock_request.hpp"
#include "support/process.hpp"
#include "support/redis_server.hpp"

#include <pathlock/engine.hpp>
#include <pathlock/factory.hpp>
#include <pathlock/redis_url.hpp>

#include <catch2/catch.hpp>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace pathlock;
using namespace std::chrono_literals;
using namespace pathlock::test;  // servers, engines and requests of support/

namespace {

// Closes, from the server side, the connections of this process's engines
// (named pathlock-<pid>); other clients of a shared server are left alone.
int kill_engine_connections(const RedisServer& server) {
  const std::string name = "name=pathlock-" + std::to_string(::getpid()) + " ";
  const std::string clients = server.command({"CLIENT", "LIST", "TYPE", "normal"}).str;
  int killed = 0;
  for (std::size_t at = 0; at < clients.size();) {
    const std::size_t end = std::min(clients.find('\n', at), clients.size());
    const std::string line = clients.substr(at, end - at);
    at = end + 1;
    if (line.find(name) == std::string::npos) continue;
    const std::string id = line.substr(3, line.find(' ') - 3);  // "id=N ..."
    killed += static_cast<int>(server.command({"CLIENT", "KILL", "ID", id}).integer);
  }
  return killed;
}

// One host: its default port, user and password (percent-decoded), database, IPv6.
void check_single_host_urls() {
  using redis::parse_redis_url;
  auto u = parse_redis_url("redis://127.0.0.1:6379");
  CHECK(u.host == "127.0.0.1");
  CHECK(u.port == 6379);
  CHECK_FALSE(u.user);
  CHECK_FALSE(u.password);
  CHECK(u.db == 0);

  u = parse_redis_url("redis://cache.internal");
  CHECK(u.host == "cache.internal");
  CHECK(u.port == 6379);

  u = parse_redis_url("redis://locker:pa%40ss:w%2Frd@db.example:7000/3");
  CHECK(u.host == "db.example");
  CHECK(u.port == 7000);
  CHECK(u.user == std::optional<std::string>("locker"));
  CHECK(u.password == std::optional<std::string>("pa@ss:w/rd"));
  CHECK(u.db == 3);

  u = parse_redis_url("redis://:secret@h:1/");
  CHECK_FALSE(u.user);
  CHECK(u.password == std::optional<std::string>("secret"));
  CHECK(u.port == 1);
  CHECK(u.db == 0);

  u = parse_redis_url("redis://[::1]:6380/15");
  CHECK(u.host == "::1");
  CHECK(u.port == 6380);
  CHECK(u.db == 15);
  CHECK(u.describe() == "[::1]:6380/15");
}

// Several seed nodes, sentinels with a master name, and both over TLS.
void check_multi_node_urls() {
  using redis::parse_redis_url;
  // Several seed nodes (a cluster, or standalone: the first that answers).
  auto u = parse_redis_url("redis://:pw@10.0.0.1:7000,10.0.0.2,[::1]:7002/0");
  REQUIRE(u.nodes.size() == 3);
  CHECK(u.kind == redis::RedisUrl::Kind::redis);
  CHECK(u.nodes[0] == redis::Endpoint{"10.0.0.1", 7000});
  CHECK(u.nodes[1] == redis::Endpoint{"10.0.0.2", 6379});
  CHECK(u.nodes[2] == redis::Endpoint{"::1", 7002});
  CHECK(u.host == "10.0.0.1");
  CHECK(u.password == std::optional<std::string>("pw"));
  CHECK(u.describe() == "10.0.0.1:7000,10.0.0.2:6379,[::1]:7002/0");

  // Sentinels, Lettuce's form: the master's name after '#', sentinel port 26379 by default.
  u = parse_redis_url("redis-sentinel://locker:s%40cret@s1:26380,s2,[::1]/2#my%20master");
  CHECK(u.kind == redis::RedisUrl::Kind::sentinel);
  REQUIRE(u.nodes.size() == 3);
  CHECK(u.nodes[0] == redis::Endpoint{"s1", 26380});
  CHECK(u.nodes[1] == redis::Endpoint{"s2", 26379});
  CHECK(u.nodes[2] == redis::Endpoint{"::1", 26379});
  CHECK(u.master_name == "my master");
  CHECK(u.user == std::optional<std::string>("locker"));
  CHECK(u.password == std::optional<std::string>("s@cret"));
  CHECK(u.db == 2);
  CHECK(parse_redis_url("redis-sentinel://s1#m").describe() == "s1:26379/0 (master m via sentinels)");
  CHECK_FALSE(u.tls);

  // The same forms over TLS.
  u = parse_redis_url("rediss://:pw@h1:7000,h2/0");
  CHECK(u.tls);
  CHECK(u.kind == redis::RedisUrl::Kind::redis);
  CHECK(u.nodes == std::vector<redis::Endpoint>{{"h1", 7000}, {"h2", 6379}});
  CHECK(u.describe() == "h1:7000,h2:6379/0 (tls)");
  u = parse_redis_url("rediss-sentinel://s1,s2:26380#m");
  CHECK(u.tls);
  CHECK(u.kind == redis::RedisUrl::Kind::sentinel);
  CHECK(u.nodes == std::vector<redis::Endpoint>{{"s1", 26379}, {"s2", 26380}});
  CHECK(u.master_name == "m");
}

}  // namespace

TEST_CASE("redis urls: every accepted form", "[redis][url]") {
  check_single_host_urls();
  check_multi_node_urls();
}

TEST_CASE("redis urls: bad ones are InvalidRequest before any connection", "[redis][url]") {
  for (const char* bad : {"", "http://h:1", "redis:/h:1", "redis://", "redis://:6379", "redis://h:0", "redis://h:65536",
                          "redis://h:x", "redis://h:", "redis://h:1/x", "redis://h:1/-1", "redis://user@h:1",
                          "redis://:@h:1", "redis://u:p%4@h:1", "redis://u:p%zz@h:1", "redis://h:1?db=2",
                          "redis://[::1", "redis://[::1]x", "redis://h:1,", "redis://,h:1", "redis://h:1,,h:2",
                          "redis://h:1,h:0", "redis://h:1,:2", "redis://h:1#master", "rediss://h:1#m",
                          "redis+tls://h:1", "rediss-sentinel://h:1", "rediss:/h:1",
                          "redis-sentinel://h:1", "redis-sentinel://h:1#", "redis-sentinel://h:1/0#",
                          "redis-sentinel://#m", "redis-sentinel://h:1,#m", "redis-sentinel://h:x#m",
                          "redis-sentinel://h:1#m%zz", "redis-sentinel://h:1?x=1#m"}) {
    INFO(bad);
    CHECK_THROWS_AS(redis::parse_redis_url(bad), InvalidRequest);
    // Port 1 on loopback would refuse a connection: InvalidRequest proves no attempt was made.
    CHECK_THROWS_AS(redis_engine(bad), InvalidRequest);
  }
  CHECK_THROWS_WITH(redis::parse_redis_url("redis://h:99999"), Catch::Contains("port"));
  CHECK_THROWS_WITH(redis::parse_redis_url("redis+tls://h:1"), Catch::Contains("rediss://"));
  CHECK_THROWS_WITH(redis::parse_redis_url("redis-sentinel://h:1"), Catch::Contains("master name"));
}

TEST_CASE("redis urls: a password given apart, and no message shows one", "[redis][url]") {
  using redis::parse_redis_url;
  auto u = parse_redis_url("redis://locker@h:1/2", std::string("pw@x"));
  CHECK(u.user == std::optional<std::string>("locker"));
  CHECK(u.password == std::optional<std::string>("pw@x"));
  u = parse_redis_url("redis://h:1", std::string("pw"));
  CHECK_FALSE(u.user);
  CHECK(u.password == std::optional<std::string>("pw"));
  CHECK_THROWS_WITH(parse_redis_url("redis://:one@h:1", std::string("two")), Catch::Contains("give one"));
  CHECK_THROWS_AS(parse_redis_url("redis://h:1", std::string()), InvalidRequest);
  CHECK(redis::redact_redis_url("redis://locker:s%40cret@h:1,h2/3") == "redis://locker:***@h:1,h2/3");
  CHECK(redis::redact_redis_url("rediss://:a@b:c@h") == "rediss://:***@h");
  CHECK(redis::redact_redis_url("redis-sentinel://u:pw@s1#m@x") == "redis-sentinel://u:***@s1#m@x");
  CHECK(redis::redact_redis_url("redis://locker@h") == "redis://locker@h");
  CHECK(redis::redact_redis_url("u:pw@h") == "u:***@h");
  for (const char* bad : {"redis://u:Secret1@h:x", "redis://u:Secret1@", "redis://:Secret1@h:1?x", "http://u:Secret1@h"}) {
    INFO(bad);
    try {
      parse_redis_url(bad);
      FAIL("accepted");
    } catch (const InvalidRequest& e) {
      CHECK(std::string(e.what()).find("Secret1") == std::string::npos);
      CHECK(std::string(e.what()).find(":***@") != std::string::npos);
    }
  }
  // RedisOptions::password: the engine authenticates with it.
  RedisServer server({"--requirepass", "s3cret"});
  RedisOptions ro;
  ro.url = server.url();
  ro.password = "s3cret";
  CHECK(make_redis_engine(ro)->list(test::unique_namespace("pw-apart")).empty());
  ro.password = "wrong-one";
  try {
    make_redis_engine(ro);
    FAIL("authenticated");
  } catch (const BackendError& e) {
    CHECK(std::string(e.what()).find("wrong-one") == std::string::npos);
  }
}

TEST_CASE("redis engine options are checked, an unreachable server is a BackendError", "[redis]") {
  CHECK_THROWS_AS(redis_engine(shared_redis_server().url(), nullptr, 0), InvalidRequest);
  EngineOptions opts;
  opts.backend = Backend::redis;
  opts.redis.url = shared_redis_server().url();
  opts.redis.command_timeout = 0ms;
  CHECK_THROWS_AS(make_engine(opts), InvalidRequest);

  std::string unreachable;
  {
    RedisServer gone;
    unreachable = gone.url();
  }  // stopped: nothing listens on that port now
  CHECK_THROWS_AS(redis_engine(unreachable), BackendError);
  CHECK_THROWS_WITH(redis_engine(unreachable), Catch::Contains("cannot connect"));
}

TEST_CASE("AUTH with a password or a user, and SELECT of the database in the url", "[redis][url]") {
  RedisServer server({"--requirepass", "s3cret"});
  const std::string hostport = server.url().substr(std::string("redis://").size());
  CHECK_THROWS_WITH(redis_engine(server.url()), Catch::Contains("NOAUTH") || Catch::Contains("uthentication"));
  CHECK_THROWS_WITH(redis_engine("redis://:wrong@" + hostport), Catch::Contains("AUTH"));

  const std::string ns = test::unique_namespace("auth");
  auto engine = redis_engine("redis://:s3cret@" + hostport + "/3");
  REQUIRE(engine->acquire(request(ns, "o", "create", {{"target", "/a"}})).granted());
  test::RedisConnection db3("redis://:s3cret@" + hostport + "/3");
  CHECK(db3.command({"EXISTS", prefix_of(ns) + "meta"}).integer == 1);
  test::RedisConnection db0("redis://:s3cret@" + hostport);
  CHECK(db0.command({"EXISTS", prefix_of(ns) + "meta"}).integer == 0);

  REQUIRE_FALSE(db0.command({"ACL", "SETUSER", "locker", "on", ">pw%@x", "~*", "+@all"}).is_error());
  auto as_user = redis_engine("redis://locker:pw%25%40x@" + hostport + "/3");
  CHECK(as_user->list(ns).size() == 1);
  CHECK_THROWS_WITH(redis_engine("redis://locker:nope@" + hostport), Catch::Contains("AUTH as locker failed"));
}

TEST_CASE("an eviction policy that can drop lock data is refused", "[redis][config]") {
  RedisServer server({"--maxmemory-policy", "allkeys-lru"});
  for (const char* policy : {"allkeys-lru", "allkeys-lfu", "allkeys-random"}) {
    INFO(policy);
    REQUIRE_FALSE(server.command({"CONFIG", "SET", "maxmemory-policy", policy}).is_error());
    CHECK_THROWS_AS(redis_engine(server.url()), BackendError);
    CHECK_THROWS_WITH(redis_engine(server.url()),
                      Catch::Contains(policy) && Catch::Contains("set maxmemory-policy noeviction"));
  }
  // Under volatile-* policies only keys with a TTL are evicted, and the
  // library gives live lock data none there (tests/redis_eviction_test.cpp).
  for (const char* policy : {"noeviction", "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"}) {
    INFO(policy);
    REQUIRE_FALSE(server.command({"CONFIG", "SET", "maxmemory-policy", policy}).is_error());
    CHECK_NOTHROW(redis_engine(server.url()));
  }
  // The policy is checked on every new connection, not only the first.
  REQUIRE_FALSE(server.command({"CONFIG", "SET", "maxmemory-policy", "noeviction"}).is_error());
  auto engine = redis_engine(server.url(), nullptr, 1);
  REQUIRE_FALSE(server.command({"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"}).is_error());
  REQUIRE(kill_engine_connections(server) == 1);
  CHECK_THROWS_WITH(engine->list("ns"), Catch::Contains("allkeys-lru"));
}

TEST_CASE("a server with CONFIG and INFO renamed away works, with a warning", "[redis][config]") {
  // (With CONFIG alone renamed, the policy is read from INFO:
  // tests/redis_eviction_test.cpp.)
  RedisServer server({"--rename-command", "CONFIG", "", "--rename-command", "INFO", ""});
  std::unique_ptr<LockEngine> engine;
  const std::string err = test::capture_stderr([&] { engine = redis_engine(server.url()); });
  CHECK_THAT(err, Catch::Contains("maxmemory-policy") && Catch::Contains("noeviction"));
  CHECK(engine->acquire(request("cfg", "o", "upload", {{"target", "/x"}})).granted());
}

TEST_CASE("a connection closed by the server is replaced before sending", "[redis][connection]") {
  const RedisServer& server = shared_redis_server();
  auto engine = redis_engine(server.url(), nullptr, 2);
  const std::string ns = test::unique_namespace("kill");
  for (int round = 0; round < 5; ++round) {
    INFO(round);
    const auto r = engine->acquire(request(ns, "o", "upload", {{"target", "/r" + std::to_string(round)}}));
    REQUIRE(r.granted());
    REQUIRE(kill_engine_connections(server) >= 1);
    CHECK(engine->list(ns).size() == static_cast<std::size_t>(round + 1));
    REQUIRE(kill_engine_connections(server) >= 1);
    CHECK(engine->release(ns, r.grant.id, r.grant.token));
    CHECK(engine->acquire(request(ns, "o", "upload", {{"target", "/r" + std::to_string(round)}})).granted());
  }
}

TEST_CASE("a library flushed from the server is loaded again (Function not found)", "[redis][connection]") {
  const RedisServer& server = shared_redis_server();
  auto engine = redis_engine(server.url());
  const std::string ns = test::unique_namespace("flush");
  REQUIRE(engine->acquire(request(ns, "o", "upload", {{"target", "/a"}})).granted());
  REQUIRE_FALSE(server.command({"FUNCTION", "FLUSH"}).is_error());
  CHECK(engine->acquire(request(ns, "o", "upload", {{"target", "/b"}})).granted());
  CHECK(engine->list(ns).size() == 2);
}

TEST_CASE("a reply that does not come in time is a BackendError, never retried", "[redis][connection]") {
  RedisServer server({"--enable-debug-command", "yes"});
  auto engine = redis_engine(server.url(), nullptr, 2, 150ms);
  const std::string ns = test::unique_namespace("slow");
  REQUIRE(engine->acquire(request(ns, "o", "upload", {{"target", "/warm"}})).granted());
  const auto fcalls = [&] { return command_calls(server, "fcall"); };  // FCALLs the server ran so far
  const long long before = fcalls();
  // (DEBUG SLEEP, not CLIENT PAUSE: a paused command of a client that hangs
  // up is dropped, a command read before a busy stretch still runs.)
  std::thread sleeper([&] { server.command({"DEBUG", "SLEEP", "1.5"}); });
  REQUIRE(test::until_busy(server));  // the server is busy sleeping now
  CHECK_THROWS_WITH(engine->acquire(request(ns, "late", "upload", {{"target", "/late"}})),
                    Catch::Contains("no reply") && Catch::Contains("effect is unknown"));
  sleeper.join();
  // The call ran once the server woke up (the effect was indeed unknown), and
  // only once, but after its deadline: it granted nothing (it did before
  // protocol 4.2, docs/lua-protocol.md#deadlines).
  devtools::wait_for("slow test", "the late call to run", [&] { return fcalls() > before; });
  CHECK(fcalls() == before + 1);
  CHECK(engine->list(ns, "/late").empty());
  CHECK(engine->acquire(request(ns, "o", "upload", {{"target", "/after"}})).granted());
}

TEST_CASE("a stopped server is a BackendError", "[redis][connection]") {
  auto server = std::make_unique<RedisServer>();
  auto engine = redis_engine(server->url());
  REQUIRE(engine->acquire(request("gone", "o", "upload", {{"target", "/a"}})).granted());
  server.reset();
  CHECK_THROWS_AS(engine->acquire(request("gone", "o", "upload", {{"target", "/b"}})), BackendError);
  CHECK_THROWS_AS(engine->list("gone"), BackendError);
}

TEST_CASE("out of memory: acquire fails cleanly, release still works, nothing is left half-written", "[redis][config]") {
  RedisServer server;
  auto engine = redis_engine(server.url());
  const std::string ns = "oom";
  auto twice = request(ns, "o", "upload", {{"target", "/warm"}});
  const auto reentered = engine->acquire(twice);
  REQUIRE(reentered.granted());
  twice.reenter(reentered.grant);
  REQUIRE(engine->acquire(twice).grant.holds == 2);
  const auto used_memory = [&] {
    const std::string info = server.command({"INFO", "memory"}).str;
    return std::stoll(info.substr(info.find("used_memory:") + std::string("used_memory:").size()));
  };
  REQUIRE_FALSE(server.command({"CONFIG", "SET", "maxmemory", std::to_string(used_memory() + 300 * 1024)}).is_error());
  std::vector<Grant> grants;
  bool refused_for_memory = false;
  const std::string long_name(250, 'n');
  for (int i = 0; i < 5000 && !refused_for_memory; ++i) {
    try {
      const auto r = engine->acquire(
          request(ns, "o", "move_folder",
                  {{"src", "/" + long_name + "/s" + std::to_string(i)}, {"dst", "/" + long_name + "/d" + std::to_string(i)}}));
      REQUIRE(r.granted());
      grants.push_back(r.grant);
    } catch (const BackendError& e) {
      CHECK_THAT(e.what(), Catch::Contains("OOM"));
      refused_for_memory = true;
    }
  }
  REQUIRE(refused_for_memory);
  REQUIRE(grants.size() > 10);
  // Far over the limit (usage hovers around it otherwise): in-place updates
  // and deletions must still work.
  REQUIRE_FALSE(server.command({"CONFIG", "SET", "maxmemory", std::to_string(used_memory() / 2)}).is_error());
  CHECK_THROWS_WITH(engine->acquire(request(ns, "o", "upload", {{"target", "/new"}})), Catch::Contains("OOM"));
  CHECK_THROWS_WITH(engine->acquire(twice), Catch::Contains("OOM"));  // a third hold is new data
  CHECK(engine->renew(ns, reentered.grant.id, reentered.grant.token, 60000ms));
  CHECK(engine->release(ns, reentered.grant.id, reentered.grant.token));  // holds 2 -> 1
  REQUIRE(engine->list(ns, "/warm").size() == 1);
  CHECK(engine->list(ns, "/warm")[0].holds == 1);
  for (const Grant& g : grants) CHECK(engine->release(ns, g.id, g.token));  // allowed under the limit
  REQUIRE_FALSE(server.command({"CONFIG", "SET", "maxmemory", "0"}).is_error());
  const auto listed = engine->list(ns);
  REQUIRE(listed.size() == 1);
  CHECK(engine->force_release(ns, listed[0].id));
  CHECK(ns_keys(server, ns) == kOnlyMeta);
}
