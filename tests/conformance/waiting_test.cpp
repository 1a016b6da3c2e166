// Waiting with a deadline, wake-ups, and the fairness rule, on every backend.
#include <atomic>
#include <catch2/catch.hpp>
#include <future>
#include <memory>
#include <pathlock/engine.hpp>
#include <thread>
#include <vector>

#include "conformance/fixture.hpp"
#include "support/background.hpp"

using namespace pathlock;
using namespace std::chrono_literals;

namespace {

using test::Fixture;
using test::until_waiting;

}  // namespace

// Each waiting test makes sure the request really waited: the waiting
// policy's sync point (test::until_waiting) says when it is refused and
// asleep; only then does the test release, expire or let the deadline pass.

TEST_CASE("a waiting request is granted when the holder releases", "[wait]") {
  Fixture f;
  const auto held = f.attempt("a", "delete_folder", "/p/A");
  REQUIRE(held.granted());
  auto waiter = std::async(std::launch::async, [&] { return f.attempt("b", "upload", "/p/A/x", 10000ms); });
  const bool waited = until_waiting(f.ns, "b");  // refused by the holder, and asleep
  REQUIRE(f.engine->release(f.ns, held.grant.id, held.grant.token));
  const auto got = waiter.get();
  REQUIRE(waited);
  CHECK(got.granted());
  CHECK(got.grant.fence > held.grant.fence);
}

TEST_CASE("a waiting request is granted when the holder's lease expires", "[wait]") {
  Fixture f{test::manual_time};
  const auto held = f.attempt("a", "delete_folder", "/p/A");
  REQUIRE(held.granted());
  auto waiter = std::async(std::launch::async, [&] { return f.attempt("b", "upload", "/p/A", 10000ms); });
  const bool waited = until_waiting(f.ns, "b");
  // Only now does the lease end: 100 ms from here, and nobody releases it.
  const bool renewed = f.engine->renew(f.ns, held.grant.id, held.grant.token, 100ms);
  f.let_pass(150ms);
  const auto got = waiter.get();
  REQUIRE(waited);
  REQUIRE(renewed);
  CHECK(got.granted());
  CHECK_FALSE(f.engine->is_held(f.ns, held.grant.id, held.grant.token));  // expired, not released
}

TEST_CASE("a wait that reaches its deadline returns the conflict", "[wait]") {
  Fixture f{test::manual_time};
  const auto held = f.attempt("a", "delete_folder", "/p/A");
  REQUIRE(held.granted());
  // In real time the wait is long enough for its first attempts (and a
  // Redis subscription) to come before the deadline on a slow machine.
  const Millis wait = f.clock ? 120ms : 1000ms;
  const auto start = f.now();
  auto waiter = std::async(std::launch::async, [&] { return f.attempt("b", "upload", "/p/A", wait); });
  // On a manual clock the deadline is not reached while the clock stands
  // still: the waiter re-checks and goes on waiting (a second refusal).
  const bool waited = until_waiting(f.ns, "b", f.clock ? 2 : 1);
  f.let_pass(wait);
  const auto got = waiter.get();
  REQUIRE(waited);
  CHECK_FALSE(got.granted());
  CHECK(got.conflict.id == held.grant.id);
  CHECK(f.now() - start >= wait);  // on the engine's clock: it waited until the deadline
  // The expired waiter left nothing behind: a later fair request only meets
  // the holder.
  const auto again = f.attempt("c", "create", "/p/A");
  CHECK(again.granted() == false);
  CHECK_FALSE(again.conflict.queued);
}

TEST_CASE("a fair newcomer does not overtake an older waiter it conflicts with", "[wait][fair]") {
  Fixture f;
  const auto upload = f.attempt("u", "upload", "/p/A");
  REQUIRE(upload.granted());
  auto deleter = f.queued("d", "delete_folder", "/p/A", "create");

  const auto fair = f.attempt("c", "create", "/p/A");
  REQUIRE_FALSE(fair.granted());
  CHECK(fair.conflict.queued);
  CHECK(fair.conflict.op == "delete_folder");
  CHECK(fair.conflict.owner == "d");
  CHECK(fair.conflict.path == "/p/A");
  CHECK(f.attempt("x", "upload", "/q").granted());  // not overlapping: unaffected

  const auto barging = f.attempt("c", "create", "/p/A", 0ms, 30000ms, /*fair=*/false);
  CHECK(barging.granted());  // opted out of fairness: overtakes
  REQUIRE(f.engine->release(f.ns, barging.grant.id, barging.grant.token));
  REQUIRE(f.engine->release(f.ns, upload.grant.id, upload.grant.token));
  const auto deleted = deleter.get();
  REQUIRE(deleted.granted());
  REQUIRE(f.engine->release(f.ns, deleted.grant.id, deleted.grant.token));
  CHECK(f.attempt("c", "create", "/p/A").granted());  // the queue is empty again
}

TEST_CASE("a stream of creates does not starve a waiting delete_folder", "[wait][fair]") {
  Fixture f;
  // The creators make no Catch2 assertion (Catch2 v2's are not thread-safe)
  // and let no exception out: they count, and the test checks the counts.
  std::atomic<int> creates{0}, failed_releases{0}, errors{0};
  auto creator = [&](int id) {
    return [&, id] {
      try {
        const auto g = f.attempt("creator" + std::to_string(id), "create", "/p/A", 5000ms);
        if (!g.granted()) return;
        ++creates;
        std::this_thread::sleep_for(20ms);
        if (!f.engine->release(f.ns, g.grant.id, g.grant.token)) ++failed_releases;
      } catch (const std::exception&) {
        ++errors;
      }
    };
  };
  const auto creator_waits = [&] {
    int n = 0;
    for (int i = 0; i < 3; ++i) n += test::times_waited(f.ns, "creator" + std::to_string(i));
    return n;
  };
  int creates_during_delete = -1;
  bool stream_ran = false, delete_waited = false, creators_refused = false;
  {
    std::vector<std::unique_ptr<test::Background>> creators;  // stopped and joined at the end of the block
    for (int i = 0; i < 3; ++i) {
      creators.push_back(std::make_unique<test::Background>(creator(i)));
      std::this_thread::sleep_for(7ms);  // staggered, so that their creates overlap: a stream, not a pulse
    }
    stream_ran = Fixture::until([&] { return creates > 3; });  // the stream runs, and goes on until the block ends
    // A create of the test's own is held when the delete arrives, so the
    // delete surely waits; it is released once the delete is in line.
    const auto mine = f.attempt("t", "create", "/p/A");
    REQUIRE(mine.granted());
    auto deleter = std::async(std::launch::async, [&] { return f.attempt("d", "delete_folder", "/p/A", 5000ms); });
    delete_waited = until_waiting(f.ns, "d");
    REQUIRE(f.engine->release(f.ns, mine.grant.id, mine.grant.token));
    const auto got = deleter.get();
    REQUIRE(got.granted());  // so granted while the stream still ran, not after it
    // While the delete holds /p/A no create may be granted, though creators
    // keep trying: wait until they have been refused twice more.
    const int before = creates;
    const int refused_before = creator_waits();
    creators_refused = Fixture::until([&] { return creator_waits() >= refused_before + 2; });
    creates_during_delete = creates - before;
    REQUIRE(f.engine->release(f.ns, got.grant.id, got.grant.token));
    const int after_release = creates;
    REQUIRE(Fixture::until([&] { return creates > after_release; }));  // the stream goes on
  }
  REQUIRE(stream_ran);
  CHECK(delete_waited);
  CHECK(creators_refused);
  CHECK(errors == 0);
  CHECK(failed_releases == 0);
  CHECK(creates_during_delete == 0);
}

TEST_CASE("waiters are served in arrival order when they conflict", "[wait][fair]") {
  Fixture f;
  const auto held = f.attempt("h", "upload", "/p/A");
  REQUIRE(held.granted());
  auto first = f.queued("w1", "rename_folder", "/p/A", "create");
  auto second = std::async(std::launch::async, [&] { return f.attempt("w2", "rename_folder", "/p/A", 10000ms); });
  const bool second_waited = until_waiting(f.ns, "w2");  // behind w1: both wait when the holder leaves
  REQUIRE(f.engine->release(f.ns, held.grant.id, held.grant.token));
  const auto a = first.get();  // w2 is refused by w1's lock (or place) until the test releases it
  REQUIRE(second_waited);
  REQUIRE(a.granted());
  REQUIRE(f.engine->release(f.ns, a.grant.id, a.grant.token));
  const auto b = second.get();
  REQUIRE(b.granted());
  CHECK(b.grant.fence > a.grant.fence);
}

TEST_CASE("a fair=false waiter takes no place in line", "[wait][fair]") {
  Fixture f;
  const auto upload = f.attempt("u", "upload", "/p/A/f");
  REQUIRE(upload.granted());
  auto deleter = std::async(std::launch::async,
                            [&] { return f.attempt("d", "delete_folder", "/p/A", 3000ms, 30000ms, /*fair=*/false); });
  const bool waited = until_waiting(f.ns, "d");  // refused by the upload, and waiting
  const auto create = f.attempt("c", "create", "/p/A");  // fair, and nobody is in line
  REQUIRE(waited);
  REQUIRE(create.granted());
  REQUIRE(f.engine->release(f.ns, create.grant.id, create.grant.token));
  REQUIRE(f.engine->release(f.ns, upload.grant.id, upload.grant.token));
  const auto deleted = deleter.get();
  REQUIRE(deleted.granted());
  REQUIRE(f.engine->release(f.ns, deleted.grant.id, deleted.grant.token));
}
