// Hold times and long holds of the embedded backend's locks, taken under the
// namespace mutex (hold_report) and logged after it is let go (report): a log
// sink may call the engine, even on the same namespace. Private to the
// library.
#pragma once

#include "core/observe.hpp"
#include "memory/lock_table.hpp"

#include <pathlock/clock.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace pathlock::memory {

struct HoldReport {
  int op = 0;
  std::chrono::nanoseconds held_for{0};
  bool ended = false;
  bool log = false;  // a long hold, not logged yet: id, owner and path are set
  std::string id, owner, path;
};

// `lock` at `now` (`ended`: its last hold went); marks it logged when its
// long hold is to be logged, copying what the log needs.
inline HoldReport hold_report(Lock& lock, Clock::time_point now, bool ended, Millis long_hold) {
  HoldReport r;
  r.op = lock.op;
  r.held_for = now - lock.granted_at;
  r.ended = ended;
  if (r.held_for >= long_hold && !lock.hold_logged) {
    lock.hold_logged = true;
    r.log = true;
    r.id = lock.id;
    r.owner = lock.owner;
    r.path = lock.entries.front().path;
  }
  return r;
}

// Counts the hold (when it ended) and logs a long one; call without locks.
inline void report(const core::Instruments& in, std::string_view ns, const std::optional<HoldReport>& r) {
  if (!r) return;
  bool logged = !r->log;
  in.held(ns, r->id, r->op, r->owner, r->path, r->held_for, r->ended, &logged);
}

}  // namespace pathlock::memory
