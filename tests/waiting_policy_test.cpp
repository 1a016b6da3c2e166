// The waiting policy (src/core/waiting.hpp) on its own: a scripted backend
// whose sleeps advance a ManualClock, so every step of the loop is visible
// and the test takes no real time.
#include "core/waiting.hpp"

#include "support/waiting_probe.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <stdexcept>
#include <functional>
#include <stop_token>
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
  int listens = 0, leaves = 0, interrupts = 0, given_back = 0;
  std::function<void()> on_sleep;    // runs at the start of each sleep
  std::function<void()> on_attempt;  // runs inside each attempt (a stop racing it)
  Millis woken_after{0};             // > 0: every sleep is cut short (a wake-up) after this long

  explicit ScriptedBackend(ManualClock& c) : clock(c) {}

  AcquireResult attempt(Millis reserve) override {
    reserves.push_back(reserve);
    if (on_attempt) on_attempt();
    if (throw_on_second && reserves.size() == 2) throw BackendError("connection lost");
    AcquireResult r;
    r.outcome = grant_at != 0 && static_cast<int>(reserves.size()) == grant_at ? AcquireOutcome::granted
                                                                                   : AcquireOutcome::conflicted;
    r.conflict.expires_in = conflict_left;
    return r;
  }
  bool listen() override {
    ++listens;
    return missed_on_listen;
  }
  void sleep_until(Clock::time_point until) override {
    if (on_sleep) on_sleep();
    auto d = std::chrono::duration_cast<Millis>(until - clock.now());
    if (woken_after > Millis{0}) d = std::min(d, woken_after);
    sleeps.push_back(d);
    clock.advance(d);
  }
  void leave() noexcept override { ++leaves; }
  void interrupt() noexcept override { ++interrupts; }
  void give_back(const Grant&) noexcept override { ++given_back; }
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
  CHECK_FALSE(core::wait_for_grant(waiting(0ms), clock, b).granted());
  CHECK(b.reserves == std::vector<Millis>{0ms});
  CHECK(b.listens == 0);
}

TEST_CASE("a wait re-checks at least every kRecheck and ends with a last attempt at the deadline", "[waiting]") {
  ManualClock clock;
  ScriptedBackend b(clock);
  const auto start = clock.now();
  CHECK_FALSE(core::wait_for_grant(waiting(1000ms), clock, b).granted());
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
  CHECK(core::wait_for_grant(waiting(60000ms), clock, b).granted());
  CHECK(b.reserves == std::vector<Millis>(4, core::kMaxReservation));
}

TEST_CASE("the sleep ends when the conflicting lease ends", "[waiting]") {
  ManualClock clock;
  ScriptedBackend b(clock);
  b.conflict_left = 30ms;
  b.missed_on_listen = false;
  b.grant_at = 2;
  CHECK(core::wait_for_grant(waiting(5000ms), clock, b).granted());
  CHECK(b.sleeps == std::vector<Millis>{31ms});
}

TEST_CASE("an unfair wait has no place in line", "[waiting][fair]") {
  ManualClock clock;
  ScriptedBackend b(clock);
  CHECK_FALSE(core::wait_for_grant(waiting(500ms, false), clock, b).granted());
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

TEST_CASE("policy: a stop during a sleep interrupts it, leaves the line once and answers cancelled", "[waiting]") {
  ManualClock clock;
  ScriptedBackend b(clock);
  std::stop_source stop;
  b.on_sleep = [&] { stop.request_stop(); };
  const AcquireResult r = core::wait_for_grant(waiting(5000ms), clock, b, nullptr, -1, stop.get_token());
  CHECK(r.cancelled());
  CHECK_FALSE(r.granted());
  CHECK(b.interrupts == 1);  // the stop callback cut the sleep short
  CHECK(b.leaves == 1);
  CHECK(b.given_back == 0);
}

TEST_CASE("policy: a grant that comes back after the stop is given back", "[waiting]") {
  ManualClock clock;
  ScriptedBackend b(clock);
  b.grant_at = 3;
  std::stop_source stop;
  // The stop arrives while the granting attempt is on its way.
  b.on_attempt = [&] {
    if (b.reserves.size() == 3) stop.request_stop();
  };
  const AcquireResult r = core::wait_for_grant(waiting(5000ms), clock, b, nullptr, -1, stop.get_token());
  CHECK(r.cancelled());
  CHECK_FALSE(r.granted());
  CHECK(b.given_back == 1);
  CHECK(b.leaves == 0);  // a grant already took it out of the line
}

TEST_CASE("policy: a stop between two sleeps ends the wait before the next attempt", "[waiting]") {
  ManualClock clock;
  ScriptedBackend b(clock);
  b.grant_at = 4;
  std::stop_source stop;
  int sleeps = 0;
  b.on_sleep = [&] {
    if (++sleeps == 2) stop.request_stop();
  };
  const AcquireResult r = core::wait_for_grant(waiting(5000ms), clock, b, nullptr, -1, stop.get_token());
  CHECK(r.cancelled());
  CHECK(b.reserves.size() == 3);  // no fourth attempt after the stop
  CHECK(b.leaves == 1);
}

TEST_CASE("policy: a stop already requested asks the backend nothing", "[waiting]") {
  ManualClock clock;
  ScriptedBackend b(clock);
  std::stop_source stop;
  stop.request_stop();
  const AcquireResult r = core::wait_for_grant(waiting(5000ms), clock, b, nullptr, -1, stop.get_token());
  CHECK(r.cancelled());
  CHECK(b.reserves.empty());
  CHECK(b.leaves == 0);
}

TEST_CASE("policy: without a stop token nothing changes", "[waiting]") {
  ManualClock clock;
  ScriptedBackend b(clock);
  b.grant_at = 2;
  const AcquireResult r = core::wait_for_grant(waiting(5000ms), clock, b);
  CHECK(r.granted());
  CHECK_FALSE(r.cancelled());
  CHECK(b.interrupts == 0);
}

TEST_CASE("policy: a sleep cut short by a wake-up is told to the observer, one that ran to its time is not",
          "[waiting]") {
  ManualClock clock;
  ScriptedBackend timer(clock);
  timer.grant_at = 4;
  LockRequest r = waiting(5000ms);
  r.ns = "policy-woken";
  r.owner = "timer";
  REQUIRE(core::wait_for_grant(r, clock, timer).granted());
  CHECK(timer.sleeps == std::vector<Millis>{core::kRecheck, core::kRecheck});
  CHECK(test::times_woken(r.ns, "timer") == 0);
  ScriptedBackend woken(clock);
  woken.grant_at = 4;
  woken.woken_after = 5ms;
  r.owner = "woken";
  REQUIRE(core::wait_for_grant(r, clock, woken).granted());
  CHECK(woken.sleeps == std::vector<Millis>{5ms, 5ms});
  CHECK(test::times_woken(r.ns, "woken") == 2);
}
