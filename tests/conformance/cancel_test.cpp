// Stopping an acquire (LockEngine::acquire(request, stop)), on every
// backend: a stopped wait leaves the line at once and holds nothing; a grant
// that races the stop is given back, never dropped. Each race is decided by
// a sync point (test::until_waiting, test::when_granted), never by a sleep.
#include <catch2/catch.hpp>
#include <future>
#include <pathlock/engine.hpp>
#include <pathlock/guard.hpp>
#include <pathlock/metrics.hpp>
#include <stop_token>
#include <thread>

#include "conformance/fixture.hpp"

using namespace pathlock;
using namespace std::chrono_literals;

namespace {

using test::Fixture;

// A stoppable acquire of `owner`'s upload on `path`, waiting up to a minute
// (a stop that failed to end the wait would show as a timeout below).
std::future<AcquireResult> stoppable_upload(Fixture& f, const std::string& owner, const std::string& path,
                                            std::stop_token stop, bool fair = true) {
  return std::async(std::launch::async, [&f, owner, path, stop, fair] {
    return f.engine->acquire(f.request(owner, "upload", {{"target", path}}, 30000ms, 60000ms, fair), stop);
  });
}

// The answer of `answer`, or a failed test if it does not come in 30 s.
AcquireResult answer_of(std::future<AcquireResult>& answer) {
  REQUIRE(answer.wait_for(30s) == std::future_status::ready);
  return answer.get();
}

// The lock the waiters below wait behind: a's delete of /p/A.
Grant folder_held(Fixture& f) {
  const AcquireResult held = f.one("a", "delete_folder", "/p/A");
  REQUIRE(held.granted());
  return held.grant;
}

// Releases it: then nothing is held (a stopped waiter took nothing).
void release_leaves_nothing(Fixture& f, const Grant& held) {
  REQUIRE(f.engine->release(f.ns, held.id, held.token));
  CHECK(f.held() == 0);
}

}  // namespace

TEST_CASE("a stopped wait leaves the line at once and holds nothing", "[cancel]") {
  Fixture f;
  const Grant held = folder_held(f);
  std::stop_source stop;
  auto waiter = stoppable_upload(f, "b", "/p/A/x", stop.get_token());
  REQUIRE(test::until_waiting(f.ns, "b"));
  CHECK(f.engine->waiters(f.ns).size() == 1);
  stop.request_stop();
  const AcquireResult got = answer_of(waiter);
  CHECK_FALSE(got.granted());
  CHECK(got.cancelled());
  CHECK(got.conflict.id == held.id);  // the last refusal it saw
  CHECK(f.engine->waiters(f.ns).empty());   // out of the line
  // Nobody in line: a newcomer at the same path is refused by the holder only.
  const auto newcomer = f.one("c", "upload", "/p/A/x");
  CHECK_FALSE(newcomer.conflict.queued);
  release_leaves_nothing(f, held);  // the release let nobody in
}

TEST_CASE("a grant that races the stop is given back", "[cancel]") {
  Fixture f;
  const Grant held = folder_held(f);
  std::stop_source stop;
  test::when_granted(f.ns, "b", [&] { stop.request_stop(); });  // the stop comes just after the grant
  auto waiter = stoppable_upload(f, "b", "/p/A/x", stop.get_token());
  REQUIRE(test::until_waiting(f.ns, "b"));
  REQUIRE(f.engine->release(f.ns, held.id, held.token));  // lets it in
  const AcquireResult got = answer_of(waiter);
  CHECK_FALSE(got.granted());
  CHECK(got.cancelled());
  CHECK(f.held() == 0);  // given back, not dropped
  CHECK(f.engine->waiters(f.ns).empty());
  CHECK(f.free("/p/A"));
}

TEST_CASE("a stop after the call returned leaves the grant to the caller", "[cancel]") {
  Fixture f;
  std::stop_source stop;
  const AcquireResult got = f.engine->acquire(f.request("b", "upload", {{"target", "/p/A"}}, 30000ms, 1000ms),
                                              stop.get_token());
  REQUIRE(got.granted());
  stop.request_stop();
  CHECK(f.engine->is_held(f.ns, got.grant.id, got.grant.token));
  CHECK(f.engine->release(f.ns, got.grant.id, got.grant.token));
}

TEST_CASE("an acquire stopped before it starts asks nothing and holds nothing", "[cancel]") {
  Fixture f;
  std::stop_source stop;
  stop.request_stop();
  const AcquireResult got = f.engine->acquire(f.request("b", "upload", {{"target", "/p/A"}}), stop.get_token());
  CHECK(got.cancelled());
  CHECK_FALSE(got.granted());
  CHECK(f.held() == 0);
}

TEST_CASE("a stoppable acquire that does not wait gives back a grant that raced the stop", "[cancel]") {
  Fixture f;
  std::stop_source stop;
  test::when_granted(f.ns, "b", [&] { stop.request_stop(); });
  const AcquireResult got = f.engine->acquire(f.request("b", "upload", {{"target", "/p/A"}}), stop.get_token());
  CHECK(got.cancelled());
  CHECK(f.held() == 0);
}

TEST_CASE("an unfair wait stops too", "[cancel]") {
  Fixture f;
  const Grant held = folder_held(f);
  std::stop_source stop;
  auto waiter = stoppable_upload(f, "b", "/p/A/x", stop.get_token(), /*fair=*/false);
  REQUIRE(test::until_waiting(f.ns, "b"));
  stop.request_stop();
  CHECK(answer_of(waiter).cancelled());
  release_leaves_nothing(f, held);
}

TEST_CASE("a stopped LockGuard owns nothing and says it was cancelled", "[cancel]") {
  Fixture f;
  const Grant held = folder_held(f);
  std::stop_source stop;
  auto guard = std::async(std::launch::async, [&] {
    return LockGuard(*f.engine, f.request("b", "upload", {{"target", "/p/A/x"}}, 30000ms, 60000ms),
                     stop.get_token());
  });
  REQUIRE(test::until_waiting(f.ns, "b"));
  stop.request_stop();
  REQUIRE(guard.wait_for(30s) == std::future_status::ready);
  const LockGuard g = guard.get();
  CHECK_FALSE(g.owns_lock());
  CHECK(g.cancelled());
  release_leaves_nothing(f, held);
}
