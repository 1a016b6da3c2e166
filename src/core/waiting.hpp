// The waiting policy: how a refused request with LockRequest::wait > 0
// waits, the same for every backend. Private to the library.
//
// A waiting acquire is a loop of attempts. After a refusal it sleeps until
// the first of: a wake-up from the backend (a release, an expiry or a waiter
// leaving that may let it in), the end of the conflicting lease (an expiry
// wakes nobody until some call notices it), the re-check interval kRecheck
// (so a lost wake-up costs at most that long) and the deadline. The attempt
// made at the deadline is the last; its refusal is the answer.
//
// Fairness (docs/design.md#waiting-and-fairness). A fair request keeps a
// place in line while it waits: each refused attempt reserves the place for
// `reserve` (at most kMaxReservation, so a waiter that died blocks younger
// requests no longer than that); the attempt that is granted, and the last
// attempt when refused, take the request out of the line; an exception makes
// the policy call leave() before it propagates.
//
// Changing the policy: this file and waiting.cpp only. A backend supplies
// the four steps of WaitingAttempts and nothing else about waiting.
#pragma once

#include <pathlock/clock.hpp>
#include <pathlock/engine.hpp>

#include "core/observe.hpp"
#include "core/request.hpp"

#include <algorithm>
#include <stop_token>
#include <string>
#include <vector>

namespace pathlock::core {

// Longest sleep between two attempts of a waiting request.
inline constexpr Millis kRecheck{200};
// Longest reservation of a place in line. A live waiter refreshes it with
// every attempt, at least every kRecheck, so 10x leaves room for stalls.
inline constexpr Millis kMaxReservation{2000};
// A sleep that ends with the conflicting lease lasts this much longer, so
// the next attempt finds the lease over.
inline constexpr Millis kWakeMargin{1};

// The reservation an attempt asks for with `left` of its wait left (whole
// milliseconds, rounded up): one re-check period past the deadline, so the
// attempt made at the deadline still finds its own place, at most
// kMaxReservation; 0 for the attempt at the deadline (left <= 0). Every
// client computes the same from the contract's "waiting" numbers
// (docs/lua-protocol.md#waiting-and-the-line).
constexpr Millis reservation(Millis left) {
  return left <= Millis{0} ? Millis{0} : std::min(left + kRecheck, kMaxReservation);
}

// What a backend provides to the waiting policy for one acquire call.
class WaitingAttempts {
 public:
  virtual ~WaitingAttempts() = default;
  // One attempt. `reserve` > 0: a refusal keeps (or takes) the caller's
  // place in line for that long; 0: a refusal leaves the line (or the
  // request has no place in line). A grant always leaves the line.
  virtual AcquireResult attempt(Millis reserve) = 0;
  // Called once, after the first refusal: start listening for wake-ups.
  // Returns true when a change between that refusal and the start of
  // listening could have been missed, so the policy attempts again at once.
  virtual bool listen() = 0;
  // Sleeps until `until` or until a change that may let the request in.
  virtual void sleep_until(Clock::time_point until) = 0;
  // Takes the request out of the line after an error. Best effort.
  virtual void leave() noexcept = 0;
  // Cuts the current sleep_until() short, or the next one if none runs now:
  // called once, from any thread (the caller's stop callback). Never blocks
  // on the network.
  virtual void interrupt() noexcept = 0;
  // Releases a grant this call no longer hands out (the caller stopped the
  // call while the grant was on its way). Best effort: on failure the lease
  // ends at its TTL.
  virtual void give_back(const Grant& grant) noexcept = 0;
  // True for a conversion: a grant made is kept even when the stop came
  // first (a conversion cannot be given back: the lock's old operation may
  // no longer fit beside what was granted since), and the call answers it.
  virtual bool keeps_grant_on_stop() const noexcept { return false; }
};

// What every backend's give_back() does: releases `grant` through the
// engine's own release(), swallowing a failure (the lease then ends at its TTL).
void release_quietly(LockEngine& engine, std::string_view ns, const Grant& grant) noexcept;

// Does a wake-up concern `req`? `payloads` are the messages of a backend's
// wake-up channel: each the removed paths, LF-separated, or empty ("look
// again"). Only a removal that overlaps one of the request's targets can let
// it in; the Redis and PostgreSQL backends sleep on until one does.
bool wake_concerns(const std::vector<std::string>& payloads, const ResolvedRequest& req);

// Runs the policy for `request` (already validated) on `clock`.
// Stopping (`stop`): checked before every attempt and after every sleep,
// and a stop interrupts the sleep (WaitingAttempts::interrupt); the call
// then leaves the line and answers AcquireResult::cancelled. A grant that
// comes back from an attempt after the stop was requested is given back
// (give_back) and the answer is `cancelled`: stopped before the call
// returned means nothing held.
// With `instruments`, also counts the call for operation code `op` (its
// outcome, the first refusal it saw, how long it waited), tells the
// observer, and logs a wait still refused after long_wait, once, naming the
// holder of the refusal it saw then (observe.hpp).
AcquireResult wait_for_grant(const LockRequest& request, const Clock& clock, WaitingAttempts& backend,
                             const Instruments* instruments = nullptr, int op = -1, std::stop_token stop = {});

// Test hook, a sync point in the manner of RocksDB's TEST_SYNC_POINT: a named
// place in the waiting loop where a test is told that a request has reached
// it. waiting() is called each time an attempt of `request` was refused and
// the request is about to sleep: it is now waiting, listening for wake-ups
// and (when fair) holding its place in line, on every backend. Tests wait
// for it instead of sleeping (tests/support/waiting_probe.hpp).
// Unused (the default, nullptr), it costs one atomic load per refused
// attempt of a waiting request. The observer is called from the waiting
// thread, must not throw, and must outlive its registration (a test
// registers one for the life of the process).
class WaitObserver {
 public:
  virtual void waiting(const LockRequest& request) noexcept = 0;
  // Called when an attempt of a stoppable call (one with a stop token that
  // can be stopped) was granted, before the policy looks at the token: the
  // place where a test stops the call to make the grant race the stop.
  virtual void granted(const LockRequest& request) noexcept { (void)request; }
  // Called when a sleep of a waiting request ended before the time it was
  // given: a wake-up from the backend (a notification, a "look again") or a
  // stop cut it short, not the re-check timer, the lease's end or the
  // deadline. Tests tell a woken waiter from one that re-checked by it.
  virtual void woken(const LockRequest& request) noexcept { (void)request; }

 protected:
  ~WaitObserver() = default;
};
void set_wait_observer(WaitObserver* observer) noexcept;

}  // namespace pathlock::core
