// pathlock/clock.hpp: the time source of the embedded backend and the
// waiting policy.
//
// Leases and waiting deadlines are measured on a monotonic clock. Engines
// read it through this interface so that a test (or a simulation) can
// inject a ManualClock and move time forward instead of sleeping. Only the
// embedded backend takes a clock: the Redis backend measures leases on the
// server's clock (TIME inside the Redis functions).
//
// Thread safety: every method may be called from any number of threads.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>

namespace pathlock {

class Clock {
 public:
  using time_point = std::chrono::steady_clock::time_point;
  virtual ~Clock() = default;
  // The current time. Never goes backwards.
  virtual time_point now() const = 0;
};

// The process's steady clock (std::chrono::steady_clock); the default.
std::shared_ptr<const Clock> steady_clock();

// A clock that moves only when told to: starts at the steady clock's time of
// its construction and advances by advance(). Waiting requests still sleep
// in real time between their checks (bounded by the re-check interval), so a
// ManualClock is meant for tests of leases and expiry, not of waiting.
class ManualClock final : public Clock {
 public:
  ManualClock() : start_(std::chrono::steady_clock::now()) {}
  time_point now() const override { return start_ + std::chrono::nanoseconds(offset_.load()); }
  // Moves the clock forward by `d` (a negative `d` is ignored: time never
  // goes backwards).
  void advance(std::chrono::nanoseconds d) {
    if (d.count() > 0) offset_ += d.count();
  }

 private:
  const time_point start_;
  std::atomic<long long> offset_{0};
};

}  // namespace pathlock
