// What an engine does with ObserveOptions (pathlock/metrics.hpp): counting,
// the observer, the log sink and the long-wait and long-hold thresholds, in
// one object every backend owns. Private to the library.
//
// Where each metric is counted, so that a backend counts only what it alone
// can see:
//   core::wait_for_grant   every acquire's outcome, the refusal grid, the
//                          wait histogram and long waits (waiting.cpp);
//   the engines            releases, renewals, force-releases, hold time and
//                          long holds (they know when a lock goes);
//   LeaseKeeper            leases lost (through LockEngine::metrics());
//   RedisClient            backend errors, retries, failovers, call latency.
#pragma once

#include "core/request.hpp"

#include <pathlock/clock.hpp>
#include <pathlock/engine.hpp>
#include <pathlock/metrics.hpp>

#include <algorithm>
#include <array>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace pathlock::core {

class Instruments {
 public:
  // Throws InvalidRequest when options.metrics does not fit `matrix`.
  Instruments(const ObserveOptions& options, const MatrixTable& matrix);

  Metrics* metrics() const { return metrics_.get(); }
  const std::shared_ptr<Metrics>& shared_metrics() const { return metrics_; }
  const MatrixTable& matrix() const { return matrix_; }
  Millis long_wait() const { return long_wait_; }
  Millis long_hold() const { return long_hold_; }
  bool has_observer() const { return static_cast<bool>(observer_); }

  void log(LogLevel level, std::string_view message, const std::vector<LogField>& fields) const noexcept;
  void observe(const ObservedCall& call) const noexcept;
  // The sink itself, for parts that log on their own (the Redis client).
  LogSink sink() const;

  // A lock of `op` (owner, first path) held for `held` when its holder
  // released or renewed it: counts the hold time (when `ended`) and logs
  // once per lock (`*logged` set) when it passed long_hold.
  void held(std::string_view ns, std::string_view id, int op, std::string_view owner, std::string_view path,
            std::chrono::nanoseconds held_for, bool ended, bool* logged) const noexcept;

  // After a release, force-release or renew: counts and observes.
  void released(std::string_view ns, std::string_view id, bool ok, bool forced) const noexcept;
  void renewed(std::string_view ns, std::string_view id, bool ok) const noexcept;

 private:
  void observe_lock_call(ObservedCall::Kind kind, std::string_view ns, std::string_view id, bool ok) const noexcept;

  const MatrixTable& matrix_;
  std::shared_ptr<Metrics> metrics_;  // null: counting is off
  std::function<void(const ObservedCall&)> observer_;
  LogSink log_;
  Millis long_wait_, long_hold_;
};

// The locks this process was granted, for backends whose lock records do
// not say when they were granted (Redis): id -> grant time, operation,
// owner and first path, so that a release can measure the hold and a renew
// can notice a long hold. Sharded by id, a mutex per shard: a grant and a
// release each take one uncontended mutex, next to a network round trip.
// Entries of locks never released (expired, or released by another
// process) are dropped once their lease has certainly ended: a shard is
// swept when it has doubled since its last sweep.
class HoldTable {
 public:
  struct Held {
    Clock::time_point granted_at;
    Clock::time_point lease_end;  // local estimate, pushed on by renewals
    Millis ttl{0};  // the lease a renew without a TTL extends by
    int op = 0;
    std::string owner, path;
    std::uint32_t holds = 1;
    bool logged = false;
  };
  // A grant with `holds` (1: a new lock; more: reentry of a known one),
  // lease `lease` left, TTL `ttl`.
  void granted(std::string_view ns, std::string_view id, int op, std::string_view owner, std::string_view path,
               std::uint32_t holds, Clock::time_point now, Millis lease, Millis ttl);
  // The same for what an acquire of `request` (resolved: `resolved`)
  // answered: nothing unless it was granted; the lock is noted at its first
  // resolved target.
  void granted(const LockRequest& request, const ResolvedRequest& resolved, const AcquireResult& out,
               Clock::time_point now);
  // A successful release leaving `holds_left`; returns the lock's record
  // when it is gone (holds_left == 0) and this process granted it.
  std::optional<Held> released(std::string_view ns, std::string_view id, std::uint32_t holds_left);
  // A successful renew at `now` (`ttl`: the renew's, else the lock's):
  // extends the local lease end; calls f(Held&) under the shard's mutex
  // when the lock is known.
  template <class F>
  void renewed(std::string_view ns, std::string_view id, Clock::time_point now, std::optional<Millis> ttl, F&& f) {
    Shard& s = shard(ns, id);
    std::lock_guard guard(s.mutex);
    const auto it = s.map.find(key(ns, id));
    if (it == s.map.end()) return;
    Held& h = it->second;
    if (ttl) h.ttl = *ttl;
    h.lease_end = std::max(h.lease_end, now + h.ttl);
    f(h);
  }
  std::size_t size();
  // In a forked child, before its first use there: starts empty, with
  // fresh mutexes. A thread of the parent may have held a shard's mutex, or
  // been changing its map, when the fork landed; the child's copies are
  // left as they are (leaked, never locked or destroyed). The parent's
  // grant times mean nothing to the child's locks.
  void forget_after_fork() noexcept;

 private:
  struct Shard {
    std::mutex mutex;
    std::unordered_map<std::string, Held> map;
    std::size_t swept_at = 64;
  };
  static std::string key(std::string_view ns, std::string_view id);
  Shard& shard(std::string_view ns, std::string_view id);
  std::array<Shard, 16> shards_;
};

// For backends whose records do not say when a lock was granted (Redis,
// PostgreSQL): after a successful renew of `id` (`ttl`: the renew's),
// extends its local lease end and logs a long hold once; after a
// successful release leaving `holds_left`, counts the hold time when the
// lock is gone and this process granted it.
void hold_renewed(HoldTable& holds, const Instruments& instruments, std::string_view ns, std::string_view id,
                  std::optional<Millis> ttl);
void hold_released(HoldTable& holds, const Instruments& instruments, std::string_view ns, std::string_view id,
                   std::uint32_t holds_left);

}  // namespace pathlock::core
