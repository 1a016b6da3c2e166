// Conversion (LockEngine::convert, docs/design.md#conversion) on every
// backend: one lock, a new operation and targets, in one atomic
// step; waiting to convert without deadlock or starvation. The worked
// example is docs/design.md's: a move across storage back ends held as
// copy_folder for the copy, converted to move_folder for the delete.
#include "support/backends.hpp"

#include <pathlock/guard.hpp>
#include <pathlock/keeper.hpp>
#include <pathlock/memory.hpp>
#include <pathlock/metrics.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <future>
#include <stop_token>

#include "until.hpp"

using namespace pathlock;
using namespace std::chrono_literals;

namespace {

struct Convert {
  // Every backend converts: each TEST_CASE runs once per row under test
  // (memory and redis by default; Cluster, Sentinel, TLS and PostgreSQL in
  // their conformance runs).
  std::string backend = test::each_backend().name;
  std::unique_ptr<LockEngine> engine = test::make_test_engine(backend);
  std::string ns = test::unique_namespace("convert-" + backend);

  AcquireResult take(const std::string& owner, const std::string& op, std::vector<Target> targets,
                     Millis wait = 0ms) {
    LockRequest r{ns, owner, op, std::move(targets), 30000ms, wait};
    return engine->acquire(r);
  }
  Grant hold(const std::string& owner, const std::string& op, std::vector<Target> targets) {
    const AcquireResult r = take(owner, op, std::move(targets));
    REQUIRE(r.granted());
    return r.grant;
  }
  ConvertRequest to(const Grant& g, const std::string& op, std::vector<Target> targets, Millis wait = 0ms) {
    ConvertRequest c = ConvertRequest::of(ns, g, op, std::move(targets));
    c.wait = wait;
    return c;
  }
  // The listed lock `id` (a REQUIRE that it is listed).
  LockInfo listed(const std::string& id) {
    for (const LockInfo& l : engine->list(ns))
      if (l.id == id) return l;
    FAIL("lock " << id << " is not listed");
    return {};
  }
  // Waits until the conversion of lock `id` holds a place in line.
  void until_waiting(const std::string& id) {
    REQUIRE(devtools::until([&] {
      for (const WaiterInfo& w : engine->waiters(ns))
        if (w.converts == id) return true;
      return false;
    }));
  }
};

const std::vector<Target> kCopy{{"src", "/p/A"}, {"dst", "/q/A"}};

// What a lock is, for "exactly as it was".
void same_lock(const LockInfo& a, const LockInfo& b) {
  CHECK(a.op == b.op);
  REQUIRE(a.targets.size() == b.targets.size());
  for (std::size_t i = 0; i < a.targets.size(); ++i) {
    CHECK(a.targets[i].role == b.targets[i].role);
    CHECK(a.targets[i].path == b.targets[i].path);
  }
  CHECK(a.fence == b.fence);
  CHECK(a.holds == b.holds);
  CHECK(a.owner == b.owner);
  CHECK(b.expires_in <= a.expires_in);
  CHECK(b.expires_in > a.expires_in - 5000ms);
}

}  // namespace

TEST_CASE("convert: copy then move, one lock: same id and token, a higher fence, the lease as asked",
          "[convert][memory]") {
  Convert f;
  const Grant copy = f.hold("alice", "copy_folder", kCopy);
  const Grant later = f.hold("bob", "upload", {{"target", "/r/x"}});  // a fence after alice's
  const Grant carol = f.hold("carol", "upload", {{"target", "/p/A/new"}});  // the copy lets uploads into the source
  CHECK(f.engine->release(f.ns, carol.id, carol.token));

  ConvertRequest to_move = f.to(copy, "move_folder", {{"src", "/p/A/"}, {"dst", "/q/A"}});
  to_move.ttl = 7000ms;
  const AcquireResult moved = f.engine->convert(to_move);
  REQUIRE(moved.granted());
  CHECK(moved.grant.id == copy.id);
  CHECK(moved.grant.token == copy.token);
  CHECK(moved.grant.holds == 1);
  CHECK(moved.grant.fence > later.fence);
  CHECK(moved.grant.expires_in <= 7000ms);
  CHECK(moved.grant.expires_in > 6000ms);
  const LockInfo now = f.listed(copy.id);
  CHECK(now.op == "move_folder");
  CHECK(now.targets[0].path == "/p/A");  // canonical
  CHECK(now.fence == moved.grant.fence);
  CHECK(f.engine->is_held(f.ns, copy.id, copy.token));  // the proof stays valid
  // Now an upload into the source is refused, naming the converted lock.
  const AcquireResult upload = f.take("carol", "upload", {{"target", "/p/A/late"}});
  REQUIRE_FALSE(upload.granted());
  CHECK(upload.conflict.id == copy.id);
  CHECK(upload.conflict.op == "move_folder");
  CHECK(f.engine->release(f.ns, copy.id, copy.token));
  CHECK(f.engine->list(f.ns, "/p").empty());
}

TEST_CASE("convert: refused by another lock, the lock stays exactly as it was", "[convert][memory]") {
  Convert f;
  const Grant copy = f.hold("alice", "copy_folder", kCopy);
  const Grant upload = f.hold("bob", "upload", {{"target", "/p/A/x"}});  // allowed beside the copy
  const LockInfo before = f.listed(copy.id);
  const AcquireResult r = f.engine->convert(f.to(copy, "move_folder", kCopy));
  REQUIRE(r.conflicted());
  CHECK(r.conflict.id == upload.id);  // reported as for an acquire of move_folder
  CHECK(r.conflict.op == "upload");
  CHECK(r.conflict.requested_role == "src");
  CHECK(r.conflict.relation == Relation::held_descendant);
  same_lock(before, f.listed(copy.id));
  // Still the copy: another upload into the source gets in, a delete of the
  // destination does not, and the lock is named as before.
  const Grant carol = f.hold("carol", "upload", {{"target", "/p/A/y"}});
  const AcquireResult del = f.take("dave", "delete_folder", {{"target", "/q"}});
  REQUIRE_FALSE(del.granted());
  CHECK(del.conflict.id == copy.id);
  CHECK(del.conflict.op == "copy_folder");
  // Once the upload is gone the same conversion is granted.
  CHECK(f.engine->release(f.ns, upload.id, upload.token));
  CHECK(f.engine->release(f.ns, carol.id, carol.token));
  CHECK(f.engine->convert(f.to(copy, "move_folder", kCopy)).granted());
}

TEST_CASE("convert: never judged against the lock itself", "[convert][memory]") {
  Convert f;
  const Grant up = f.hold("alice", "upload", {{"target", "/p/A/x"}});
  // An upload at /p/A/x refuses a delete of /p/A by anyone else ...
  CHECK_FALSE(f.take("bob", "delete_folder", {{"target", "/p/A"}}).granted());
  // ... but not the conversion of that very lock.
  const AcquireResult r = f.engine->convert(f.to(up, "delete_folder", {{"target", "/p/A"}}));
  REQUIRE(r.granted());
  CHECK(f.listed(up.id).op == "delete_folder");
  CHECK(f.engine->list(f.ns).size() == 1);
}

TEST_CASE("convert: a wrong proof is not_holder and reveals nothing, and bad input changes nothing",
          "[convert][memory]") {
  Convert f;
  const Grant copy = f.hold("alice", "copy_folder", kCopy);
  const LockInfo before = f.listed(copy.id);
  Grant wrong = copy;
  wrong.token = "not-the-token";
  const AcquireResult r = f.engine->convert(f.to(wrong, "move_folder", kCopy));
  CHECK(r.not_holder());
  CHECK(r.conflict.id.empty());
  wrong = copy;
  wrong.id = "1-ffff";
  CHECK(f.engine->convert(f.to(wrong, "move_folder", kCopy)).not_holder());
  CHECK_THROWS_AS(f.engine->convert(f.to(copy, "no_such_op", kCopy)), InvalidRequest);
  CHECK_THROWS_AS(f.engine->convert(f.to(copy, "move_folder", {{"src", "/p/A"}})), InvalidRequest);
  CHECK_THROWS_AS(f.engine->convert(f.to(copy, "move_folder", {{"src", "/p/A"}, {"dst", "/p/A/in"}})),
                  InvalidRequest);
  CHECK_THROWS_AS(f.engine->convert(f.to(copy, "delete_folder", {{"target", "/p/../A"}})), InvalidRequest);
  ConvertRequest no_id = f.to(copy, "move_folder", kCopy);
  no_id.id = "";
  CHECK_THROWS_AS(f.engine->convert(no_id), InvalidRequest);
  same_lock(before, f.listed(copy.id));
}

TEST_CASE("convert: a lock with more than one hold is not converted", "[convert][memory]") {
  Convert f;
  const Grant copy = f.hold("alice", "copy_folder", kCopy);
  LockRequest again{f.ns, "alice", "copy_folder", kCopy};
  REQUIRE(f.engine->acquire(again.reenter(copy)).grant.holds == 2);
  const LockInfo before = f.listed(copy.id);
  CHECK_THROWS_WITH(f.engine->convert(f.to(copy, "move_folder", kCopy)), Catch::Contains("2 holds"));
  same_lock(before, f.listed(copy.id));
  CHECK(f.engine->release(f.ns, copy.id, copy.token));  // one hold left
  CHECK(f.engine->convert(f.to(copy, "move_folder", kCopy)).granted());
}

TEST_CASE("convert: the retry of a conversion whose reply was lost gets the same lock back", "[convert][memory]") {
  Convert f;
  const Grant copy = f.hold("alice", "copy_folder", kCopy);
  ConvertRequest c = f.to(copy, "move_folder", kCopy);
  c.idempotency_key = "move-42";
  const AcquireResult first = f.engine->convert(c);
  REQUIRE(first.granted());
  const AcquireResult retry = f.engine->convert(c);
  REQUIRE(retry.granted());
  CHECK(retry.grant.fence == first.grant.fence);  // nothing was converted twice
  // Without the key the same request converts again (a new fence).
  c.idempotency_key.clear();
  const AcquireResult again = f.engine->convert(c);
  REQUIRE(again.granted());
  CHECK(again.grant.fence > first.grant.fence);
}

TEST_CASE("convert: a waiting conversion keeps its lock, and later requests wait behind it", "[convert][memory]") {
  Convert f;
  const Grant copy = f.hold("alice", "copy_folder", kCopy);
  const Grant upload = f.hold("bob", "upload", {{"target", "/p/A/x"}});
  auto waiting = std::async(std::launch::async, [&] { return f.engine->convert(f.to(copy, "move_folder", kCopy, 10s)); });
  f.until_waiting(copy.id);
  // While it waits the lock is the copy it was.
  CHECK(f.listed(copy.id).op == "copy_folder");
  const auto line = f.engine->waiters(f.ns);
  REQUIRE(line.size() == 1);
  CHECK(line[0].op == "move_folder");
  CHECK(line[0].owner == "alice");
  // An upload into the source that comes now is allowed by the copy but
  // waits behind the conversion to move.
  const AcquireResult late = f.take("carol", "upload", {{"target", "/p/A/y"}});
  REQUIRE_FALSE(late.granted());
  CHECK(late.conflict.queued);
  CHECK(late.conflict.owner == "alice");
  CHECK(late.conflict.op == "move_folder");
  CHECK(f.engine->release(f.ns, upload.id, upload.token));
  const AcquireResult moved = waiting.get();
  REQUIRE(moved.granted());
  CHECK(moved.grant.id == copy.id);
  CHECK(f.listed(copy.id).op == "move_folder");
  CHECK(f.engine->waiters(f.ns).empty());
}

TEST_CASE("convert: a conversion goes before a waiter its own lock refuses", "[convert][memory]") {
  Convert f;
  const Grant copy = f.hold("alice", "copy_folder", kCopy);
  // dave waits to delete the source: the copy refuses him.
  auto dave = std::async(std::launch::async,
                         [&] { return f.take("dave", "delete_folder", {{"target", "/p/A"}}, 10s); });
  REQUIRE(devtools::until([&] { return f.engine->waiters(f.ns).size() == 1; }));
  // dave's place would refuse the move; but he waits for alice's lock
  // anyway, so the conversion does not wait for him (it would wait forever).
  const AcquireResult moved = f.engine->convert(f.to(copy, "move_folder", kCopy));
  REQUIRE(moved.granted());
  CHECK(f.engine->waiters(f.ns).size() == 1);  // dave still waits, now for the move
  CHECK(f.engine->release(f.ns, copy.id, copy.token));
  CHECK(dave.get().granted());
}

TEST_CASE("convert: two conversions that would wait for each other: the later is would_deadlock",
          "[convert][memory]") {
  Convert f;
  const Grant a = f.hold("alice", "upload", {{"target", "/p/A/x"}});
  const Grant b = f.hold("bob", "upload", {{"target", "/p/B/y"}});
  auto alice = std::async(std::launch::async,
                          [&] { return f.engine->convert(f.to(a, "delete_folder", {{"target", "/p/B"}}, 10s)); });
  f.until_waiting(a.id);
  const LockInfo before = f.listed(b.id);
  const AcquireResult r = f.engine->convert(f.to(b, "delete_folder", {{"target", "/p/A"}}, 10s));
  REQUIRE(r.would_deadlock());
  CHECK(r.conflict.id == a.id);  // the other lock, as a conflict names it
  same_lock(before, f.listed(b.id));
  REQUIRE(f.engine->waiters(f.ns).size() == 1);  // only alice's conversion is in line
  CHECK(f.engine->release(f.ns, b.id, b.token));
  REQUIRE(alice.get().granted());
  CHECK(f.listed(a.id).op == "delete_folder");
}

// The ids of a blockers page, in its order.
std::vector<std::string> ids_of(const BlockersPage& page) {
  std::vector<std::string> ids;
  for (const Blocker& b : page.blockers) ids.push_back(b.id);
  return ids;
}

TEST_CASE("convert: blockers of a conversion: never the lock itself, nor a place the conversion goes before",
          "[convert][memory][blockers]") {
  Convert f;
  const Grant copy = f.hold("alice", "copy_folder", kCopy);
  const Grant upload = f.hold("bob", "upload", {{"target", "/p/A/x"}});
  auto dave = std::async(std::launch::async,
                         [&] { return f.take("dave", "delete_folder", {{"target", "/p/A"}}, 10s); });
  REQUIRE(devtools::until([&] { return f.engine->waiters(f.ns).size() == 1; }));
  // An acquire of the move would be refused by alice's copy, bob's upload
  // and dave's place; the conversion of the copy only by the upload.
  const BlockersPage plain = f.engine->blockers(f.ns, "move_folder", kCopy);
  const auto plain_ids = ids_of(plain);
  CHECK(std::count(plain_ids.begin(), plain_ids.end(), copy.id) > 0);
  CHECK(std::count(plain_ids.begin(), plain_ids.end(), upload.id) > 0);
  CHECK(std::count_if(plain.blockers.begin(), plain.blockers.end(), [](const Blocker& b) { return b.queued; }) == 1);
  const ConvertRequest move = f.to(copy, "move_folder", kCopy);
  const BlockersPage conv = f.engine->blockers(move);
  REQUIRE(conv.blockers.size() == 1);
  CHECK(conv.blockers[0].id == upload.id);
  CHECK(conv.blockers[0].relation == Relation::held_descendant);
  CHECK_FALSE(conv.truncated);
  CHECK(f.engine->convert(move).conflict.id == upload.id);  // what the conversion itself meets
  // Read only: no token needed, and the lock is unchanged.
  ConvertRequest by_operator = move;
  by_operator.token.clear();
  CHECK(ids_of(f.engine->blockers(by_operator)) == std::vector<std::string>{upload.id});
  CHECK(f.listed(copy.id).op == "copy_folder");
  // Waiting, the conversion's own place is not among its blockers either.
  auto waiting = std::async(std::launch::async, [&] { return f.engine->convert(f.to(copy, "move_folder", kCopy, 10s)); });
  f.until_waiting(copy.id);
  CHECK(ids_of(f.engine->blockers(move)) == std::vector<std::string>{upload.id});
  // Bad input is refused as convert refuses it.
  ConvertRequest bad = move;
  bad.id = "no such id!";
  CHECK_THROWS_AS(f.engine->blockers(bad), InvalidRequest);
  bad = move;
  bad.op = "teleport";
  CHECK_THROWS_AS(f.engine->blockers(bad), InvalidRequest);
  CHECK_THROWS_AS(f.engine->blockers(move, 0), InvalidRequest);
  CHECK(f.engine->release(f.ns, upload.id, upload.token));
  REQUIRE(waiting.get().granted());
  // A lock that is gone excludes nothing: the answer is an acquire's (here
  // dave's delete, granted once the move went).
  CHECK(f.engine->release(f.ns, copy.id, copy.token));
  const AcquireResult deleted = dave.get();
  REQUIRE(deleted.granted());
  const ConvertRequest gone = f.to(copy, "upload", {{"target", "/p/A/q"}});
  CHECK(ids_of(f.engine->blockers(gone)) == std::vector<std::string>{deleted.grant.id});
  CHECK(ids_of(f.engine->blockers(f.ns, "upload", {{"target", "/p/A/q"}})) == ids_of(f.engine->blockers(gone)));
}

TEST_CASE("convert: blockers of an unfair conversion are the held locks only", "[convert][memory][blockers]") {
  Convert f;
  const Grant copy = f.hold("alice", "copy_folder", kCopy);
  const Grant upload = f.hold("bob", "upload", {{"target", "/p/C/x"}});
  // erin waits to delete /p/C (bob's upload refuses her); her place refuses
  // an upload into /p/C, and alice's copy does not refuse her.
  auto erin = std::async(std::launch::async,
                         [&] { return f.take("erin", "delete_folder", {{"target", "/p/C"}}, 10s); });
  REQUIRE(devtools::until([&] { return f.engine->waiters(f.ns).size() == 1; }));
  ConvertRequest to_c = f.to(copy, "upload", {{"target", "/p/C/z"}});
  const BlockersPage fair = f.engine->blockers(to_c);
  REQUIRE(fair.blockers.size() == 1);
  CHECK(fair.blockers[0].queued);
  CHECK(fair.blockers[0].owner == "erin");
  to_c.fair = false;
  CHECK(f.engine->blockers(to_c).blockers.empty());
  CHECK(f.engine->convert(to_c).granted());  // unfair: granted, as its dry run said
  CHECK(f.engine->release(f.ns, upload.id, upload.token));
  CHECK(f.engine->release(f.ns, copy.id, copy.token));
  CHECK(erin.get().granted());
}

TEST_CASE("convert: a timed-out or cancelled conversion leaves the lock as it was and no place",
          "[convert][memory]") {
  Convert f;
  const Grant copy = f.hold("alice", "copy_folder", kCopy);
  const Grant upload = f.hold("bob", "upload", {{"target", "/p/A/x"}});
  const LockInfo before = f.listed(copy.id);
  const AcquireResult timed_out = f.engine->convert(f.to(copy, "move_folder", kCopy, 300ms));
  REQUIRE(timed_out.conflicted());
  CHECK(timed_out.conflict.id == upload.id);
  CHECK(f.engine->waiters(f.ns).empty());
  same_lock(before, f.listed(copy.id));

  std::stop_source stop;
  auto cancelled = std::async(std::launch::async,
                              [&] { return f.engine->convert(f.to(copy, "move_folder", kCopy, 30s), stop.get_token()); });
  f.until_waiting(copy.id);
  stop.request_stop();
  CHECK(cancelled.get().cancelled());
  CHECK(f.engine->waiters(f.ns).empty());
  same_lock(before, f.listed(copy.id));
  // Nothing of the move is left in line: an upload into the source gets in.
  CHECK(f.take("carol", "upload", {{"target", "/p/A/z"}}).granted());
}

TEST_CASE("convert: a waiting conversion whose lock is released meanwhile is not_holder and leaves the line",
          "[convert][memory]") {
  Convert f;
  const Grant copy = f.hold("alice", "copy_folder", kCopy);
  const Grant upload = f.hold("bob", "upload", {{"target", "/p/A/x"}});
  auto waiting = std::async(std::launch::async, [&] { return f.engine->convert(f.to(copy, "move_folder", kCopy, 30s)); });
  f.until_waiting(copy.id);
  CHECK(f.engine->force_release(f.ns, copy.id));  // an operator ends the lock; the wake-up re-checks at once
  CHECK(waiting.get().outcome == AcquireOutcome::not_holder);
  CHECK(f.engine->waiters(f.ns).empty());
  // Nothing of the move is left in line: a delete of the source waits for bob only.
  CHECK(f.engine->release(f.ns, upload.id, upload.token));
  CHECK(f.take("carol", "delete_folder", {{"target", "/p/A"}}).granted());
}

TEST_CASE("convert: a LockGuard and its LeaseKeeper keep the lock across a conversion", "[convert][memory][guard]") {
  Convert f;
  LeaseKeeper keeper(*f.engine);
  LockGuard guard(*f.engine, LockRequest{f.ns, "alice", "copy_folder", kCopy, 600ms}, &keeper);
  REQUIRE(guard.owns_lock());
  const Grant copy = guard.grant();
  ConvertRequest to_move;
  to_move.op = "move_folder";
  to_move.targets = kCopy;
  to_move.ttl = 600ms;
  const AcquireResult moved = guard.convert(to_move);
  REQUIRE(moved.granted());
  CHECK(guard.grant().id == copy.id);
  CHECK(guard.grant().fence == moved.grant.fence);
  CHECK(guard.grant().fence > copy.fence);
  // Three leases' worth of time: the keeper renews the converted lock.
  const auto until = std::chrono::steady_clock::now() + 1800ms;
  REQUIRE(devtools::until([&] { return std::chrono::steady_clock::now() > until; }, 10s));
  CHECK_FALSE(guard.lost());
  CHECK(f.engine->is_held(f.ns, copy.id, copy.token));
  CHECK(f.listed(copy.id).op == "move_folder");
  // A refused conversion leaves the guard as it was.
  const Grant b = f.hold("bob", "upload", {{"target", "/r/x"}});
  ConvertRequest onto_bob;
  onto_bob.op = "delete_folder";
  onto_bob.targets = {{"target", "/r"}};
  CHECK(guard.convert(onto_bob).conflicted());
  CHECK(guard.grant().fence == moved.grant.fence);
  CHECK(guard.release());
  CHECK_FALSE(guard.convert(onto_bob).granted());  // owns nothing now: not_holder
  CHECK(f.engine->release(f.ns, b.id, b.token));
}

TEST_CASE("convert: metrics count conversions by outcome", "[convert][memory][metrics]") {
  auto metrics = std::make_shared<Metrics>();
  MemoryOptions options;
  options.observe.metrics = metrics;
  Convert f;
  f.engine = make_memory_engine(options);  // counted by the engine's base, the same for every backend
  f.ns = test::unique_namespace("convert-metrics");
  const Grant copy = f.hold("alice", "copy_folder", kCopy);
  const Grant upload = f.hold("bob", "upload", {{"target", "/p/A/x"}});
  CHECK(f.engine->convert(f.to(copy, "move_folder", kCopy)).conflicted());
  Grant wrong = copy;
  wrong.token = "wrong";
  CHECK(f.engine->convert(f.to(wrong, "move_folder", kCopy)).not_holder());
  CHECK(f.engine->release(f.ns, upload.id, upload.token));
  CHECK(f.engine->convert(f.to(copy, "move_folder", kCopy)).granted());
  LockRequest again{f.ns, "alice", "move_folder", kCopy};
  REQUIRE(f.engine->acquire(again.reenter(copy)).granted());
  CHECK_THROWS_AS(f.engine->convert(f.to(copy, "copy_folder", kCopy)), InvalidRequest);  // two holds
  const MetricsSnapshot s = metrics->snapshot();
  CHECK(s.conversions[static_cast<std::size_t>(AcquireOutcome::granted)] == 1);
  CHECK(s.conversions[static_cast<std::size_t>(AcquireOutcome::conflicted)] == 1);
  CHECK(s.conversions[static_cast<std::size_t>(AcquireOutcome::not_holder)] == 1);
  CHECK(s.conversions[kConversionError] == 1);
  const std::string text = metrics->prometheus();
  CHECK(text.find("pathlock_conversions_total{outcome=\"granted\"} 1\n") != std::string::npos);
  CHECK(text.find("pathlock_conversions_total{outcome=\"would_deadlock\"} 0\n") != std::string::npos);
}
