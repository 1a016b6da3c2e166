// The waiting policy (src/core/waiting.hpp) on its own: a scripted backend
// whose sleeps advance a ManualClock, so every step of the loop is visible
// and the test takes no real time.
#include "core/waiting.hpp"

#include <catch2/catch.hpp>

#include <stdexcept>
#include <vector>

using namespace pathlock;
using namespace std::chrono_literals;

namespace {

// Refuses until attempt number `grant_at` (never when 0); records each step.
struct ScriptedBackend final : core::WaitingAttempts {
  ManualClock& clock;
  int grant_at = 0;
  Millis conflict_left{30000};
  bool throw_on_second = false;
  bool missed_on_listen = true;
  std::vector<Millis> reserves;  // the reservation asked for by each attempt
  std::vector<Millis> sleeps;    // how long each sleep lasted
  int listens = 0, leaves = 0;

  explicit ScriptedBackend(ManualClock& c) : clock(c) {}

  AcquireResult attempt(Millis reserve) override {
    reserves.push_back(reserve);
    if (throw_on_second && reserves.size() == 2) throw BackendError("connection lost");
    AcquireResult r;
    r.granted = grant_at != 0 && static_cast<int>(reserves.size()) == grant_at;
    r.conflict.expires_in = conflict_left;
    return r;
  }
  bool listen() override {
    ++listens;
    return missed_on_listen;
  }
  void sleep_until(Clock::time_point until) override {
    const auto d = std::chrono::duration_cast<Millis>(until - clock.now());
    sleeps.push_back(d);
    clock.advance(d);
  }
  void leave() noexcept override { ++leaves; }
};

LockRequest waiting(Millis wait, bool fair = true) {
  LockRequest r{"ns", "o", "upload", {{"target", "/p"}}, 30000ms, wait};
  r.fair = fair;
  return r;
}

}  // namespace

TEST_CASE("no wait: one attempt, no place in line", "[waiting]") {
  ManualClock clock;
  ScriptedBackend b(clock);
  CHECK_FALSE(core::wait_for_grant(waiting(0ms), clock, b).granted);
  CHECK(b.reserves == std::vector<Millis>{0ms});
  CHECK(b.listens == 0);
}

TEST_CASE("a wait re-checks at least every kRecheck and ends with a last attempt at the deadline", "[waiting]") {
  ManualClock clock;
  ScriptedBackend b(clock);
  const auto start = clock.now();
  CHECK_FALSE(core::wait_for_grant(waiting(1000ms), clock, b).granted);
  CHECK(clock.now() - start == 1000ms);
  CHECK(b.listens == 1);
  // First refusal, listen (a change may have been missed: attempt at once),
  // then sleeps of kRecheck until the deadline, then the last attempt.
  REQUIRE(b.sleeps.size() == 5);
  for (const Millis s : b.sleeps) CHECK(s == core::kRecheck);
  REQUIRE(b.reserves.size() == 7);
  CHECK(b.reserves[0] == 1000ms + core::kRecheck);  // outlasts the deadline by one re-check
  CHECK(b.reserves.back() == 0ms);                  // the last attempt leaves the line
  for (const Millis r : b.reserves) CHECK(r <= core::kMaxReservation);
}

TEST_CASE("a long wait reserves its place at most kMaxReservation at a time", "[waiting]") {
  ManualClock clock;
  ScriptedBackend b(clock);
  b.grant_at = 4;
  CHECK(core::wait_for_grant(waiting(60000ms), clock, b).granted);
  CHECK(b.reserves == std::vector<Millis>(4, core::kMaxReservation));
}

TEST_CASE("the sleep ends when the conflicting lease ends", "[waiting]") {
  ManualClock clock;
  ScriptedBackend b(clock);
  b.conflict_left = 30ms;
  b.missed_on_listen = false;
  b.grant_at = 2;
  CHECK(core::wait_for_grant(waiting(5000ms), clock, b).granted);
  CHECK(b.sleeps == std::vector<Millis>{31ms});
}

TEST_CASE("an unfair wait has no place in line", "[waiting][fair]") {
  ManualClock clock;
  ScriptedBackend b(clock);
  CHECK_FALSE(core::wait_for_grant(waiting(500ms, false), clock, b).granted);
  for (const Millis r : b.reserves) CHECK(r == 0ms);
}

TEST_CASE("an error while waiting leaves the line, then propagates", "[waiting]") {
  ManualClock clock;
  ScriptedBackend b(clock);
  b.throw_on_second = true;
  CHECK_THROWS_AS(core::wait_for_grant(waiting(1000ms), clock, b), BackendError);
  CHECK(b.leaves == 1);
  ScriptedBackend unfair(clock);
  unfair.throw_on_second = true;
  CHECK_THROWS_AS(core::wait_for_grant(waiting(1000ms, false), clock, unfair), BackendError);
  CHECK(unfair.leaves == 0);  // never had a place
}
