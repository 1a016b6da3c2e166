// Behaviour of the LockEngine interface, run against every backend.
#include "conformance/fixture.hpp"

#include "refined_matrix.hpp"

#include <pathlock/engine.hpp>
#include <pathlock/factory.hpp>

#include <catch2/catch.hpp>


using namespace pathlock;
using namespace std::chrono_literals;

namespace {

using test::Fixture;

}  // namespace

TEST_CASE("the article's story: a folder move against work under it", "[engine]") {
  Fixture f;
  const auto upload = f.one("carol", "upload", "/p/A/C/D");
  REQUIRE(upload.granted());
  const auto move = f.two("alice", "move_folder", "/p/A/C", "/p/X");
  REQUIRE_FALSE(move.granted());
  CHECK(move.conflict.id == upload.grant.id);
  CHECK(move.conflict.op == "upload");
  CHECK(move.conflict.role == "target");
  CHECK(move.conflict.path == "/p/A/C/D");
  CHECK(move.conflict.owner == "carol");
  CHECK(move.conflict.requested_role == "src");
  CHECK(move.conflict.requested_path == "/p/A/C");
  CHECK(move.conflict.relation == Relation::held_descendant);
  CHECK(move.conflict.expires_in > 29000ms);
  CHECK(move.conflict.expires_in <= 30000ms);
  CHECK(f.one("dave", "create", "/p/A/C/D").granted());  // create and upload share the folder
  CHECK(f.engine->release(f.ns, upload.grant.id, upload.grant.token));
  CHECK_FALSE(f.two("alice", "move_folder", "/p/A/C", "/p/X").granted());  // dave still works there
}

TEST_CASE("while a folder moves, ancestors and descendants are locked, siblings are not", "[engine]") {
  Fixture f;
  REQUIRE(f.two("alice", "move_folder", "/p/A/C", "/p/X").granted());
  f.expect("b", {{"upload", "/p/A/C/D", false},
                 {"create", "/p/A", false},
                 {"create", "/p", false},
                 {"delete_folder", "/p", false},
                 {"rename_file", "/p/A/a.txt", true},
                 {"upload", "/p/B", true},
                 {"upload", "/p/A/CD", true},
                 {"upload", "/p/X2", true},
                 {"upload", "/q/A/C", true}});
  // The destination: B× for create, B√ for rename_file (row move_folder).
  f.expect("c", {{"create", "/p/X", false}, {"rename_file", "/p/X/f.txt", true}});
}

TEST_CASE("two uploads into one folder run in parallel, a delete of it waits", "[engine]") {
  Fixture f;
  CHECK(f.one("a", "upload", "/p/A").granted());
  CHECK(f.one("b", "upload", "/p/A").granted());
  CHECK(f.one("c", "create", "/p/A").granted());
  CHECK_FALSE(f.one("d", "delete_folder", "/p/A").granted());
  CHECK(f.held() == 3);
}

TEST_CASE("the grid is asymmetric: who came first decides", "[engine]") {
  Fixture f;
  REQUIRE(f.one("a", "rename_file", "/p/A/x.txt").granted());
  CHECK(f.one("b", "rename_folder", "/p/A").granted());  // rename_file held: rename_folder √
  Fixture g;
  REQUIRE(g.one("b", "rename_folder", "/p/A").granted());
  CHECK_FALSE(g.one("a", "rename_file", "/p/A/x.txt").granted());  // rename_folder held: rename_file ×
}

TEST_CASE("a request takes all of its targets or none", "[engine]") {
  Fixture f;
  REQUIRE(f.one("a", "delete_folder", "/p/B").granted());
  const auto move = f.two("b", "move_folder", "/p/A", "/p/B");
  REQUIRE_FALSE(move.granted());
  CHECK(move.conflict.requested_role == "dst");
  CHECK(f.held() == 1);
  // /p/A was not taken by the refused request.
  CHECK(f.one("c", "rename_folder", "/p/A").granted());
}

TEST_CASE("a request's own targets are not checked against each other", "[engine]") {
  Fixture f;
  CHECK(f.two("a", "move_folder", "/p/A/B", "/p").granted());
  CHECK(f.two("a", "copy_file", "/q/a.txt", "/q").granted());
}

TEST_CASE("bad input is a clear error and changes nothing", "[engine]") {
  Fixture f;
  REQUIRE(f.one("a", "upload", "/p/A").granted());
  auto bad = [&](LockRequest r, const char* message) {
    INFO(message);
    CHECK_THROWS_WITH(f.engine->acquire(r), Catch::Contains(message));
    CHECK(f.held() == 1);
  };
  const std::string ns = f.ns;
  bad({ns, "o", "explode", {{"target", "/p"}}}, "unknown operation 'explode'");
  bad({ns, "o", "move_folder", {{"src", "/p/A"}}}, "operation 'move_folder' takes 2 target(s) (src, dst), got 1");
  bad({ns, "o", "upload", {{"src", "/p/A"}}}, "operation 'upload' has no role 'src'");
  bad({ns, "o", "move_file", {{"src", "/p/a"}, {"src", "/p/b"}}}, "role 'src' given twice");
  bad({ns, "o", "upload", {{"target", "p/A"}}}, "target path: path 'p/A' is not absolute");
  bad({ns, "o", "upload", {{"target", "/p/../A"}}}, "'..' component");
  bad({ns, "o", "move_folder", {{"src", "/p/A"}, {"dst", "/p/A/sub"}}},
      "move_folder: dst '/p/A/sub' is inside src '/p/A'");
  bad({ns, "o", "copy_folder", {{"src", "/p/A"}, {"dst", "/p/A/"}}}, "copy_folder: dst '/p/A' is the same as src '/p/A'");
  bad({ns, "o", "upload", {{"target", "/p"}}, 0ms}, "ttl 0 ms is outside");
  bad({ns, "o", "upload", {{"target", "/p"}}, -5ms}, "ttl -5 ms is outside");
  bad({ns, "o", "upload", {{"target", "/p"}}, kMaxTtl + 1ms}, "is outside");
  bad({ns, "", "upload", {{"target", "/p"}}}, "owner is empty");
  bad({ns, "bad\nowner", "upload", {{"target", "/p"}}}, "owner has control character");
  bad({"", "o", "upload", {{"target", "/p"}}}, "namespace is empty");
  bad({"a{b}", "o", "upload", {{"target", "/p"}}}, "outside [A-Za-z0-9._:-]");
  CHECK_THROWS_AS(f.engine->renew(ns, "x", "y", 0ms), InvalidRequest);
  CHECK_THROWS_AS(f.engine->list(ns, "relative"), InvalidRequest);
  CHECK_THROWS_AS(f.engine->release("bad ns", "x", "y"), InvalidRequest);
}

TEST_CASE("only the holder releases or renews", "[engine]") {
  Fixture f;
  const auto g = f.one("a", "upload", "/p/A");
  REQUIRE(g.granted());
  CHECK_FALSE(f.engine->release(f.ns, g.grant.id, "not-the-token"));
  CHECK_FALSE(f.engine->renew(f.ns, g.grant.id, "not-the-token", 1000ms));
  CHECK_FALSE(f.engine->release(f.ns, "no-such-id", g.grant.token));
  CHECK_FALSE(f.engine->release(test::unique_namespace("other"), g.grant.id, g.grant.token));
  CHECK(f.held() == 1);
  CHECK(f.engine->release(f.ns, g.grant.id, g.grant.token));
  CHECK_FALSE(f.engine->release(f.ns, g.grant.id, g.grant.token));
  CHECK(f.held() == 0);
  CHECK(f.one("b", "delete_folder", "/p/A").granted());
}

TEST_CASE("leases expire - renewal keeps them", "[engine][expiry]") {
  Fixture f{test::manual_time};
  const Millis lease = 1000ms;
  // The renewed lock is taken first: without its renewal it would end first.
  const auto renewed = f.one("b", "upload", "/p/B", lease);
  const auto short_lease = f.one("a", "upload", "/p/A", lease);
  REQUIRE((short_lease.granted() && renewed.granted()));
  CHECK_FALSE(f.one("c", "delete_folder", "/p/A").granted());
  f.let_pass(lease / 2);
  CHECK(f.engine->renew(f.ns, renewed.grant.id, renewed.grant.token, 30 * lease));
  REQUIRE(f.until_expired(short_lease.grant, lease / 2));
  CHECK(f.one("c", "delete_folder", "/p/A").granted());  // expired, so free
  CHECK_FALSE(f.engine->release(f.ns, short_lease.grant.id, short_lease.grant.token));
  CHECK_FALSE(f.engine->renew(f.ns, short_lease.grant.id, short_lease.grant.token));
  CHECK_FALSE(f.one("c", "delete_folder", "/p/B").granted());  // renewed, still held
  const auto locks = f.engine->list(f.ns);
  REQUIRE(locks.size() == 2);
  CHECK(locks[0].id == renewed.grant.id);
  CHECK(locks[0].expires_in > 20 * lease);
}

TEST_CASE("renew without a ttl uses the lock's own", "[engine][expiry]") {
  Fixture f{test::manual_time};
  const Millis lease = 1000ms;
  const auto g = f.one("a", "upload", "/p/A", lease);
  REQUIRE(g.granted());
  for (int i = 0; i < 4; ++i) {  // 1.6 leases in all: held only because renewed
    f.let_pass(lease * 2 / 5);
    REQUIRE(f.engine->renew(f.ns, g.grant.id, g.grant.token));
  }
  const auto locks = f.engine->list(f.ns);
  REQUIRE(locks.size() == 1);
  CHECK(locks[0].expires_in > lease / 2);  // renewed for the lock's own ttl, not less
  CHECK(locks[0].expires_in <= lease);     // nor more
}

TEST_CASE("fencing tokens strictly increase per namespace", "[engine]") {
  Fixture f;
  std::uint64_t last = 0;
  for (int i = 0; i < 20; ++i) {
    const auto g = f.one("a", "upload", "/p/" + std::to_string(i));
    REQUIRE(g.granted());
    CHECK(g.grant.fence > last);
    last = g.grant.fence;
    if (i % 2) CHECK(f.engine->release(f.ns, g.grant.id, g.grant.token));
  }
}

TEST_CASE("namespaces are isolated", "[engine]") {
  Fixture f;
  const std::string other = test::unique_namespace("other");
  REQUIRE(f.one("a", "delete_folder", "/p").granted());
  CHECK(f.engine->acquire(LockRequest{other, "b", "upload", {{"target", "/p/A"}}}).granted());
  CHECK(f.engine->list(other).size() == 1);
  CHECK(f.held() == 1);
}

TEST_CASE("list returns the locks under a prefix, by fence", "[engine]") {
  Fixture f;
  const auto a = f.one("a", "upload", "/p/A/x");
  const auto ab = f.one("b", "upload", "/p/AB");
  const auto mv = f.two("c", "copy_file", "/q/a.txt", "/p/A");
  const auto root = f.one("d", "upload", "/");
  REQUIRE((a.granted() && ab.granted() && mv.granted() && root.granted()));
  const auto under = f.engine->list(f.ns, "/p/A");
  REQUIRE(under.size() == 2);
  CHECK(under[0].id == a.grant.id);
  CHECK(under[1].id == mv.grant.id);
  CHECK(under[1].op == "copy_file");
  REQUIRE(under[1].targets.size() == 2);
  CHECK(under[1].targets[0].role == "src");
  CHECK(under[1].targets[0].path == "/q/a.txt");
  CHECK(under[1].targets[1].path == "/p/A");
  CHECK(f.engine->list(f.ns, "/p/A/").size() == 2);
  CHECK(f.engine->list(f.ns, "/nothing").empty());
  CHECK(f.engine->list(f.ns, "/").size() == 4);
  CHECK(f.engine->list(test::unique_namespace("empty")).empty());
}

TEST_CASE("force_release drops a lock whatever its holds", "[engine]") {
  Fixture f;
  const auto g = f.one("a", "delete_folder", "/p/A");
  REQUIRE(f.engine->acquire(f.request_on("a", "delete_folder", "/p/A").reenter(g.grant)).grant.holds == 2);
  CHECK(f.engine->force_release(f.ns, g.grant.id));
  CHECK_FALSE(f.engine->force_release(f.ns, g.grant.id));
  CHECK(f.held() == 0);
  CHECK(f.one("b", "upload", "/p/A").granted());
}

TEST_CASE("unicode and metacharacters are plain names", "[engine]") {
  Fixture f;
  const std::string meta = "/p/-.%()[]*+?^$";
  f.expect("a", {{"delete_folder", meta, true}, {"delete_folder", "/项目/文件夹", true},
                 {"delete_folder", "/p/{x}/A C", true}});
  f.expect("b", {{"upload", meta + "/x", false},
                 {"upload", "/p/-.%()[]*+?^", true},    // a prefix string, another name
                 {"upload", "/p/x-.%()[]*+?^$", true},  // a suffix string, another name
                 {"upload", "/p/.%", true},
                 {"upload", "/项目/文件夹/子", false},
                 {"upload", "/项目/文件", true},
                 {"upload", "/p/{x}/A C/d", false},
                 {"upload", "/p/{x}/A", true}});
}

TEST_CASE("the root path is a lock path like any other", "[engine]") {
  Fixture f;
  REQUIRE(f.one("a", "upload", "/p/A").granted());
  const auto all = f.one("b", "delete_folder", "/");
  REQUIRE_FALSE(all.granted());
  CHECK(all.conflict.relation == Relation::held_descendant);
}

TEST_CASE("a consumer's matrix with refinements is enforced as compiled", "[engine][refined]") {
  const test::BackendUnderTest backend = test::each_backend();
  auto engine = backend.make(&test_matrices::refined::kMatrix);
  const std::string ns = test::unique_namespace("refined");
  auto take = [&](const char* owner, const char* op, std::vector<Target> t) {
    return engine->acquire(LockRequest{ns, owner, op, std::move(t)});
  };
  REQUIRE(take("a", "write", {{"target", "/d/x"}}).granted());
  CHECK_FALSE(take("b", "write", {{"target", "/d/x"}}).granted());   // same: deny
  CHECK(take("b", "write", {{"target", "/d/x/y"}}).granted());       // held ancestor: allow
  CHECK(take("b", "move", {{"src", "/e"}, {"dst", "/d/x/z"}}).granted());    // dst inside: allow
  CHECK_FALSE(take("b", "move", {{"src", "/e2"}, {"dst", "/d/x"}}).granted());  // dst same: deny
  CHECK_FALSE(take("b", "move", {{"src", "/d/x/q"}, {"dst", "/f"}}).granted());  // src: deny
  CHECK(engine->matrix().name == "refined-test");
}

TEST_CASE("regression: a lock that reuses a released lock's storage starts with one hold", "[engine]") {
  // The embedded backend recycles lock slots; a recycled lock once kept the
  // old hold count (0), so its release never removed it.
  Fixture f;
  for (int i = 0; i < 3; ++i) {
    const auto g = f.one("a", "upload", "/p/" + std::to_string(i));
    REQUIRE(g.granted());
    CHECK(g.grant.holds == 1);
    REQUIRE(f.engine->release(f.ns, g.grant.id, g.grant.token));
    CHECK(f.held() == 0);
  }
}

TEST_CASE("ids of released locks do not come back", "[engine]") {
  Fixture f;
  const auto first = f.one("a", "upload", "/p/A");
  REQUIRE(f.engine->release(f.ns, first.grant.id, first.grant.token));
  const auto second = f.one("a", "upload", "/p/A");
  REQUIRE(second.granted());
  CHECK(second.grant.id != first.grant.id);
  CHECK_FALSE(f.engine->release(f.ns, first.grant.id, first.grant.token));
  CHECK_FALSE(f.engine->force_release(f.ns, first.grant.id));
  CHECK_FALSE(f.engine->release(f.ns, "zz-1", second.grant.token));
  CHECK_FALSE(f.engine->release(f.ns, "-", second.grant.token));
  CHECK(f.held() == 1);
}
