// `pathlock admin why|locks|waiters|force-release|status` against real
// servers, standalone and cluster, as an operator runs them at 3 a.m.: the
// answers are exactly what the engine lists, bad input exits 1 or 2 with a
// message and changes nothing, the read-only commands work for a user with
// read rights only, and status counts only live locks.
#include "admin.hpp"

#include "support/admin_status.hpp"
#include "support/backends.hpp"
#include "support/redis_server.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <sstream>
#include <thread>

using namespace pathlock;
using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

using Run = test::AdminRun;

Run admin(const std::vector<std::string>& args) { return test::admin_run(args); }

// why: /p/A/C is blocked by the move on /p/A, which `locks /p/A/C` (at or
// inside the prefix) does not show; without --op, which operations it refuses.
void check_why(const std::string& url, const std::string& ns, const Grant& mover) {
  const Run why = admin({"why", "--redis", url, "--namespace", ns, "--op", "upload", "/p/A/C"});
  REQUIRE(why.status == 0);
  REQUIRE(why.lines.size() == 2);
  CHECK(why.lines[0]["kind"] == "lock");
  CHECK(why.lines[0]["id"] == mover.id);
  CHECK(why.lines[0]["owner"] == "alice");
  CHECK(why.lines[0]["op"] == "move_folder");
  CHECK(why.lines[0]["role"] == "src");
  CHECK(why.lines[0]["path"] == "/p/A");
  CHECK(why.lines[0]["relation"] == "held_ancestor");
  CHECK(why.lines[0]["fence"] == mover.fence);
  CHECK(why.lines[1] == json{{"blocked", true}, {"blockers", 1}, {"truncated", false}});
  // Without --op: what refuses any operation on the path, and which.
  const Run any = admin({"why", "--redis", url, "--namespace", ns, "/p/A/C"});
  REQUIRE(any.status == 0);
  REQUIRE(any.lines.size() == 2);
  CHECK(any.lines[0]["id"] == mover.id);
  const auto refuses = any.lines[0]["refuses"].get<std::vector<std::string>>();
  CHECK(std::find(refuses.begin(), refuses.end(), "upload") != refuses.end());
  CHECK(std::find(refuses.begin(), refuses.end(), "delete_folder") != refuses.end());
  const Run free = admin({"why", "--redis", url, "--namespace", ns, "--op", "upload", "/elsewhere"});
  REQUIRE(free.status == 0);
  CHECK(free.lines.back()["blocked"] == false);
  std::ostringstream text, err;
  REQUIRE(cli::run_admin({"why", "--redis", url, "--namespace", ns, "--op", "upload", "/p/A/C", "--format", "text"},
                         text, err) == 0);
  CHECK(text.str().find("held by alice: move_folder src /p/A (above it)") != std::string::npos);
  // --converts: the mover converted never meets itself; converted to a
  // delete of /q, bob's upload in it refuses it.
  const Run itself = admin({"why", "--redis", url, "--namespace", ns, "--op", "upload", "--converts", mover.id, "/p/A/C"});
  REQUIRE(itself.status == 0);
  CHECK(itself.lines.back() == json{{"blocked", false}, {"blockers", 0}, {"truncated", false}});
  const Run conv = admin({"why", "--redis", url, "--namespace", ns, "--op", "delete_folder", "--converts", mover.id, "/q"});
  REQUIRE(conv.status == 0);
  REQUIRE(conv.lines.size() == 2);
  CHECK(conv.lines[0]["owner"] == "bob");
  CHECK(conv.lines[0]["relation"] == "held_descendant");
  CHECK(admin({"why", "--redis", url, "--namespace", ns, "--converts", mover.id, "/q"}).status == 2);
}

// locks: exactly what the engine lists, paged by --limit, under a prefix.
void check_locks(const std::string& url, const std::string& ns, LockEngine& engine) {
  const Run locks = admin({"locks", "--redis", url, "--namespace", ns});
  REQUIRE(locks.status == 0);
  const auto listed = engine.list(ns);
  REQUIRE(locks.lines.size() == listed.size());
  for (std::size_t i = 0; i < listed.size(); ++i) CHECK(locks.lines[i]["id"] == listed[i].id);
  const Run page = admin({"locks", "--redis", url, "--namespace", ns, "--limit", "1"});
  REQUIRE(page.lines.size() == 2);
  CHECK(page.lines[1]["truncated"] == true);
  CHECK(admin({"locks", "--redis", url, "--namespace", ns, "/q"}).lines.size() == 1);
}

// waiters: the one waiting request (carol's delete of /q), exactly as the
// engine lists it, once it is in line.
void check_waiter(const std::string& url, const std::string& ns, LockEngine& engine) {
  std::vector<json> line;
  for (int i = 0; i < 500 && line.empty(); ++i) {
    line = admin({"waiters", "--redis", url, "--namespace", ns}).lines;
    if (line.empty()) std::this_thread::sleep_for(5ms);
  }
  REQUIRE(line.size() == 1);
  CHECK(line[0]["owner"] == "carol");
  CHECK(line[0]["op"] == "delete_folder");
  CHECK(line[0]["targets"]["target"] == "/q");
  CHECK(line[0]["id"] == engine.waiters(ns)[0].id);
}

// top: one screen (--iterations 1: no clearing) with the wait and its blocker.
void check_top(const std::string& url, const std::string& ns) {
  std::ostringstream screen, screen_err;
  REQUIRE(cli::run_admin({"top", "--redis", url, "--namespace", ns, "--iterations", "1"}, screen, screen_err) == 0);
  INFO(screen.str());
  CHECK(screen.str().find("2 live locks, 1 waiting") != std::string::npos);
  CHECK(screen.str().find("carol delete_folder /q") != std::string::npos);
  CHECK(screen.str().find("blocked by target /q: held by bob: upload target /q/x (below it)") != std::string::npos);
  CHECK(screen.str().find("\x1b[2J") == std::string::npos);
}

void operator_story(const std::string& url) {
  const std::string ns = test::unique_namespace("admin");
  auto engine = test::redis_engine(url);
  const Grant mover = test::granted(*engine, {ns, "alice", "move_folder", {{"src", "/p/A"}, {"dst", "/p/B"}}});
  const Grant upload = test::granted(*engine, {ns, "bob", "upload", {{"target", "/q/x"}}});
  check_why(url, ns, mover);
  check_locks(url, ns, *engine);

  // A waiting delete of /q, blocked by the upload.
  AcquireResult waited;
  std::thread waiter([&] {  // asserts after join
    auto own = test::redis_engine(url);
    waited = own->acquire({ns, "carol", "delete_folder", {{"target", "/q"}}, 30000ms, 10000ms});
  });
  check_waiter(url, ns, *engine);
  check_top(url, ns);

  // force-release: the upload goes, the waiter gets in; said on stderr.
  const Run forced = admin({"force-release", "--redis", url, "--namespace", ns, upload.id});
  CHECK(forced.status == 0);
  CHECK(forced.lines.at(0)["released"] == true);
  CHECK(forced.err.find("force-release of lock " + upload.id) != std::string::npos);
  waiter.join();
  CHECK(waited.granted());
  CHECK(admin({"force-release", "--redis", url, "--namespace", ns, upload.id}).lines.at(0)["released"] == false);
  CHECK(admin({"waiters", "--redis", url, "--namespace", ns}).lines.empty());
}

}  // namespace

TEST_CASE("admin: why, locks, waiters and force-release on a standalone server", "[redis][admin]") {
  operator_story(test::shared_redis_server().url());
}

TEST_CASE("admin: why, locks, waiters and force-release on a cluster", "[redis][admin][cluster]") {
  operator_story(test::shared_cluster().url());
}

TEST_CASE("admin: bad input exits 1 or 2 with a message and changes nothing", "[redis][admin]") {
  const std::string url = test::shared_redis_server().url();
  const std::string ns = test::unique_namespace("admin-bad");
  auto engine = test::redis_engine(url);
  REQUIRE(engine->acquire({ns, "alice", "upload", {{"target", "/a"}}}).granted());
  const std::vector<std::pair<std::vector<std::string>, int>> cases{
      {{"why", "--redis", url, "--namespace", ns}, 2},                                    // no path
      {{"why", "--redis", url, "--namespace", ns, "/a", "/b", "/c"}, 2},                  // no op takes 3 paths
      {{"top", "--redis", url, "--namespace", ns, "--iterations", "0"}, 2},
      {{"why", "--redis", url, "--namespace", ns, "--op", "explode", "/a"}, 1},           // unknown op
      {{"why", "--redis", url, "--namespace", ns, "--op", "upload", "rel"}, 1},           // bad path
      {{"why", "--redis", url, "--namespace", ns, "--op", "move_folder", "/a"}, 2},       // a path missing
      {{"why", "--redis", url, "--namespace", "bad ns", "--op", "upload", "/a"}, 1},      // bad namespace
      {{"why", "--redis", url, "--namespace", "never-used-ns", "--op", "upload", "/a"}, 1},  // unknown namespace
      {{"locks", "--redis", url, "--namespace", "never-used-ns"}, 1},
      {{"force-release", "--redis", url, "--namespace", "never-used-ns", "x"}, 1},
      {{"why", "--redis", url, "--namespace", ns, "--op", "upload", "/a", "--format", "xml"}, 2},
      {{"locks", "--redis", url, "--namespace", ns, "--limit", "0"}, 2},
      {{"locks", "--redis", url, "--namespace", ns, "--bogus", "1"}, 2},
      {{"locks", "--redis", url}, 2},                                                     // no --namespace
      {{"waiters", "--redis", url, "--namespace", ns, "--limit", "x"}, 2},
      {{"force-release", "--redis", url, "--namespace", ns}, 2},                          // no id
      {{"force-release", "--redis", url, "--namespace", ns, "no-such-lock"}, 0},          // well formed, not held
      // Malformed ids: exit 1, nothing sent, no audit line (a forged one least of all).
      {{"force-release", "--redis", url, "--namespace", ns, "bad id!"}, 1},
      {{"force-release", "--redis", url, "--namespace", ns, ""}, 1},
      {{"force-release", "--redis", url, "--namespace", ns, std::string(5000, 'a')}, 1},
      {{"force-release", "--redis", url, "--namespace", ns, "zz\npathlock: warning: x released\x1b[2J"}, 1},
      {{"status", "--redis", url, "--namespace", "bad name!"}, 1},                        // as the other commands
      {{"status", "--redis", url, "--namespace", "a*"}, 1},
      {{"status", "--redis", url, "--tls-min-version", "1.4"}, 2},                        // not a TLS word
      {{"status", "--redis", url, "--tls-insecure-skip-verify", "maybe"}, 2},
  };
  for (const auto& [args, status] : cases) {
    INFO(args[0] << " " << args.back().substr(0, 40));
    const Run r = admin(args);
    CHECK(r.status == status);
    if (status != 0) CHECK(r.err.find("error: ") == 0);
    if (args[0] == "force-release" && status == 1 && args[4] == ns)
      CHECK(r.err == "error: id must be 1..64 characters of [A-Za-z0-9-]\n");
  }
  CHECK(engine->list(ns).size() == 1);
}

TEST_CASE("admin: why, waiters and status need read rights only, and status counts only live locks",
          "[redis][admin]") {
  test::RedisServer server;
  test::RedisConnection c(server.url());
  const std::string ns = "readonly";
  auto engine = test::redis_engine(server.url());
  const auto held = engine->acquire({ns, "alice", "move_folder", {{"src", "/p/A"}, {"dst", "/p/B"}}});
  REQUIRE(held.granted());
  const auto brief = engine->acquire({ns, "bob", "upload", {{"target", "/brief"}}, 100ms});
  REQUIRE(brief.granted());
  REQUIRE_FALSE(c.command({"ACL", "SETUSER", "reader", "on", ">pw", "~*", "&*", "-@all", "+@read", "+fcall",
                           "+fcall_ro", "+function|list", "+time", "+scan", "+ping", "+info", "+cluster|slots"})
                    .is_error());
  const std::string hostport = server.url().substr(std::string("redis://").size());
  const std::string reader = "redis://reader:pw@" + hostport;
  const auto before = c.command({"DUMP", "pl:{readonly}:locks"}).str;
  const Run why = admin({"why", "--redis", reader, "--namespace", ns, "--op", "upload", "/p/A/C"});
  INFO(why.err);
  REQUIRE(why.status == 0);
  CHECK(why.lines.at(0)["id"] == held.grant.id);
  CHECK(admin({"waiters", "--redis", reader, "--namespace", ns}).status == 0);
  // The 100 ms lock has ended but nobody reaped it: not counted.
  std::this_thread::sleep_for(200ms);
  const auto status = test::admin_status({"status", "--redis", reader, "--namespace", ns});
  REQUIRE(status.size() == 1);
  REQUIRE(status[0]["matrices"].size() == 1);
  CHECK(status[0]["matrices"][0]["locks"] == 1);
  CHECK(c.command({"ZCARD", "pl:{readonly}:exp"}).integer == 2);  // still stored: status reaped nothing
  CHECK(c.command({"DUMP", "pl:{readonly}:locks"}).str == before);
  // A writing command with the reader fails cleanly, naming the permission.
  const Run forced = admin({"force-release", "--redis", reader, "--namespace", ns, held.grant.id});
  CHECK(forced.status == 1);
  CHECK(engine->list(ns).size() == 1);
}

// `admin limits` (issue 47.4): an operator sets a namespace's limits and the
// default, and sees each namespace's use against them; a service's engine
// on the same server is refused at the limit set; bad input exits 2 or 1
// and sets nothing.
TEST_CASE("admin: limits set, shown and enforced, the default and a namespace's own", "[redis][admin][tenant-limits]") {
  const std::string url = test::shared_redis_server().url();
  const std::string ns = test::unique_namespace("admin-limits");
  auto engine = test::redis_engine(url);
  const Run set = admin({"limits", "--redis", url, "--namespace", ns, "--set", "--locks", "2", "--owner-locks", "1"});
  REQUIRE(set.status == 0);
  CHECK(set.lines.at(0)["own"] == json{{"locks", 2}, {"places", nullptr}, {"owner_locks", 1}});
  CHECK(engine->acquire({ns, "alice", "upload", {{"target", "/a"}}}).granted());
  const AcquireResult over = engine->acquire({ns, "alice", "upload", {{"target", "/b"}}});
  REQUIRE(over.over_limit());
  CHECK(over.limit.limit == LimitKind::owner_locks);
  CHECK(engine->acquire({ns, "bob", "upload", {{"target", "/b"}}}).granted());
  CHECK(engine->acquire({ns, "carol", "upload", {{"target", "/c"}}}).limit.limit == LimitKind::locks);
  const Run shown = admin({"limits", "--redis", url, "--namespace", ns});
  REQUIRE(shown.status == 0);
  CHECK(shown.lines.at(0)["use"] == json{{"locks", 2}, {"places", 0}, {"owner_locks", 1}, {"owner", "alice"}});
  CHECK(shown.lines.at(0)["effective"] == shown.lines.at(0)["own"]);
  // The default, then the namespace's own taken away: the default applies.
  REQUIRE(admin({"limits", "--redis", url, "--default", "--set", "--locks", "1"}).status == 0);
  REQUIRE(admin({"limits", "--redis", url, "--namespace", ns, "--clear"}).status == 0);
  const Run cleared = admin({"limits", "--redis", url, "--namespace", ns});
  CHECK(cleared.lines.at(0)["own"].is_null());
  CHECK(cleared.lines.at(0)["effective"] == json{{"locks", 1}, {"places", nullptr}, {"owner_locks", nullptr}});
  auto fresh = test::redis_engine(url);  // reads the default at its first acquire
  CHECK(fresh->acquire({ns, "dave", "upload", {{"target", "/d"}}}).limit.max == 1);
  REQUIRE(admin({"limits", "--redis", url, "--default", "--set"}).status == 0);  // no limit: the default goes
  CHECK(admin({"limits", "--redis", url, "--default"}).lines.at(0) ==
        json{{"locks", nullptr}, {"places", nullptr}, {"owner_locks", nullptr}});
  for (const auto& [args, status] : std::vector<std::pair<std::vector<std::string>, int>>{
           {{"limits", "--redis", url}, 2},                                                  // neither
           {{"limits", "--redis", url, "--default", "--namespace", ns}, 2},                  // both
           {{"limits", "--redis", url, "--namespace", ns, "--locks", "3"}, 2},               // no --set
           {{"limits", "--redis", url, "--namespace", ns, "--set", "--clear"}, 2},
           {{"limits", "--redis", url, "--namespace", ns, "--set", "--locks", "-1"}, 2},
           {{"limits", "--redis", url, "--namespace", ns, "--set", "--locks", "1000000001"}, 2},
           {{"limits", "--redis", url, "--namespace", "bad ns!", "--set", "--locks", "1"}, 1},
       }) {
    INFO(args.back());
    CHECK(admin(args).status == status);
  }
  CHECK(admin({"limits", "--redis", url, "--namespace", ns}).lines.at(0)["own"].is_null());
}
