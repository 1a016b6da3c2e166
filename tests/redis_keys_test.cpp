// How the Redis backend keeps its locks in the server, against a real
// redis-server (support/redis_server.hpp; PATHLOCK_TEST_REDIS_URL selects an
// existing one): two matrices on one namespace, paths as data in the keys,
// namespaces apart, nothing left once the locks are gone, expired leases,
// reentry, concurrent clients, and a matrix compiled at run time.
#include "support/backends.hpp"
#include "support/lock_request.hpp"
#include "support/namespace_keys.hpp"
#include "support/redis_server.hpp"

#include "matrix/table.hpp"
#include "redis/library.hpp"

#include <pathlock/engine.hpp>
#include <pathlock/redis_admin.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace pathlock;
using namespace std::chrono_literals;
using namespace pathlock::test;  // servers, engines, requests and key helpers of support/

namespace {

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
  REQUIRE_FALSE(same.granted());
  CHECK(same.conflict.id == held.id);
  CHECK(same.conflict.op == "upload");
  CHECK(same.conflict.role == "target");
  CHECK(same.conflict.relation == Relation::same);
  const auto above = other->acquire(request(ns, "p", "delete_folder", {{"target", "/"}}));
  REQUIRE_FALSE(above.granted());
  CHECK(above.conflict.relation == Relation::held_descendant);
  CHECK(above.conflict.path == "/a/f");
  CHECK(other->list(ns).size() == 2);
  CHECK(cloud->list(ns).size() == 2);
  // Each matrix's own lock is refused to the other too (both directions).
  const auto back = cloud->acquire(request(ns, "o", "upload", {{"target", "/a/g"}}));
  REQUIRE_FALSE(back.granted());
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
  // (x: when the namespace's keys expire, docs/lua-protocol.md#expiry)
  CHECK(fields == std::vector<std::string>{"fence", "layout", "x"});
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
    if (r.granted()) {
      allowed_op = name;
      CHECK(cloud->release(ns, r.grant.id, r.grant.token));
    }
  }
  INFO("an operation the shipped matrix lets overlap a held upload: " << allowed_op);
  REQUIRE_FALSE(allowed_op.empty());
  const auto refused = cloud->acquire(request(ns, "q", allowed_op, {{"target", "/e/f"}}));
  REQUIRE_FALSE(refused.granted());  // the impostor's lock: any overlap conflicts
  CHECK(refused.conflict.id == foreign.id);
  REQUIRE(other->release(ns, foreign.id, foreign.token));
  // The impostor's tag left meta; now the shipped matrix alone decides.
  const auto now = cloud->acquire(request(ns, "q", allowed_op, {{"target", "/e/f"}}));
  CHECK(now.granted());
  CHECK(server.command({"HGET", prefix_of(ns) + "meta", "t:" + std::string(impostor_matrix().fingerprint)}).type ==
        test::RedisReply::Type::nil);
}

TEST_CASE("the functions read the matrices in use at every call: a tag taken behind an engine's back counts",
          "[redis][matrix]") {
  const RedisServer& server = shared_redis_server();
  const std::string ns = test::unique_namespace("race");
  auto engine = redis_engine(server.url());
  const auto held = engine->acquire(request(ns, "o", "upload", {{"target", "/a"}}));
  REQUIRE(held.granted());
  // The engine's matrix loses its tag behind its back (an operator edited
  // meta): its own locks then count as another matrix's, so an overlapping
  // request is refused ("any overlap"), never granted.
  const std::string fp(default_matrix().fingerprint);
  REQUIRE(server.command({"HDEL", prefix_of(ns) + "meta", "t:" + fp}).integer == 1);
  const auto r = engine->acquire(request(ns, "o", "upload", {{"target", "/a"}}));
  REQUIRE_FALSE(r.granted());
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
    REQUIRE(r.granted());  // none of these paths overlaps another
    grants.push_back(r.grant);
  }
  for (std::size_t i = 0; i < paths.size(); ++i) {
    INFO(paths[i]);
    const auto below = engine->acquire(request(ns, "p", "upload", {{"target", paths[i] + "/f"}}));
    REQUIRE_FALSE(below.granted());
    CHECK(below.conflict.id == grants[i].id);
    CHECK(below.conflict.path == paths[i]);
    CHECK(below.conflict.relation == Relation::held_ancestor);
    const auto listed = engine->list(ns, paths[i]);
    REQUIRE(listed.size() == 1);
    CHECK(listed[0].targets.at(0).path == paths[i]);
  }
  // A pattern character matches nothing but itself.
  CHECK(engine->acquire(request(ns, "p", "upload", {{"target", "/xa"}})).granted());
  CHECK(engine->acquire(request(ns, "p", "upload", {{"target", "/x1"}})).granted());

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
    REQUIRE(r.granted());
    // Each namespace has its own fence.
    CHECK(std::to_string(r.grant.fence) == server.command({"HGET", prefix_of(ns) + "meta", "fence"}).str);
    grants[ns] = r.grant;
  }
  CHECK_FALSE(engine->release(ns2, grants[ns1].id, grants[ns1].token));
  CHECK_FALSE(engine->force_release(ns3, grants[ns1].id));
  CHECK_FALSE(engine->renew(ns2, grants[ns1].id, grants[ns1].token));
  REQUIRE(engine->list(ns2).size() == 1);
  CHECK(engine->list(ns2)[0].id == grants[ns2].id);

  // redis_admin::key_pattern (public) matches every key of the three, and
  // only theirs.
  const std::vector<std::string> all = server.keys(redis_admin::key_pattern(base));
  CHECK(all.size() == ns_keys(server, ns1).size() + ns_keys(server, ns2).size() + ns_keys(server, ns3).size());
  for (const std::string& key : all) {
    INFO(key);
    const bool one_of = key.rfind(prefix_of(ns1), 0) == 0 || key.rfind(prefix_of(ns2), 0) == 0 ||
                        key.rfind(prefix_of(ns3), 0) == 0;
    CHECK(one_of);
  }
  CHECK(server.keys(redis_admin::key_pattern(base + ":sub")).size() == ns_keys(server, ns2).size());
  CHECK_THROWS_AS(redis_admin::key_pattern("a*"), InvalidRequest);
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
    if (res.granted()) {
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
  REQUIRE(next.granted());
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
                                    {{"target", "/exp/d" + std::to_string(i) + "/f"}}, 500ms)).granted());
  const auto live = engine->acquire(request(ns, "keeper", "upload", {{"target", "/live/f"}}));
  REQUIRE(live.granted());
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
  REQUIRE(del.granted());
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
  REQUIRE(first.granted());
  std::this_thread::sleep_for(60ms);
  CHECK_FALSE(engine->renew(ns, first.grant.id, first.grant.token));
  CHECK(engine->acquire(request(ns, "o", "upload", {{"target", "/a"}}, 30ms).reenter(first.grant)).not_holder());
  const auto again = engine->acquire(request(ns, "o", "upload", {{"target", "/a"}}, 30ms));
  REQUIRE(again.granted());
  CHECK(again.grant.id != first.grant.id);
  CHECK(again.grant.holds == 1);
  CHECK(again.grant.fence > first.grant.fence);
  std::this_thread::sleep_for(60ms);
  CHECK_FALSE(engine->release(ns, again.grant.id, again.grant.token));
  CHECK_FALSE(engine->force_release(ns, again.grant.id));
}

TEST_CASE("reentrant acquires share one lock until the last release", "[redis]") {
  const RedisServer& server = shared_redis_server();
  auto engine = redis_engine(server.url());
  const std::string ns = test::unique_namespace("re");
  auto req = request(ns, "o", "move_folder", {{"src", "/a"}, {"dst", "/b"}}, 20000ms);
  const auto first = engine->acquire(req);
  REQUIRE(first.granted());
  req.reenter(first.grant);
  auto longer = req;
  longer.ttl = 40000ms;
  const auto second = engine->acquire(longer);
  REQUIRE(second.granted());
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
        if (!r.granted()) continue;
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

TEST_CASE("a matrix compiled at run time drives Redis too: the library is built from the table", "[redis][matrix]") {
  const auto compiled = matrix::compile_matrix_file(PATHLOCK_SOURCE_DIR "/tests/data/refined.json");
  auto engine = redis_engine(shared_redis_server().url(), &compiled->table());
  const std::string ns = test::unique_namespace("runtime");
  const auto held = engine->acquire(request(ns, "a", "write", {{"target", "/x"}}));
  REQUIRE(held.granted());
  const auto same = engine->acquire(request(ns, "b", "write", {{"target", "/x"}}));  // write denies write, same path
  REQUIRE_FALSE(same.granted());
  CHECK(same.conflict.id == held.grant.id);
  CHECK(engine->acquire(request(ns, "b", "write", {{"target", "/x/y"}})).granted());  // allowed inside
  // Its own library, beside the shipped matrix's on the same server.
  CHECK(redis::library_for(compiled->table()).name != redis::library_for(default_matrix()).name);
  // The shipped matrix shares the namespace (layout 3): it lists refined's
  // locks by their own names, and any overlap with them is refused.
  auto shipped = redis_engine(shared_redis_server().url());
  const auto listed = shipped->list(ns);
  REQUIRE(listed.size() == 2);
  CHECK(listed[0].op == "write");
  const auto r = shipped->acquire(request(ns, "c", "create", {{"target", "/x/z"}}));
  REQUIRE_FALSE(r.granted());
  CHECK(r.conflict.id == held.grant.id);
  CHECK(r.conflict.op == "write");
  for (const auto& l : listed) CHECK(shipped->force_release(ns, l.id));
}
