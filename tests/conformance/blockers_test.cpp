// Why is this blocked (LockEngine::blockers, waiters): on every backend,
// against a brute-force reference built from list() and waiters(), and with
// nothing taken or changed. (docs/design.md#why-is-this-blocked)
#include "conformance/fixture.hpp"

#include <pathlock/admin.hpp>
#include <pathlock/path.hpp>

#include <algorithm>
#include <future>

#include <random>
#include <set>
#include <thread>
#include <tuple>

using namespace std::chrono_literals;

namespace pathlock {
namespace {

using test::Fixture;

// (queued, id, blocker role, blocker path, requested role, relation)
using Row = std::tuple<bool, std::string, std::string, std::string, std::string, Relation>;

Relation relation_of(const std::string& held, const std::string& requested) {
  if (held == requested) return Relation::same;
  return path_within(requested, held) ? Relation::held_ancestor : Relation::held_descendant;
}

// What blockers() must answer, from the listed locks and waiters.
std::set<Row> reference(LockEngine& engine, const std::string& ns, const std::string& op,
                        const std::vector<Target>& targets) {
  const MatrixTable& m = engine.matrix();
  const int req_op = m.op_index(op);
  std::set<Row> out;
  const auto check = [&](bool queued, const std::string& id, const std::string& held_op,
                         const std::vector<Target>& held_targets) {
    for (const Target& h : held_targets)
      for (const Target& t : targets) {
        const std::string path = normalize_path(t.path);
        if (!paths_overlap(h.path, path)) continue;
        const Relation rel = relation_of(h.path, path);
        if (m.refuses(rel, m.code_of(m.op_index(held_op), h.role), m.code_of(req_op, t.role)))
          out.insert(Row{queued, id, h.role, h.path, t.role, rel});
      }
  };
  for (const LockInfo& l : engine.list(ns)) check(false, l.id, l.op, l.targets);
  for (const WaiterInfo& w : engine.waiters(ns)) check(true, w.id, w.op, w.targets);
  return out;
}

std::set<Row> rows(const BlockersPage& page) {
  std::set<Row> out;
  for (const Blocker& b : page.blockers)
    out.insert(Row{b.queued, b.id, b.role, b.path, b.requested_role, b.relation});
  return out;
}

TEST_CASE("blockers: every held lock that refuses, as the brute-force reference says", "[engine][blockers]") {
  Fixture f;
  const MatrixTable& m = f.engine->matrix();
  const std::vector<std::string> paths{"/", "/a", "/a/b", "/a/b/c", "/a/c", "/b", "/b/a", "/a/b/c/d", "/ab"};
  std::mt19937 rng(4242);
  int granted = 0;
  for (int i = 0; i < 60; ++i) {
    const OpInfo& op = m.ops[rng() % m.op_count];
    std::vector<Target> targets;
    for (std::size_t r = 0; r < op.role_count; ++r)
      targets.push_back(Target{std::string(op.roles[r]), paths[rng() % paths.size()]});
    try {
      granted += f.engine->acquire(f.request("o" + std::to_string(i), std::string(op.name), targets)).granted();
    } catch (const InvalidRequest&) {
    }
  }
  REQUIRE(granted > 5);
  const auto before = f.engine->list(f.ns);
  std::size_t nonempty = 0;
  for (int q = 0; q < 60; ++q) {
    const OpInfo& op = m.ops[rng() % m.op_count];
    std::vector<Target> targets;
    for (std::size_t r = 0; r < op.role_count; ++r)
      targets.push_back(Target{std::string(op.roles[r]), paths[rng() % paths.size()] + (rng() % 4 ? "" : "/")});
    INFO(op.name << " " << targets[0].path);
    BlockersPage page;
    try {
      page = f.engine->blockers(f.ns, op.name, targets);
    } catch (const InvalidRequest&) {
      continue;  // e.g. a folder into itself: acquire refuses it too
    }
    CHECK_FALSE(page.truncated);
    CHECK(rows(page) == reference(*f.engine, f.ns, std::string(op.name), targets));
    nonempty += !page.blockers.empty();
    // Every answer names a live lock with its fence, holds and lease.
    for (const Blocker& b : page.blockers) {
      CHECK(b.fence > 0);
      CHECK(b.holds >= 1);
      CHECK(b.expires_in > 0ms);
      CHECK_FALSE(b.owner.empty());
      CHECK_FALSE(b.op.empty());
    }
    // A request with no blocker is granted now; one with a blocker refused.
    const bool free = page.blockers.empty();
    const auto r = f.engine->acquire(f.request("checker", std::string(op.name), targets));
    CHECK(r.granted() == free);
    if (r.granted()) CHECK(f.engine->release(f.ns, r.grant.id, r.grant.token));
  }
  CHECK(nonempty > 10);
  // Read-only: the same locks, the same holds, afterwards.
  const auto after = f.engine->list(f.ns);
  REQUIRE(after.size() == before.size());
  for (std::size_t i = 0; i < after.size(); ++i) {
    CHECK(after[i].id == before[i].id);
    CHECK(after[i].holds == before[i].holds);
  }
}

TEST_CASE("blockers: order, limit, expired locks and bad input", "[engine][blockers]") {
  Fixture f{test::manual_time};
  REQUIRE(f.one("a", "upload", "/p/A/C/x").granted());
  REQUIRE(f.one("b", "upload", "/p/A/C/y").granted());
  REQUIRE(f.one("c", "create", "/p").granted());
  const auto gone = f.one("d", "upload", "/p/A/C/z", 50ms);
  REQUIRE(gone.granted());
  REQUIRE(f.until_expired(gone.grant, 60ms));
  // delete_folder /p/A/C: the create on /p above, then the uploads below.
  const auto page = f.engine->blockers(f.ns, "delete_folder", {{"target", "/p/A/C"}});
  REQUIRE(page.blockers.size() == 3);
  CHECK(page.blockers[0].relation == Relation::held_ancestor);
  CHECK(page.blockers[0].path == "/p");
  CHECK(page.blockers[1].path == "/p/A/C/x");
  CHECK(page.blockers[2].path == "/p/A/C/y");
  CHECK(page.blockers[1].relation == Relation::held_descendant);
  for (const Blocker& b : page.blockers) CHECK(b.id != gone.grant.id);  // expired: never a blocker
  const auto one = f.engine->blockers(f.ns, "delete_folder", {{"target", "/p/A/C"}}, 1);
  CHECK(one.blockers.size() == 1);
  CHECK(one.truncated);
  CHECK(f.engine->blockers(f.ns, "upload", {{"target", "/q"}}).blockers.empty());
  CHECK(f.engine->blockers(test::unique_namespace("none"), "upload", {{"target", "/q"}}).blockers.empty());
  CHECK_THROWS_AS(f.engine->blockers(f.ns, "explode", {{"target", "/q"}}), InvalidRequest);
  CHECK_THROWS_AS(f.engine->blockers(f.ns, "upload", {{"target", "rel"}}), InvalidRequest);
  CHECK_THROWS_AS(f.engine->blockers(f.ns, "move_folder", {{"src", "/a"}, {"dst", "/a/b"}}), InvalidRequest);
  CHECK_THROWS_AS(f.engine->blockers(f.ns, "upload", {{"target", "/q"}}, 0), InvalidRequest);
  CHECK_THROWS_AS(f.engine->blockers(f.ns, "upload", {{"target", "/q"}}, kMaxBlockers + 1), InvalidRequest);
  CHECK_THROWS_AS(f.engine->blockers("bad ns", "upload", {{"target", "/q"}}), InvalidRequest);
}

TEST_CASE("blockers and waiters: a waiting request is named with how long it waited", "[engine][blockers]") {
  Fixture f{test::manual_time};
  const auto held = f.one("holder", "upload", "/w/A/f");
  REQUIRE(held.granted());
  AcquireResult waited;
  std::thread waiter([&] { waited = f.attempt("waiter", "delete_folder", "/w/A", 5000ms); });  // asserts after join
  f.until_queued("waiter", "upload", "/w/A/g");
  f.let_pass(30ms);  // it has waited that long, at least
  const auto line = f.engine->waiters(f.ns, "/w");
  REQUIRE(line.size() == 1);
  CHECK(line[0].owner == "waiter");
  CHECK(line[0].op == "delete_folder");
  REQUIRE(line[0].targets.size() == 1);
  CHECK(line[0].targets[0].path == "/w/A");
  CHECK(line[0].waited >= 20ms);
  CHECK(f.engine->waiters(f.ns, "/other").empty());
  CHECK(f.engine->waiters(f.ns, "/w/A").size() == 1);
  // A fair upload below /w/A is refused by the waiter (and by nothing held).
  const auto page = f.engine->blockers(f.ns, "upload", {{"target", "/w/A/g"}});
  REQUIRE(page.blockers.size() == 1);
  const Blocker& b = page.blockers[0];
  CHECK(b.queued);
  CHECK(b.owner == "waiter");
  CHECK(b.id == line[0].id);
  CHECK(b.relation == Relation::held_ancestor);
  CHECK(b.waited >= 20ms);
  CHECK(rows(page) == reference(*f.engine, f.ns, "upload", {{"target", "/w/A/g"}}));
  // The held lock blocks the waiter's own request, first.
  const auto why = f.engine->blockers(f.ns, "delete_folder", {{"target", "/w/A"}});
  REQUIRE_FALSE(why.blockers.empty());
  CHECK_FALSE(why.blockers[0].queued);
  CHECK(why.blockers[0].id == held.grant.id);
  CHECK(f.engine->release(f.ns, held.grant.id, held.grant.token));
  waiter.join();
  CHECK(waited.granted());
  CHECK(f.engine->waiters(f.ns).empty());
}

}  // namespace
}  // namespace pathlock

namespace pathlock {

TEST_CASE("admin::why: the stuck request is not its own blocker", "[blockers][why]") {
  test::Fixture f;
  const auto held = f.two("a", "move_folder", "/w/A", "/w/B");
  REQUIRE(held.granted());
  auto waiter = std::async(std::launch::async, [&] {
    return f.engine->acquire(f.request("b", "move_folder", {{"src", "/w/A/C"}, {"dst", "/w/D"}}, 30000ms, 10000ms));
  });
  REQUIRE(test::until_waiting(f.ns, "b"));
  // The operator asks about b's very request: only a's move is in its way
  // (b itself overlaps it on both of its paths).
  const admin::WhyAnswer w = admin::why(*f.engine, f.ns, "move_folder", {"/w/A/C", "/w/D"});
  REQUIRE(w.blockers.size() == 1);
  CHECK(w.blockers[0].blocker.id == held.grant.id);
  CHECK_FALSE(w.blockers[0].blocker.queued);
  // A different request at the same place still sees b in line.
  const admin::WhyAnswer other = admin::why(*f.engine, f.ns, "move_folder", {"/w/A/C", "/w/E"});
  CHECK(std::any_of(other.blockers.begin(), other.blockers.end(),
                    [](const admin::WhyBlocker& x) { return x.blocker.queued && x.blocker.owner == "b"; }));
  REQUIRE(f.engine->release(f.ns, held.grant.id, held.grant.token));
  const AcquireResult got = waiter.get();
  REQUIRE(got.granted());
  CHECK(f.engine->release(f.ns, got.grant.id, got.grant.token));
}

TEST_CASE("admin::why without an operation asks every operation, two-path ones too", "[blockers][why]") {
  test::Fixture f;
  // A move whose destination is /w/T: a delete of /w/T/x is refused by it.
  const auto moving = f.two("a", "move_folder", "/w/S", "/w/T");
  REQUIRE(moving.granted());
  const admin::WhyAnswer w = admin::why(*f.engine, f.ns, "", {"/w/T/x"});
  REQUIRE(w.blockers.size() == 1);
  CHECK(w.blockers[0].blocker.id == moving.grant.id);
  CHECK(w.blockers[0].blocker.requested_path == "/w/T/x");
  const auto& refuses = w.blockers[0].refuses;
  INFO("refuses: " << refuses.size());
  CHECK(std::find(refuses.begin(), refuses.end(), "upload") != refuses.end());
  // Two-path operations with /w/T/x as their source or destination are asked too.
  CHECK(std::find(refuses.begin(), refuses.end(), "move_file") != refuses.end());
  // Bad questions are clear errors.
  CHECK_THROWS_AS(admin::why(*f.engine, f.ns, "nope", {"/w"}), InvalidRequest);
  CHECK_THROWS_AS(admin::why(*f.engine, f.ns, "move_folder", {"/w"}), InvalidRequest);
  CHECK(admin::why(*f.engine, f.ns, "", {"/elsewhere"}).blockers.empty());
}

}  // namespace pathlock
