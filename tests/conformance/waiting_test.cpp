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
using SteadyClock = std::chrono::steady_clock;

namespace {

using test::Fixture;

Millis since(SteadyClock::time_point t) { return std::chrono::duration_cast<Millis>(SteadyClock::now() - t); }

}  // namespace

TEST_CASE("a waiting request is granted when the holder releases", "[wait]") {
  Fixture f;
  const auto held = f.attempt("a", "delete_folder", "/p/A");
  REQUIRE(held.granted);
  const auto start = SteadyClock::now();
  auto waiter = std::async(std::launch::async, [&] { return f.attempt("b", "upload", "/p/A/x", 10000ms); });
  std::this_thread::sleep_for(100ms);
  REQUIRE(f.engine->release(f.ns, held.grant.id, held.grant.token));
  const auto got = waiter.get();
  CHECK(got.granted);
  CHECK(since(start) >= 100ms);
}

TEST_CASE("a waiting request is granted when the holder's lease expires", "[wait]") {
  Fixture f;
  REQUIRE(f.attempt("a", "delete_folder", "/p/A", 0ms, 150ms).granted);
  const auto start = SteadyClock::now();
  const auto got = f.attempt("b", "upload", "/p/A", 10000ms);
  CHECK(got.granted);
  CHECK(since(start) >= 140ms);
}

TEST_CASE("a wait that reaches its deadline returns the conflict", "[wait]") {
  Fixture f;
  const auto held = f.attempt("a", "delete_folder", "/p/A");
  REQUIRE(held.granted);
  const auto start = SteadyClock::now();
  const auto got = f.attempt("b", "upload", "/p/A", 120ms);
  CHECK_FALSE(got.granted);
  CHECK(got.conflict.id == held.grant.id);
  CHECK(since(start) >= 120ms);
  // The expired waiter left nothing behind: a later fair request only meets
  // the holder.
  const auto again = f.attempt("c", "create", "/p/A");
  CHECK(again.granted == false);
  CHECK_FALSE(again.conflict.queued);
}

TEST_CASE("a fair newcomer does not overtake an older waiter it conflicts with", "[wait][fair]") {
  Fixture f;
  const auto upload = f.attempt("u", "upload", "/p/A");
  REQUIRE(upload.granted);
  auto deleter = std::async(std::launch::async, [&] { return f.attempt("d", "delete_folder", "/p/A", 10000ms); });
  f.until_queued("d", "create", "/p/A");

  const auto fair = f.attempt("c", "create", "/p/A");
  REQUIRE_FALSE(fair.granted);
  CHECK(fair.conflict.queued);
  CHECK(fair.conflict.op == "delete_folder");
  CHECK(fair.conflict.owner == "d");
  CHECK(fair.conflict.path == "/p/A");
  CHECK(f.attempt("x", "upload", "/q").granted);  // not overlapping: unaffected

  const auto barging = f.attempt("c", "create", "/p/A", 0ms, 30000ms, /*fair=*/false);
  CHECK(barging.granted);  // opted out of fairness: overtakes
  REQUIRE(f.engine->release(f.ns, barging.grant.id, barging.grant.token));
  REQUIRE(f.engine->release(f.ns, upload.grant.id, upload.grant.token));
  const auto deleted = deleter.get();
  REQUIRE(deleted.granted);
  REQUIRE(f.engine->release(f.ns, deleted.grant.id, deleted.grant.token));
  CHECK(f.attempt("c", "create", "/p/A").granted);  // the queue is empty again
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
        if (!g.granted) return;
        ++creates;
        std::this_thread::sleep_for(20ms);
        if (!f.engine->release(f.ns, g.grant.id, g.grant.token)) ++failed_releases;
      } catch (const std::exception&) {
        ++errors;
      }
    };
  };
  int creates_during_delete = -1;
  {
    std::vector<std::unique_ptr<test::Background>> creators;  // stopped and joined at the end of the block
    for (int i = 0; i < 3; ++i) {
      creators.push_back(std::make_unique<test::Background>(creator(i)));
      std::this_thread::sleep_for(7ms);  // staggered: some create is always held
    }
    std::this_thread::sleep_for(100ms);
    REQUIRE(creates > 0);  // the stream runs, and goes on until the block ends
    const auto got = f.attempt("d", "delete_folder", "/p/A", 5000ms);
    REQUIRE(got.granted);  // so granted while the stream still ran, not after it
    // While the delete holds /p/A no create may be granted.
    const int before = creates;
    std::this_thread::sleep_for(50ms);
    creates_during_delete = creates - before;
    REQUIRE(f.engine->release(f.ns, got.grant.id, got.grant.token));
    std::this_thread::sleep_for(50ms);
  }
  CHECK(errors == 0);
  CHECK(failed_releases == 0);
  CHECK(creates_during_delete == 0);
  CHECK(creates > 3);
}

TEST_CASE("waiters are served in arrival order when they conflict", "[wait][fair]") {
  Fixture f;
  const auto held = f.attempt("h", "upload", "/p/A");
  REQUIRE(held.granted);
  auto first = std::async(std::launch::async, [&] { return f.attempt("w1", "rename_folder", "/p/A", 10000ms, 200ms); });
  f.until_queued("w1", "create", "/p/A");
  auto second = std::async(std::launch::async, [&] { return f.attempt("w2", "rename_folder", "/p/A", 10000ms); });
  std::this_thread::sleep_for(50ms);
  REQUIRE(f.engine->release(f.ns, held.grant.id, held.grant.token));
  const auto a = first.get();
  REQUIRE(a.granted);
  const auto b = second.get();  // granted after w1's 200 ms lease ends
  REQUIRE(b.granted);
  CHECK(b.grant.fence > a.grant.fence);
}

TEST_CASE("a fair=false waiter takes no place in line", "[wait][fair]") {
  Fixture f;
  const auto upload = f.attempt("u", "upload", "/p/A/f");
  REQUIRE(upload.granted);
  auto deleter = std::async(std::launch::async,
                            [&] { return f.attempt("d", "delete_folder", "/p/A", 3000ms, 30000ms, /*fair=*/false); });
  std::this_thread::sleep_for(100ms);
  const auto create = f.attempt("c", "create", "/p/A");  // fair, and nobody is in line
  REQUIRE(create.granted);
  REQUIRE(f.engine->release(f.ns, create.grant.id, create.grant.token));
  REQUIRE(f.engine->release(f.ns, upload.grant.id, upload.grant.token));
  const auto deleted = deleter.get();
  REQUIRE(deleted.granted);
  REQUIRE(f.engine->release(f.ns, deleted.grant.id, deleted.grant.token));
}
