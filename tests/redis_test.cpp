// Redis-specific behaviour of the Redis backend, against a real redis-server
// (support/redis_server.hpp; PATHLOCK_TEST_REDIS_URL selects an existing one).
// Tests that need a server configured differently start a private one.
#include "support/backends.hpp"
#include "support/process.hpp"
#include "support/namespace_keys.hpp"
#include "support/redis_server.hpp"

#include "core/waiting.hpp"
#include "matrix/table.hpp"
#include "redis/library.hpp"
#include <pathlock/redis_url.hpp>
#include "redis/replies.hpp"

#include <pathlock/engine.hpp>
#include <pathlock/factory.hpp>
#include <pathlock/path.hpp>

#include <catch2/catch.hpp>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <deque>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <thread>

using namespace pathlock;
using namespace std::chrono_literals;
using namespace std::string_literals;
using namespace pathlock::test;  // servers, engines and key helpers of support/

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

LockRequest request(const std::string& ns, const std::string& owner, const std::string& op,
                    std::vector<Target> targets, Millis ttl = 30000ms) {
  return LockRequest{ns, owner, op, std::move(targets), ttl, 0ms};
}

// A copy of the default matrix that claims another identity: what a service
// built from another matrix file would run (a MatrixTable made at run time).
const MatrixTable& impostor_matrix() {
  static std::deque<std::string> storage;
  static const MatrixTable table = [] {
    // Built at run time: the Redis backend makes its library from the table.
    MatrixTable t = default_matrix();
    t.fingerprint = storage.emplace_back("0123456789abcdef0123456789abcdef");
    t.name = "impostor";
    t.version = "9.9";
    return t;
  }();
  return table;
}

// Two engines on one fresh namespace of the shared server: `cloud` with the
// shipped matrix and `other` with impostor_matrix().
struct ImpostorShare {
  const RedisServer& server = shared_redis_server();
  test::TwoMatrices versions{impostor_matrix(), "fp"};
  const std::string& ns = versions.ns;
  const std::unique_ptr<LockEngine>& cloud = versions.shipped;
  const std::unique_ptr<LockEngine>& other = versions.other;
};

}  // namespace

TEST_CASE("redis urls: every accepted form", "[redis][url]") {
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

  // Several seed nodes (a cluster, or standalone: the first that answers).
  u = parse_redis_url("redis://:pw@10.0.0.1:7000,10.0.0.2,[::1]:7002/0");
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
  REQUIRE(engine->acquire(request(ns, "o", "create", {{"target", "/a"}})).granted);
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
  // Lock keys never get a TTL, so volatile-* policies never evict them.
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

TEST_CASE("a server with CONFIG renamed away works, with a warning", "[redis][config]") {
  RedisServer server({"--rename-command", "CONFIG", ""});
  std::unique_ptr<LockEngine> engine;
  const std::string err = test::capture_stderr([&] { engine = redis_engine(server.url()); });
  CHECK_THAT(err, Catch::Contains("maxmemory-policy") && Catch::Contains("noeviction"));
  CHECK(engine->acquire(request("cfg", "o", "upload", {{"target", "/x"}})).granted);
}

TEST_CASE_METHOD(ImpostorShare, "two matrices share a namespace: another matrix's lock refuses whatever overlaps it",
                 "[redis][matrix]") {
  // Layout 3: no "mismatch" error. A lock of another matrix conflicts with
  // every overlapping request (same path, ancestor, descendant), named by
  // its own record; the other matrix can list, release and force-release it.
  const Grant held = test::granted(*cloud, request(ns, "o", "upload", {{"target", "/a/f"}}));

  // Paths that do not overlap: granted across matrices.
  const Grant beside = test::granted(*other, request(ns, "p", "upload", {{"target", "/a/g"}}));
  // An overlapping request of the other matrix is refused, whatever its cell says.
  const auto same = other->acquire(request(ns, "p", "upload", {{"target", "/a/f"}}));
  REQUIRE_FALSE(same.granted);
  CHECK(same.conflict.id == held.id);
  CHECK(same.conflict.op == "upload");
  CHECK(same.conflict.role == "target");
  CHECK(same.conflict.relation == Relation::same);
  const auto above = other->acquire(request(ns, "p", "delete_folder", {{"target", "/"}}));
  REQUIRE_FALSE(above.granted);
  CHECK(above.conflict.relation == Relation::held_descendant);
  CHECK(above.conflict.path == "/a/f");
  CHECK(other->list(ns).size() == 2);
  CHECK(cloud->list(ns).size() == 2);
  // Each matrix's own lock is refused to the other too (both directions).
  const auto back = cloud->acquire(request(ns, "o", "upload", {{"target", "/a/g"}}));
  REQUIRE_FALSE(back.granted);
  CHECK(back.conflict.id == beside.id);
  // The other matrix may release the lock by its token, or force it.
  CHECK(other->release(ns, held.id, held.token));
  CHECK(cloud->force_release(ns, beside.id));
  CHECK(cloud->list(ns).empty());
  // Nothing left: only meta, and no matrix is in use any more.
  CHECK(ns_keys(server, ns) == kOnlyMeta);
  const std::vector<std::string> fields = [&] {
    std::vector<std::string> out;
    const auto r = server.command({"HKEYS", prefix_of(ns) + "meta"});
    for (const auto& e : r.elements) out.push_back(e.str);
    std::sort(out.begin(), out.end());
    return out;
  }();
  CHECK(fields == std::vector<std::string>{"fence", "layout"});
}

TEST_CASE_METHOD(ImpostorShare, "once another matrix's locks are gone, this matrix's own rules alone decide",
                 "[redis][matrix]") {
  // An operation the shipped matrix lets overlap a held upload exactly (found
  // by asking the engine, so the test follows the shipped matrix), which
  // "any overlap" refuses while the other matrix holds the same path.
  const Grant mine = test::granted(*cloud, request(ns, "o", "upload", {{"target", "/d/f"}}));
  const Grant foreign = test::granted(*other, request(ns, "p", "upload", {{"target", "/e/f"}}));
  // While the impostor holds /e/f, cloud's own rules apply to cloud's own
  // lock and "any overlap" to the impostor's.
  std::string allowed_op;
  for (std::size_t o = 0; o < default_matrix().op_count && allowed_op.empty(); ++o) {
    const OpInfo& op = default_matrix().ops[o];
    if (op.role_count != 1) continue;
    const std::string name(op.name);
    const auto r = cloud->acquire(request(ns, "q", name, {{"target", "/d/f"}}));
    if (r.granted) {
      allowed_op = name;
      CHECK(cloud->release(ns, r.grant.id, r.grant.token));
    }
  }
  INFO("an operation the shipped matrix lets overlap a held upload: " << allowed_op);
  REQUIRE_FALSE(allowed_op.empty());
  const auto refused = cloud->acquire(request(ns, "q", allowed_op, {{"target", "/e/f"}}));
  REQUIRE_FALSE(refused.granted);  // the impostor's lock: any overlap conflicts
  CHECK(refused.conflict.id == foreign.id);
  REQUIRE(other->release(ns, foreign.id, foreign.token));
  // The impostor's tag left meta; now the shipped matrix alone decides.
  const auto now = cloud->acquire(request(ns, "q", allowed_op, {{"target", "/e/f"}}));
  CHECK(now.granted);
  CHECK(server.command({"HGET", prefix_of(ns) + "meta", "t:" + std::string(impostor_matrix().fingerprint)}).type ==
        test::RedisReply::Type::nil);
}

TEST_CASE("the functions read the matrices in use at every call: a tag taken behind an engine's back counts",
          "[redis][matrix]") {
  const RedisServer& server = shared_redis_server();
  const std::string ns = test::unique_namespace("race");
  auto engine = redis_engine(server.url());
  const auto held = engine->acquire(request(ns, "o", "upload", {{"target", "/a"}}));
  REQUIRE(held.granted);
  // The engine's matrix loses its tag behind its back (an operator edited
  // meta): its own locks then count as another matrix's, so an overlapping
  // request is refused ("any overlap"), never granted.
  const std::string fp(default_matrix().fingerprint);
  REQUIRE(server.command({"HDEL", prefix_of(ns) + "meta", "t:" + fp}).integer == 1);
  const auto r = engine->acquire(request(ns, "o", "upload", {{"target", "/a"}}));
  REQUIRE_FALSE(r.granted);
  CHECK(r.conflict.id == held.grant.id);
  CHECK(engine->release(ns, held.grant.id, held.grant.token));
}

TEST_CASE("paths are data: metacharacters, spaces and unicode in keys", "[redis][keys]") {
  const RedisServer& server = shared_redis_server();
  auto engine = redis_engine(server.url());
  const std::string ns = test::unique_namespace("esc");
  const std::vector<std::string> paths{"/a{b}/c", "/a}b",     "/x*",          "/x?",          "/x[1]",
                                       "/100%",   "/100%25",  "/with space",  "/ünï/日本語",  "/{" + ns + "}",
                                       "/b\\s",   "/%7B"};
  std::vector<Grant> grants;
  for (const std::string& p : paths) {
    INFO(p);
    const auto r = engine->acquire(request(ns, "o", "delete_folder", {{"target", p}}));
    REQUIRE(r.granted);  // none of these paths overlaps another
    grants.push_back(r.grant);
  }
  for (std::size_t i = 0; i < paths.size(); ++i) {
    INFO(paths[i]);
    const auto below = engine->acquire(request(ns, "p", "upload", {{"target", paths[i] + "/f"}}));
    REQUIRE_FALSE(below.granted);
    CHECK(below.conflict.id == grants[i].id);
    CHECK(below.conflict.path == paths[i]);
    CHECK(below.conflict.relation == Relation::held_ancestor);
    const auto listed = engine->list(ns, paths[i]);
    REQUIRE(listed.size() == 1);
    CHECK(listed[0].targets.at(0).path == paths[i]);
  }
  // A pattern character matches nothing but itself.
  CHECK(engine->acquire(request(ns, "p", "upload", {{"target", "/xa"}})).granted);
  CHECK(engine->acquire(request(ns, "p", "upload", {{"target", "/x1"}})).granted);

  // Keys: the fixed set of docs/lua-protocol.md, whatever the paths; the
  // paths are data inside them (index fields and entry members), raw bytes.
  CHECK(ns_keys(server, ns) == std::vector<std::string>{"ent", "exp", "idx", "locks", "meta"});
  for (const std::string& p : paths) {
    INFO(p);
    CHECK(server.command({"HEXISTS", prefix_of(ns) + "idx", "h" + p}).integer == 1);
  }
  CHECK(server.command({"HEXISTS", prefix_of(ns) + "idx", "b/a{b}"}).integer == 1);

  for (const Grant& g : grants) CHECK(engine->release(ns, g.id, g.token));
  for (const LockInfo& l : engine->list(ns)) CHECK(engine->force_release(ns, l.id));
  CHECK(ns_keys(server, ns) == kOnlyMeta);
}

TEST_CASE("namespaces are isolated, even when one name is a prefix of another", "[redis][keys]") {
  const RedisServer& server = shared_redis_server();
  auto engine = redis_engine(server.url());
  const std::string base = test::unique_namespace("iso");
  const std::string ns1 = base, ns2 = base + ":sub", ns3 = base + ".x";
  std::map<std::string, Grant> grants;
  for (const std::string& ns : {ns1, ns2, ns3}) {
    const auto r = engine->acquire(request(ns, "o", "delete_folder", {{"target", "/"}}));
    REQUIRE(r.granted);
    // Each namespace has its own fence.
    CHECK(std::to_string(r.grant.fence) == server.command({"HGET", prefix_of(ns) + "meta", "fence"}).str);
    grants[ns] = r.grant;
  }
  CHECK_FALSE(engine->release(ns2, grants[ns1].id, grants[ns1].token));
  CHECK_FALSE(engine->force_release(ns3, grants[ns1].id));
  CHECK_FALSE(engine->renew(ns2, grants[ns1].id, grants[ns1].token));
  REQUIRE(engine->list(ns2).size() == 1);
  CHECK(engine->list(ns2)[0].id == grants[ns2].id);

  for (const std::string& key : server.keys("pl:{" + base + "*")) {
    INFO(key);
    const bool one_of = key.rfind(prefix_of(ns1), 0) == 0 || key.rfind(prefix_of(ns2), 0) == 0 ||
                        key.rfind(prefix_of(ns3), 0) == 0;
    CHECK(one_of);
  }
  CHECK(engine->release(ns1, grants[ns1].id, grants[ns1].token));
  CHECK(ns_keys(server, ns1) == kOnlyMeta);
  CHECK(engine->list(ns2).size() == 1);  // untouched
}

TEST_CASE("no lock data is left once every lock is gone - fences never go back", "[redis][keys]") {
  const RedisServer& server = shared_redis_server();
  auto engine = redis_engine(server.url());
  const std::string ns = test::unique_namespace("clean");
  std::mt19937 rng(7);
  const std::vector<std::string> dirs{"/", "/p", "/p/A", "/p/A/C", "/p/B", "/q/é", "/p/A/C/D/E"};
  const MatrixTable& m = engine->matrix();
  std::vector<Grant> held;
  std::uint64_t last_fence = 0;
  for (int i = 0; i < 400; ++i) {
    const OpInfo& op = m.ops[rng() % m.op_count];
    std::vector<Target> targets;
    for (std::size_t r = 0; r < op.role_count; ++r)
      targets.push_back(Target{std::string(op.roles[r]), dirs[rng() % dirs.size()] + (r ? "/d" : "")});
    const std::string owner = "o" + std::to_string(rng() % 3);
    AcquireResult res;
    try {
      res = engine->acquire(request(ns, owner, std::string(op.name), targets, (i % 5 == 0) ? 30ms : 30000ms));
    } catch (const InvalidRequest&) {
      continue;  // e.g. dst inside src
    }
    if (res.granted) {
      if (res.grant.holds == 1) {
        CHECK(res.grant.fence > last_fence);
        last_fence = res.grant.fence;
      }
      held.push_back(res.grant);
    }
    if (!held.empty() && rng() % 3 == 0) {
      const std::size_t k = rng() % held.size();
      if (rng() % 4 == 0) engine->force_release(ns, held[k].id);
      else engine->release(ns, held[k].id, held[k].token);
      held.erase(held.begin() + static_cast<std::ptrdiff_t>(k));
    }
  }
  for (const Grant& g : held) engine->release(ns, g.id, g.token);
  for (const LockInfo& l : engine->list(ns)) CHECK(engine->force_release(ns, l.id));
  std::this_thread::sleep_for(60ms);  // the 30 ms leases have ended
  for (int i = 0; i < 20 && ns_keys(server, ns) != kOnlyMeta; ++i) test::reap_by_a_write(*engine, ns);
  CHECK(ns_keys(server, ns) == kOnlyMeta);

  const auto next = engine->acquire(request(ns, "o", "create", {{"target", "/p"}}));
  REQUIRE(next.granted);
  CHECK(next.grant.fence > last_fence);
  CHECK(std::to_string(next.grant.fence) == server.command({"HGET", prefix_of(ns) + "meta", "fence"}).str);
}

TEST_CASE("expired leases are reaped in bounded steps, and never refuse anyone", "[redis][expiry]") {
  const RedisServer& server = shared_redis_server();
  auto engine = redis_engine(server.url());
  const std::string ns = test::unique_namespace("reap");
  const std::string exp_key = prefix_of(ns) + "exp";
  for (int i = 0; i < 100; ++i)
    REQUIRE(engine->acquire(request(ns, "o" + std::to_string(i), "upload",
                                    {{"target", "/exp/d" + std::to_string(i) + "/f"}}, 500ms)).granted);
  const auto live = engine->acquire(request(ns, "keeper", "upload", {{"target", "/live/f"}}));
  REQUIRE(live.granted);
  REQUIRE(server.command({"ZCARD", exp_key}).integer == 101);  // none expired while filling
  std::this_thread::sleep_for(600ms);
  // Expired locks are invisible before they are reaped.
  const auto listed = engine->list(ns);
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].id == live.grant.id);
  CHECK(server.command({"ZCARD", exp_key}).integer == 101);  // listing writes nothing: it reaps nothing
  // One writing call reaps at most redis::kReapLimit (32): a release that
  // finds nothing to release (a wrong token) reaps the first 32, then 32 more.
  REQUIRE(redis::kReapLimit == 32);  // the numbers of this test
  std::string wrong_token = live.grant.token;
  wrong_token[0] = wrong_token[0] == 'a' ? 'b' : 'a';
  CHECK_FALSE(engine->release(ns, live.grant.id, wrong_token));
  CHECK(server.command({"ZCARD", exp_key}).integer == 101 - redis::kReapLimit);
  CHECK_FALSE(engine->release(ns, live.grant.id, wrong_token));
  CHECK(server.command({"ZCARD", exp_key}).integer == 101 - 2 * redis::kReapLimit);

  // A delete of /exp meets the 36 expired uploads still indexed below it:
  // each witness found expired is removed and the check runs again.
  const auto del = engine->acquire(request(ns, "del", "delete_folder", {{"target", "/exp"}}));
  REQUIRE(del.granted);
  CHECK(server.command({"ZCARD", exp_key}).integer == 2);  // keeper and del
  CHECK(engine->release(ns, del.grant.id, del.grant.token));
  CHECK(engine->release(ns, live.grant.id, live.grant.token));
  CHECK(ns_keys(server, ns) == kOnlyMeta);
}

TEST_CASE("an expired lock cannot be released, renewed or re-entered - the same request starts a new lock",
          "[redis][expiry]") {
  auto engine = redis_engine(shared_redis_server().url());
  const std::string ns = test::unique_namespace("exp");
  const auto first = engine->acquire(request(ns, "o", "upload", {{"target", "/a"}}, 30ms));
  REQUIRE(first.granted);
  std::this_thread::sleep_for(60ms);
  CHECK_FALSE(engine->renew(ns, first.grant.id, first.grant.token));
  CHECK(engine->acquire(request(ns, "o", "upload", {{"target", "/a"}}, 30ms).reenter(first.grant)).not_holder);
  const auto again = engine->acquire(request(ns, "o", "upload", {{"target", "/a"}}, 30ms));
  REQUIRE(again.granted);
  CHECK(again.grant.id != first.grant.id);
  CHECK(again.grant.holds == 1);
  CHECK(again.grant.fence > first.grant.fence);
  std::this_thread::sleep_for(60ms);
  CHECK_FALSE(engine->release(ns, again.grant.id, again.grant.token));
  CHECK_FALSE(engine->force_release(ns, again.grant.id));
}

TEST_CASE("a connection closed by the server is replaced before sending", "[redis][connection]") {
  const RedisServer& server = shared_redis_server();
  auto engine = redis_engine(server.url(), nullptr, 2);
  const std::string ns = test::unique_namespace("kill");
  for (int round = 0; round < 5; ++round) {
    INFO(round);
    const auto r = engine->acquire(request(ns, "o", "upload", {{"target", "/r" + std::to_string(round)}}));
    REQUIRE(r.granted);
    REQUIRE(kill_engine_connections(server) >= 1);
    CHECK(engine->list(ns).size() == static_cast<std::size_t>(round + 1));
    REQUIRE(kill_engine_connections(server) >= 1);
    CHECK(engine->release(ns, r.grant.id, r.grant.token));
    CHECK(engine->acquire(request(ns, "o", "upload", {{"target", "/r" + std::to_string(round)}})).granted);
  }
}

TEST_CASE("a library flushed from the server is loaded again (Function not found)", "[redis][connection]") {
  const RedisServer& server = shared_redis_server();
  auto engine = redis_engine(server.url());
  const std::string ns = test::unique_namespace("flush");
  REQUIRE(engine->acquire(request(ns, "o", "upload", {{"target", "/a"}})).granted);
  REQUIRE_FALSE(server.command({"FUNCTION", "FLUSH"}).is_error());
  CHECK(engine->acquire(request(ns, "o", "upload", {{"target", "/b"}})).granted);
  CHECK(engine->list(ns).size() == 2);
}

TEST_CASE("a reply that does not come in time is a BackendError, never retried", "[redis][connection]") {
  RedisServer server({"--enable-debug-command", "yes"});
  auto engine = redis_engine(server.url(), nullptr, 2, 150ms);
  const std::string ns = test::unique_namespace("slow");
  REQUIRE(engine->acquire(request(ns, "o", "upload", {{"target", "/warm"}})).granted);
  std::thread sleeper([&] { server.command({"DEBUG", "SLEEP", "1.5"}); });
  std::this_thread::sleep_for(400ms);  // the server is busy sleeping now
  CHECK_THROWS_WITH(engine->acquire(request(ns, "late", "upload", {{"target", "/late"}})),
                    Catch::Contains("no reply") && Catch::Contains("effect is unknown"));
  sleeper.join();
  // The script ran once the server woke up: the effect was indeed unknown,
  // and a blind retry would have taken a second hold.
  const auto locks = engine->list(ns, "/late");
  REQUIRE(locks.size() == 1);
  CHECK(locks[0].holds == 1);
  CHECK(engine->acquire(request(ns, "o", "upload", {{"target", "/after"}})).granted);
}

TEST_CASE("a stopped server is a BackendError", "[redis][connection]") {
  auto server = std::make_unique<RedisServer>();
  auto engine = redis_engine(server->url());
  REQUIRE(engine->acquire(request("gone", "o", "upload", {{"target", "/a"}})).granted);
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
  REQUIRE(reentered.granted);
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
      REQUIRE(r.granted);
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

TEST_CASE("reentrant acquires share one lock until the last release", "[redis]") {
  const RedisServer& server = shared_redis_server();
  auto engine = redis_engine(server.url());
  const std::string ns = test::unique_namespace("re");
  auto req = request(ns, "o", "move_folder", {{"src", "/a"}, {"dst", "/b"}}, 20000ms);
  const auto first = engine->acquire(req);
  REQUIRE(first.granted);
  req.reenter(first.grant);
  auto longer = req;
  longer.ttl = 40000ms;
  const auto second = engine->acquire(longer);
  REQUIRE(second.granted);
  CHECK(second.grant.id == first.grant.id);
  CHECK(second.grant.token == first.grant.token);
  CHECK(second.grant.fence == first.grant.fence);
  CHECK(second.grant.holds == 2);
  CHECK(second.grant.expires_in > 39000ms);
  auto shorter = req;
  shorter.ttl = 1000ms;
  const auto third = engine->acquire(shorter);  // never shortens the lease
  CHECK(third.grant.holds == 3);
  CHECK(third.grant.expires_in > 39000ms);
  CHECK(engine->renew(ns, first.grant.id, first.grant.token));  // the lock's ttl is now 1000 ms
  CHECK(engine->list(ns)[0].expires_in <= 1000ms);
  for (int i = 0; i < 3; ++i) CHECK(engine->release(ns, first.grant.id, first.grant.token));
  CHECK_FALSE(engine->release(ns, first.grant.id, first.grant.token));
  CHECK(ns_keys(server, ns) == kOnlyMeta);
}

TEST_CASE("direct calls: numbers are decimal digits only, and proofs and keys work as docs/lua-protocol.md says",
          "[redis][lua][identity]") {
  const RedisServer& server = shared_redis_server();
  const std::string ns = test::unique_namespace("dec");
  FunctionCaller eval(server.url(), default_matrix(), ns);
  // ttl, reserve_ms, renew's ttl and list's limit: no exponent, hex, sign or
  // blank (a client sending 0x10 believing it decimal must not get 16 ms).
  for (const std::string& bad : std::vector<std::string>{"1e3", "0x10", " 10", "10 ", "+10", "-1", "1.0", "", "0", "1000000000000000"}) {
    INFO("ttl '" << bad << "'");
    CHECK(eval("acquire", {"o", "upload", bad, "i1", "t1", "", "", "", "/a"}).elements.at(0).str == "invalid");
    CHECK(eval("acquire", {"o", "upload", "100", "i1", "t1", "", "", "", "/a", "1", "wA", bad}).elements.at(0).str ==
          (bad == "0" ? "granted" : "invalid"));
    if (bad == "0") CHECK(eval("force_release", {"i1"}).elements.at(0).str == "released");
  }
  auto g = eval("acquire", {"o", "upload", "30000", "i2", "t2", "", "", "", "/b"});
  REQUIRE(g.elements.at(0).str == "granted");
  for (const std::string& bad : std::vector<std::string>{"1e3", "0x10", " 10", "-5"}) {
    INFO("renew/list '" << bad << "'");
    CHECK(eval("renew", {"i2", "t2", bad}).elements.at(0).str == "invalid");
    CHECK(eval("list", {"/", bad, ""}).elements.at(0).str == "invalid");
  }
  CHECK(eval("renew", {"i2", "t2", "40000"}).elements.at(1).integer == 40000);
  // Reentry by proof: id and token; a wrong token or unknown id answers
  // not_holder and nothing else; other targets are invalid.
  auto again = eval("acquire", {"p", "upload", "30000", "i3", "t3", "i2", "t2", "", "/b"});
  REQUIRE(again.elements.at(0).str == "granted");
  CHECK(again.elements.at(1).str == "i2");
  CHECK(again.elements.at(5).integer == 2);
  for (const auto& [id, token] : std::vector<std::pair<std::string, std::string>>{{"i2", "nope"}, {"zz", "t2"}}) {
    const auto r = eval("acquire", {"p", "upload", "30000", "i3", "t3", id, token, "", "/b"});
    REQUIRE(r.elements.size() == 1);
    CHECK(r.elements.at(0).str == "not_holder");
  }
  CHECK(eval("acquire", {"p", "upload", "30000", "i3", "t3", "i2", "t2", "", "/c"}).elements.at(0).str == "invalid");
  CHECK(eval("acquire", {"p", "upload", "30000", "i3", "t3", "i2", "", "", "/b"}).elements.at(0).str == "invalid");
  CHECK(eval("acquire", {"p", "upload", "30000", "i3", "t3", "i2", "t2", "k", "/b"}).elements.at(0).str == "invalid");
  // held: read-only, 1 or 0.
  CHECK(eval("held", {"i2", "t2"}).elements.at(1).integer == 1);
  CHECK(eval("held", {"i2", "x"}).elements.at(1).integer == 0);
  CHECK(eval("held", {"nope", "t2"}).elements.at(1).integer == 0);
  CHECK(eval("held", {"i2"}).elements.at(0).str == "invalid");
  // Idempotency keys: the same request gets its lock back; another is invalid.
  auto k1 = eval("acquire", {"o", "upload", "30000", "i4", "t4", "", "", "key.1", "/d"});
  REQUIRE(k1.elements.at(0).str == "granted");
  auto k2 = eval("acquire", {"o", "upload", "30000", "i5", "t5", "", "", "key.1", "/d"});
  REQUIRE(k2.elements.at(0).str == "granted");
  CHECK(k2.elements.at(1).str == "i4");
  CHECK(k2.elements.at(5).integer == 1);
  CHECK(eval("acquire", {"o", "upload", "30000", "i6", "t6", "", "", "key.1", "/e"}).elements.at(0).str == "invalid");
  CHECK(eval("acquire", {"o", "upload", "30000", "i6", "t6", "", "", "bad key", "/e"}).elements.at(0).str == "invalid");
  CHECK(server.command({"HGET", prefix_of(ns) + "locks", "k:key.1"}).str == "i4");
  CHECK(eval("force_release", {"i4"}).elements.at(0).str == "released");
  CHECK(server.command({"HEXISTS", prefix_of(ns) + "locks", "k:key.1"}).integer == 0);
}

TEST_CASE("conflicting locks are never held at once by concurrent clients", "[redis][concurrency]") {
  auto engine = redis_engine(shared_redis_server().url(), nullptr, 3);  // fewer connections than threads
  const std::string ns = test::unique_namespace("conc");
  std::atomic<int> inside{0}, overlaps{0}, granted{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 5; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 60; ++i) try {
        const bool folder = (i + t) % 2 == 0;
        const auto r = engine->acquire(request(ns, "t" + std::to_string(t), folder ? "delete_folder" : "upload",
                                               {{"target", folder ? "/hot" : "/hot/f" + std::to_string(t)}}));
        if (!r.granted) continue;
        ++granted;
        // A delete of /hot excludes everything under it; uploads exclude the delete.
        if (folder ? inside.fetch_add(100) != 0 : inside.fetch_add(1) >= 100) ++overlaps;
        std::this_thread::sleep_for(200us);
        inside -= folder ? 100 : 1;
        engine->release(ns, r.grant.id, r.grant.token);
      } catch (const std::exception&) {
        ++errors;  // reported below: an exception must not escape a thread
      }
    });
  for (auto& th : threads) th.join();
  CHECK(errors == 0);
  CHECK(overlaps == 0);
  CHECK(granted > 0);
  CHECK(engine->list(ns).empty());
}

TEST_CASE("the library's functions can be called directly, as docs/lua-protocol.md says", "[redis][lua]") {
  const RedisServer& server = shared_redis_server();
  const MatrixTable& m = default_matrix();
  const std::string ns = test::unique_namespace("lua");
  FunctionCaller eval(server.url(), m, ns);
  RedisConnection& c = eval.connection;
  auto r = eval("acquire", {"svc", "move_folder", "30000", "id1", "tok1", "", "", "", "/a", "/b"});
  REQUIRE(r.elements.size() == 6);
  CHECK(r.elements[0].str == "granted");
  CHECK(r.elements[1].str == "id1");
  CHECK(r.elements[2].str == "tok1");
  CHECK(r.elements[3].integer > 0);
  CHECK(r.elements[4].integer == 30000);
  CHECK(r.elements[5].integer == 1);
  r = eval("acquire", {"svc2", "upload", "30000", "id2", "tok2", "", "", "", "/a/x"});
  REQUIRE(r.elements.size() == 11);
  CHECK(r.elements[0].str == "refused");
  CHECK(r.elements[1].str == "id1");
  CHECK(r.elements[9].str == "held_ancestor");
  CHECK(r.elements[10].integer == 0);  // a held lock, not a waiter (redis_wait_test.cpp covers those)
  for (const std::vector<std::string>& bad :
       std::vector<std::vector<std::string>>{{"svc", "nope", "1", "i", "t", "", "", "", "/a"},
                                             {"svc", "upload", "1", "i", "t"},
                                             {"svc", "upload", "0", "i", "t", "", "", "", "/a"},
                                             {"svc", "upload", "1.5", "i", "t", "", "", "", "/a"},
                                             {"svc", "upload", "100", "i/d", "t", "", "", "", "/a"},
                                             {"svc", "upload", "100", "i", "t", "", "", "", "a"},
                                             {"svc", "upload", "100", "i", "t", "", "", "", "/a//b"},
                                             {"svc", "upload", "100", "i", "t", "", "", "", "/a/"},
                                             {"svc", "upload", "100", "i", "t", "", "", "", "/a/../b"},
                                             {"svc", "move_folder", "100", "i", "t", "", "", "", "/a", "/a/in"}}) {
    r = eval("acquire", bad);
    INFO(bad[1] << " " << bad.back());
    CHECK(r.elements.at(0).str == "invalid");
  }
  // Every key is declared, and must be the namespace's.
  const std::string fn = redis::library_for(m).function_prefix + "acquire";
  std::vector<std::string> argv{"FCALL", fn, "9"};
  for (const std::string& k : redis::namespace_keys(ns)) argv.push_back(k);
  argv.insert(argv.end(), {"svc", "upload", "100", "i", "t", "", "", "", "/z"});
  std::vector<std::string> wrong = argv;
  wrong[3] = "pl:nohashtag:meta";
  CHECK(c.command(wrong).elements.at(0).str == "invalid");
  wrong = argv;
  wrong[5] = prefix_of(ns + "x") + "locks";
  CHECK(c.command(wrong).elements.at(0).str == "invalid");
  wrong = argv;
  wrong[2] = "8";
  wrong.erase(wrong.begin() + 11);
  CHECK(c.command(wrong).elements.at(0).str == "invalid");
  r = eval("list", {"/", "10", ""});
  REQUIRE(r.elements.size() == 3);
  CHECK(r.elements[1].str.empty());  // the last page
  CHECK(r.elements[2].elements.at(0).str == "id1");
  CHECK(r.elements[2].elements.at(6).elements.size() == 4);  // src, /a, dst, /b
  CHECK(eval("renew", {"id1", "tok1", "5000"}).elements.at(1).integer == 5000);
  CHECK(eval("release", {"id1", "wrong"}).elements.at(0).str == "missing");
  r = eval("release", {"id1", "tok1"});
  CHECK(r.elements.at(0).str == "released");
  CHECK(r.elements.at(1).integer == 0);
  CHECK(ns_keys(server, ns) == kOnlyMeta);
}

TEST_CASE("a matrix compiled at run time drives Redis too: the library is built from the table", "[redis][matrix]") {
  const auto compiled = matrix::compile_matrix_file(PATHLOCK_SOURCE_DIR "/tests/data/refined.json");
  auto engine = redis_engine(shared_redis_server().url(), &compiled->table());
  const std::string ns = test::unique_namespace("runtime");
  const auto held = engine->acquire(request(ns, "a", "write", {{"target", "/x"}}));
  REQUIRE(held.granted);
  const auto same = engine->acquire(request(ns, "b", "write", {{"target", "/x"}}));  // write denies write, same path
  REQUIRE_FALSE(same.granted);
  CHECK(same.conflict.id == held.grant.id);
  CHECK(engine->acquire(request(ns, "b", "write", {{"target", "/x/y"}})).granted);  // allowed inside
  // Its own library, beside the shipped matrix's on the same server.
  CHECK(redis::library_for(compiled->table()).name != redis::library_for(default_matrix()).name);
  // The shipped matrix shares the namespace (layout 3): it lists refined's
  // locks by their own names, and any overlap with them is refused.
  auto shipped = redis_engine(shared_redis_server().url());
  const auto listed = shipped->list(ns);
  REQUIRE(listed.size() == 2);
  CHECK(listed[0].op == "write");
  const auto r = shipped->acquire(request(ns, "c", "create", {{"target", "/x/z"}}));
  REQUIRE_FALSE(r.granted);
  CHECK(r.conflict.id == held.grant.id);
  CHECK(r.conflict.op == "write");
  for (const auto& l : listed) CHECK(shipped->force_release(ns, l.id));
}

TEST_CASE("the functions enforce the C++ limits: the constant is accepted, one more refused", "[redis][lua][limits]") {
  const RedisServer& server = shared_redis_server();
  const std::string ns = test::unique_namespace("limits");
  FunctionCaller eval(server.url(), default_matrix(), ns);
  const auto status = [&](const std::vector<std::string>& args) { return eval("acquire", args).elements.at(0).str; };
  // A grant is released at once (by force: its id is the argument new_id).
  const auto granted = [&](std::vector<std::string> args) {
    const RedisReply r = eval("acquire", args);
    REQUIRE(r.elements.at(0).str == "granted");
    CHECK(eval("force_release", {r.elements.at(1).str}).elements.at(0).str == "released");
  };
  const auto acquire = [](std::string owner, std::string ttl, std::string id, std::string token, std::string path,
                          std::string reenter_id = "", std::string reenter_token = "", std::string key = "") {
    return std::vector<std::string>{owner, "upload", ttl, id, token, reenter_id, reenter_token, key, path};
  };
  const std::string ttl = std::to_string(kMaxTtl.count());
  const std::string over_ttl = std::to_string(kMaxTtl.count() + 1);
  granted(acquire(std::string(kMaxOwnerBytes, 'o'), "100", "i", "t", "/p"));
  CHECK(status(acquire(std::string(kMaxOwnerBytes + 1, 'o'), "100", "i", "t", "/p")) == "invalid");
  granted(acquire("o", ttl, "i", "t", "/p"));
  CHECK(status(acquire("o", over_ttl, "i", "t", "/p")) == "invalid");
  granted(acquire("o", "100", std::string(kMaxIdBytes, 'i'), "t", "/p"));
  CHECK(status(acquire("o", "100", std::string(kMaxIdBytes + 1, 'i'), "t", "/p")) == "invalid");
  granted(acquire("o", "100", "i", std::string(kMaxTokenBytes, 't'), "/p"));
  CHECK(status(acquire("o", "100", "i", std::string(kMaxTokenBytes + 1, 't'), "/p")) == "invalid");
  CHECK(status(acquire("o", "100", "i", "t", "/p", std::string(kMaxIdBytes, 'r'), "t")) == "not_holder");
  CHECK(status(acquire("o", "100", "i", "t", "/p", std::string(kMaxIdBytes + 1, 'r'), "t")) == "invalid");
  CHECK(status(acquire("o", "100", "i", "t", "/p", "r", std::string(kMaxTokenBytes, 't'))) == "not_holder");
  CHECK(status(acquire("o", "100", "i", "t", "/p", "r", std::string(kMaxTokenBytes + 1, 't'))) == "invalid");
  granted(acquire("o", "100", "i", "t", "/p", "", "", std::string(kMaxIdempotencyKeyBytes, 'k')));
  CHECK(status(acquire("o", "100", "i", "t", "/p", "", "", std::string(kMaxIdempotencyKeyBytes + 1, 'k'))) ==
        "invalid");
  std::string path;  // kMaxPathBytes: components of 255 and 15 bytes
  while (path.size() + 256 < kMaxPathBytes) path += "/" + std::string(kMaxComponentBytes, 'a');
  path += "/" + std::string(kMaxPathBytes - path.size() - 1, 'b');
  REQUIRE(path.size() == kMaxPathBytes);
  granted(acquire("o", "100", "i", "t", path));
  CHECK(status(acquire("o", "100", "i", "t", path + "b")) == "invalid");
  CHECK(status(acquire("o", "100", "i", "t", "/" + std::string(kMaxComponentBytes + 1, 'c'))) == "invalid");
  // reserve_ms: 0..kMaxTtl, capped at core::kMaxReservation.
  auto held = eval("acquire", {"h", "delete_folder", "30000", "h1", "ht", "", "", "", "/q"});
  REQUIRE(held.elements.at(0).str == "granted");
  auto wait = [&](const std::string& reserve) {
    auto args = acquire("w", "100", "i", "t", "/q");
    args.insert(args.end(), {"1", "w1", reserve});
    return eval("acquire", args).elements.at(0).str;
  };
  CHECK(wait(over_ttl) == "invalid");
  const auto server_ms = [&] {
    const RedisReply t = server.command({"TIME"});
    return std::stoll(t.elements.at(0).str) * 1000 + std::stoll(t.elements.at(1).str) / 1000;
  };
  const long long before = server_ms();
  CHECK(wait(ttl) == "refused");
  const RedisReply w = eval("waiters", {"/", std::to_string(kMaxWaiters)});
  const long long after = server_ms();
  REQUIRE(w.elements.size() == 2);
  const long long left = w.elements.at(1).elements.at(4).integer;
  CHECK(left <= core::kMaxReservation.count());
  CHECK(left >= core::kMaxReservation.count() - (after - before));
  CHECK(eval("leave", {"w1"}).elements.at(0).str != "invalid");
  CHECK(eval("waiters", {"/", std::to_string(kMaxWaiters + 1)}).elements.at(0).str == "invalid");
  CHECK(eval("blockers", {"upload", "/q", std::to_string(kMaxBlockers)}).elements.at(0).str == "blockers");
  CHECK(eval("blockers", {"upload", "/q", std::to_string(kMaxBlockers + 1)}).elements.at(0).str == "invalid");
  CHECK(eval("list", {"/", std::to_string(kMaxListLimit), ""}).elements.at(0).str == "locks");
  CHECK(eval("list", {"/", std::to_string(kMaxListLimit + 1), ""}).elements.at(0).str == "invalid");
  CHECK(eval("force_release", {"h1"}).elements.at(0).str == "released");
  // The namespace: 1..kMaxNamespaceBytes in the keys' hash tag.
  std::string long_ns = ns + std::string(kMaxNamespaceBytes, 'n');
  long_ns.resize(kMaxNamespaceBytes);
  FunctionCaller at_limit(server.url(), default_matrix(), long_ns);
  {
    const RedisReply r = at_limit("acquire", acquire("o", "100", "i", "t", "/p"));
    REQUIRE(r.elements.at(0).str == "granted");
    CHECK(at_limit("force_release", {"i"}).elements.at(0).str == "released");
  }
  FunctionCaller over_limit(server.url(), default_matrix(), long_ns + "n");
  CHECK(over_limit("acquire", acquire("o", "100", "i", "t", "/p")).elements.at(0).str == "invalid");
}

TEST_CASE("every reply has the layout of src/redis/replies.hpp", "[redis][lua]") {
  namespace reply = redis::reply;
  const RedisServer& server = shared_redis_server();
  const std::string ns = test::unique_namespace("layout");
  FunctionCaller eval(server.url(), default_matrix(), ns);
  const auto g = eval("acquire", {"svc", "move_folder", "30000", "id1", "tok1", "", "", "", "/a", "/b"});
  REQUIRE(g.elements.size() == reply::granted::size);
  CHECK(g.elements[reply::granted::status].str == "granted");
  CHECK(g.elements[reply::granted::id].str == "id1");
  CHECK(g.elements[reply::granted::token].str == "tok1");
  const long long fence = g.elements[reply::granted::fence].integer;
  CHECK(fence > 0);
  CHECK(g.elements[reply::granted::expires_in_ms].integer == 30000);
  CHECK(g.elements[reply::granted::holds].integer == 1);

  const std::vector<std::string> upload{"w", "upload", "30000", "id2", "tok2", "", "", "", "/a/x"};
  const auto refused = [](const RedisReply& r, const std::string& id, const std::string& op, const std::string& role,
                          const std::string& path, const std::string& owner, long long queued) {
    namespace f = reply::refused;
    REQUIRE(r.elements.size() == f::size);
    CHECK(r.elements[f::status].str == "refused");
    CHECK(r.elements[f::id].str == id);
    CHECK(r.elements[f::op].str == op);
    CHECK(r.elements[f::role].str == role);
    CHECK(r.elements[f::path].str == path);
    CHECK(r.elements[f::owner].str == owner);
    CHECK(r.elements[f::expires_in_ms].integer > 0);
    CHECK(r.elements[f::requested_role].str == "target");
    CHECK(r.elements[f::requested_path].str == "/a/x");
    CHECK(r.elements[f::queued].integer == queued);
  };
  auto waiting = upload;
  waiting.insert(waiting.end(), {"1", "w1", "2000"});
  const auto queued_by_lock = eval("acquire", waiting);
  refused(queued_by_lock, "id1", "move_folder", "src", "/a", "svc", 0);
  CHECK(queued_by_lock.elements[reply::refused::relation].str == "held_ancestor");
  // Once the lock is gone, a younger fair request that conflicts with w1 is
  // refused by w1's place in line.
  REQUIRE(eval("force_release", {"id1"}).elements.at(0).str == "released");
  const auto queued_by_waiter =
      eval("acquire", {"v", "delete_folder", "30000", "id3", "tok3", "", "", "", "/a/x", "1", "w2", "2000"});
  refused(queued_by_waiter, "w1", "upload", "target", "/a/x", "w", 1);
  CHECK(queued_by_waiter.elements[reply::refused::relation].str == "same");
  REQUIRE(eval("leave", {"w2"}).elements.at(0).str == "left");
  const auto again = eval("acquire", {"svc", "move_folder", "30000", "id4", "tok4", "", "", "", "/a", "/b", "0", "", "0"});
  REQUIRE(again.elements.at(0).str == "granted");
  const long long fence4 = again.elements[reply::granted::fence].integer;

  const auto list = eval("list", {"/", "10", ""});
  REQUIRE(list.elements.size() == reply::list::first_row + 1);
  CHECK(list.elements[reply::list::status].str == "locks");
  CHECK(list.elements[reply::list::next].str.empty());
  // Rows of list and waiters start alike (replies.hpp asserts it).
  const auto who = [](const RedisReply& row, std::size_t size, const std::string& id, const std::string& owner,
                      const std::string& op) {
    REQUIRE(row.elements.size() == size);
    CHECK(row.elements[reply::lock_row::id].str == id);
    CHECK(row.elements[reply::lock_row::owner].str == owner);
    CHECK(row.elements[reply::lock_row::op].str == op);
  };
  {
    namespace f = reply::lock_row;
    const RedisReply& l = list.elements[reply::list::first_row];
    who(l, f::size, "id4", "svc", "move_folder");
    CHECK(l.elements[f::fence].integer == fence4);
    CHECK(l.elements[f::holds].integer == 1);
    CHECK(l.elements[f::expires_in_ms].integer > 0);
    REQUIRE(l.elements[f::targets].elements.size() == 4);
    CHECK(l.elements[f::targets].elements[1].str == "/a");
  }
  const auto blockers = eval("blockers", {"delete_folder", "/a/x", "10"});
  CHECK(blockers.elements.at(reply::blockers::status).str == "blockers");
  CHECK(blockers.elements.at(reply::blockers::truncated).integer == 0);
  REQUIRE(blockers.elements.size() == reply::blockers::first_row + 2);  // the lock and w1
  {
    namespace f = reply::blocker_row;
    const RedisReply& held = blockers.elements[reply::blockers::first_row];
    REQUIRE(held.elements.size() == f::size);
    CHECK(held.elements[f::queued].integer == 0);
    CHECK(held.elements[f::id].str == "id4");
    CHECK(held.elements[f::owner].str == "svc");
    CHECK(held.elements[f::op].str == "move_folder");
    CHECK(held.elements[f::role].str == "src");
    CHECK(held.elements[f::path].str == "/a");
    CHECK(held.elements[f::requested_role].str == "target");
    CHECK(held.elements[f::requested_path].str == "/a/x");
    CHECK(held.elements[f::relation].str == "held_ancestor");
    CHECK(held.elements[f::fence].integer == fence4);
    CHECK(held.elements[f::holds].integer == 1);
    CHECK(held.elements[f::expires_in_ms].integer > 0);
    CHECK(held.elements[f::waited_ms].integer == 0);
    const RedisReply& waiter = blockers.elements[reply::blockers::first_row + 1];
    REQUIRE(waiter.elements.size() == f::size);
    CHECK(waiter.elements[f::queued].integer == 1);
    CHECK(waiter.elements[f::id].str == "w1");
    CHECK(waiter.elements[f::owner].str == "w");
    CHECK(waiter.elements[f::fence].integer == 0);
    CHECK(waiter.elements[f::holds].integer == 0);
  }
  const auto waiters = eval("waiters", {"/", "10"});
  CHECK(waiters.elements.at(reply::waiters::status).str == "waiters");
  REQUIRE(waiters.elements.size() == reply::waiters::first_row + 1);
  {
    namespace f = reply::waiter_row;
    const RedisReply& w = waiters.elements[reply::waiters::first_row];
    who(w, f::size, "w1", "w", "upload");
    CHECK(w.elements[f::waited_ms].integer >= 0);
    CHECK(w.elements[f::expires_in_ms].integer <= 2000);
    REQUIRE(w.elements[f::targets].elements.size() == 2);
    CHECK(w.elements[f::targets].elements[0].str == "target");
    CHECK(w.elements[f::targets].elements[1].str == "/a/x");
  }
  CHECK(eval("leave", {"w1"}).elements.at(0).str == "left");
  CHECK(eval("force_release", {"id4"}).elements.at(0).str == "released");
}

TEST_CASE("the functions run only the commands listed in COMMANDS, which probe and writable() check", "[redis][lua]") {
  std::string all, listed_block;
  for (const redis::LuaSource& source : redis::lua_sources()) {
    all += std::regex_replace(std::string(source.text), std::regex("--[^\n]*"), "");  // code, not comments
    if (source.name != "commands") continue;
    const std::string text(source.text);
    const std::size_t from = text.find("local COMMANDS = {");
    REQUIRE(from != std::string::npos);
    listed_block = text.substr(from, text.find("\n  }\n", from) - from);
  }
  const auto names = [](const std::string& text, const std::regex& pattern) {
    std::set<std::string> out;
    for (std::sregex_iterator it(text.begin(), text.end(), pattern), end; it != end; ++it) out.insert((*it)[1]);
    return out;
  };
  const std::set<std::string> listed = names(listed_block, std::regex(R"re(\{ "([A-Z]+)")re"));
  const std::set<std::string> used = names(all, std::regex(R"re((?:rcall|rpcall|chunked)\("([A-Z]+)")re"));
  REQUIRE(used.size() > 10);
  for (const std::string& command : used) {
    INFO(command);
    CHECK(listed.count(command) == 1);
  }
  // Every command is sent through rcall, rpcall or chunked, with its name
  // written out (chunked's own two rcall lines pass theirs on).
  CHECK(names(all, std::regex(R"re((redis\.p?call)\()re")).empty());
  const std::regex unnamed(R"re((?:rcall|rpcall|chunked)\((?!")([a-z]+))re");
  CHECK(names(all, unnamed) == std::set<std::string>{"cmd"});
}

TEST_CASE("every step of the Lua functions is a small function: at most 40 lines", "[redis][lua]") {
  // A function of a module starts with "local function" two spaces in
  // (inside the module's do block; std.lua's at column 0) and ends at the
  // next "end" with the same indentation (the style of lua/*.lua).
  std::size_t functions = 0;
  for (const redis::LuaSource& source : redis::lua_sources()) {
    std::size_t line_no = 0, start = 0;
    std::string name, indent;
    const std::string text(source.text);
    for (std::size_t at = 0; at < text.size();) {
      const std::size_t end = std::min(text.find('\n', at), text.size());
      const std::string line = text.substr(at, end - at);
      at = end + 1;
      ++line_no;
      const std::size_t first = line.find_first_not_of(' ');
      if (first <= 2 && line.compare(first, 15, "local function ") == 0) {
        indent = line.substr(0, first);
        name = line.substr(first + 15, line.find('(') - first - 15);
        start = line_no;
      } else if (!name.empty() && line.rfind(indent + "end", 0) == 0) {
        INFO("lua/" << source.name << ".lua: " << name << " (line " << start << ")");
        CHECK(line_no - start + 1 <= 40);
        ++functions;
        name.clear();
      }
    }
  }
  CHECK(functions > 50);
}
