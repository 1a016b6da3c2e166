// pathlock/metrics.hpp: what an engine counts, what it logs, and the options
// that connect both to a service (docs/operations.md#metrics).
//
// Metrics. A Metrics object holds every counter and histogram of one or
// more engines of one matrix (pass the same shared_ptr in the options of
// several engines to add them up). Counting is a few additions into the
// calling thread's own block of counters (a thread's first count into a
// Metrics takes a mutex once to create it); labels are bounded: operation names come from the matrix
// (by op code), never paths, owners or namespaces. Read it three ways:
//   snapshot()      a copy of every value, for C++ code and tests;
//   prometheus()    the Prometheus text exposition format (version 0.0.4),
//                   `pathlock_` prefix, `_total` counters, `_seconds`
//                   histograms; pathlock/metrics_server.hpp serves it;
//   the observer    ObserveOptions::observer, called for each acquire,
//                   release and renew, to feed a service's own metrics or
//                   tracing.
//
// Logs. The library writes nothing to stderr by itself: every message goes
// through ObserveOptions::log (level, message, structured fields); the
// default sink writes "pathlock: LEVEL: MESSAGE" lines to stderr.
//
// Thread safety: every method of Metrics may be called concurrently; a
// snapshot taken while engines count is a consistent view of each single
// value, not of all values at one instant.
#pragma once

#include <pathlock/engine.hpp>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace pathlock {

// The outcomes a conversion is counted by (MetricsSnapshot::conversions):
// the six AcquireOutcomes, and an exception.
inline constexpr std::size_t kConversionOutcomeCount = 7;
inline constexpr std::size_t kConversionError = 6;
// Its `outcome` label: granted, refused, not_holder, cancelled, over_limit,
// would_deadlock, error.
std::string_view conversion_outcome_name(std::size_t index);

// How one acquire call ended.
enum class Outcome : std::uint8_t {
  granted,              // granted at the first attempt
  refused,              // refused, without waiting (LockRequest::wait == 0)
  waited_then_granted,  // refused first, granted while waiting
  timed_out,            // refused until the wait ended
  error,                // an exception (BackendError, ...) left the call
  cancelled,            // stopped by the caller's stop token (acquire(request, stop))
};
inline constexpr std::size_t kOutcomeCount = 6;
std::string_view outcome_name(Outcome outcome);

// The "relation" label of a refusal: the three Relations of a held lock, and
// `queued` for an older waiting request that a fair request may not overtake.
inline constexpr std::size_t kRefusalKindCount = 4;
inline constexpr std::size_t kRefusalQueued = 3;
std::string_view refusal_kind_name(std::size_t kind);  // same, held_ancestor, held_descendant, queued

// The backend a call went to (Backend, engine.hpp): the `backend` label of
// the call, retry and failover series (pathlock_backend_*). The embedded
// backend makes no calls: its series stay at 0 and are not exported.
inline constexpr std::size_t kBackendCount = 3;
std::string_view backend_name(Backend backend);  // "memory", "redis", "postgres"

// Why a backend's client sent a command again because it provably did not
// run (the Redis client's retry rule, redis_client.hpp: moved and ask are a
// Redis Cluster's redirections; the others are any backend's).
enum class RetryReason : std::uint8_t { moved, ask, busy, read_only, not_sent, unreachable };
inline constexpr std::size_t kRetryReasonCount = 6;
std::string_view retry_reason_name(RetryReason reason);

// How a backend's client learnt that its primary changed (Redis: Sentinel
// or Cluster).
enum class FailoverKind : std::uint8_t {
  sentinel,  // the sentinels named another master
  cluster,   // a cluster node was unreachable or read-only; the slot map was read again
};
inline constexpr std::size_t kFailoverKindCount = 2;
std::string_view failover_kind_name(FailoverKind kind);

// Upper bounds (seconds) of every histogram's buckets; a last, implicit
// bucket (+Inf) takes the rest.
inline constexpr std::array<double, 19> kSecondsBuckets = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
    0.25,   0.5,     1,      2.5,   5,      10,    30,   60,    300};

struct HistogramSnapshot {
  // counts[i]: observations in bucket i alone (not cumulative);
  // counts.back() is the +Inf bucket.
  std::array<std::uint64_t, kSecondsBuckets.size() + 1> counts{};
  double sum = 0;  // seconds
  std::uint64_t count() const;
};

struct MetricsSnapshot {
  std::vector<std::string> ops;  // operation names; index = op code of the matrix
  // acquires[op][outcome]
  std::vector<std::array<std::uint64_t, kOutcomeCount>> acquires;
  // Acquire calls refused at least once, by the first refusal they saw:
  // refusals[(requested_op * ops.size() + held_op) * kRefusalKindCount + kind].
  std::vector<std::uint64_t> refusals;
  std::vector<HistogramSnapshot> wait;  // [op]: calls that waited, from call to answer
  std::vector<HistogramSnapshot> hold;  // [op]: locks released, from grant to the last release
  std::uint64_t releases = 0;           // release calls that released (a hold or the lock)
  std::uint64_t force_releases = 0;     // force_release calls that removed a lock
  std::uint64_t renewals = 0;           // renew calls that extended a lease
  std::uint64_t renewals_missing = 0;   // renew calls that found no live lock
  std::uint64_t leases_lost = 0;        // LeaseKeeper leases lost
  std::uint64_t long_waits = 0;         // waits logged as long (ObserveOptions::long_wait)
  std::uint64_t long_holds = 0;         // holds logged as long (ObserveOptions::long_hold)
  std::uint64_t backend_errors = 0;     // BackendErrors raised by a backend's client
  // Acquire calls refused by a namespace's limit, by LimitKind (added in 1.1).
  std::array<std::uint64_t, 3> limit_refusals{};
  // Conversions (LockEngine::convert, added in 1.1) by how they ended: index
  // AcquireOutcome (granted, conflicted, not_holder, cancelled, over_limit,
  // would_deadlock), then kConversionError for an exception.
  std::array<std::uint64_t, kConversionOutcomeCount> conversions{};
  // Per backend (index: Backend): one call, retries included; commands sent
  // again, by reason; changes of primary, by kind.
  std::array<HistogramSnapshot, kBackendCount> calls{};
  std::array<std::array<std::uint64_t, kRetryReasonCount>, kBackendCount> backend_retries{};
  std::array<std::array<std::uint64_t, kFailoverKindCount>, kBackendCount> backend_failovers{};
  // Redis's rows of the three above, as in 1.0 (kept until 2.0; the
  // pathlock_redis_* series they feed go in 1.2: docs/changes.md).
  std::array<std::uint64_t, kRetryReasonCount> retries{};
  std::array<std::uint64_t, kFailoverKindCount> failovers{};
  HistogramSnapshot redis_calls;
  // Work in progress, per operation: acquire calls waiting now (refused at
  // least once, not answered yet), and how long the oldest of them has.
  std::vector<std::uint64_t> waiting;
  std::vector<double> oldest_wait;  // seconds; 0 when none waits

  // Lookups by name; 0 for an unknown operation.
  std::uint64_t acquired(std::string_view op, Outcome outcome) const;
  std::uint64_t refused(std::string_view op, std::string_view held_op, std::size_t kind) const;
  // Sum over every operation and outcome.
  std::uint64_t acquires_total() const;
  std::uint64_t refusals_total() const;
};

class Metrics {
 public:
  // Counters for the operations of `matrix` (which need not outlive this).
  explicit Metrics(const MatrixTable& matrix = default_matrix());
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  MetricsSnapshot snapshot() const;
  // Every metric in the Prometheus text format, with HELP and TYPE lines.
  // Every series appears from the start, at 0: each operation's (and each
  // pair of operations' refusals) as soon as the Metrics exists, so that
  // increase() and rate() see the first event.
  std::string prometheus() const;
  // True when `matrix` has the same operations, in the same order.
  bool fits(const MatrixTable& matrix) const;

  // Counting, for engines (and for a backend of your own). `op` and
  // `held_op` are op codes of the matrix; out-of-range codes are ignored.
  void count_acquire(int op, Outcome outcome) noexcept;
  void count_refusal(int op, int held_op, std::size_t kind) noexcept;
  void observe_wait(int op, std::chrono::nanoseconds waited) noexcept;
  void observe_hold(int op, std::chrono::nanoseconds held) noexcept;
  void count_release() noexcept;
  void count_force_release() noexcept;
  void count_renewal(bool renewed) noexcept;
  void count_lease_lost() noexcept;
  void count_long_wait() noexcept;
  void count_long_hold() noexcept;
  void count_backend_error() noexcept;
  void count_limit_refusal(LimitKind kind) noexcept;
  // One conversion, by outcome (index as MetricsSnapshot::conversions).
  void count_conversion(std::size_t outcome) noexcept;
  void count_retry(Backend backend, RetryReason reason) noexcept;
  void count_failover(Backend backend, FailoverKind kind) noexcept;
  void observe_call(Backend backend, std::chrono::nanoseconds took) noexcept;
  // 1.0's spellings: the Redis backend's (kept until 2.0).
  void count_retry(RetryReason reason) noexcept { count_retry(Backend::redis, reason); }
  void count_failover(FailoverKind kind) noexcept { count_failover(Backend::redis, kind); }
  void observe_redis_call(std::chrono::nanoseconds took) noexcept { observe_call(Backend::redis, took); }
  // A waiting acquire of `op` was refused first at `since` and waits; it
  // ends with wait_ended(op, since) whatever its answer (work in progress:
  // MetricsSnapshot::waiting and oldest_wait).
  void wait_began(int op, std::chrono::steady_clock::time_point since) noexcept;
  void wait_ended(int op, std::chrono::steady_clock::time_point since) noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// --- logs ----------------------------------------------------------------

enum class LogLevel : std::uint8_t { debug, info, warning, error };
std::string_view log_level_name(LogLevel level);

struct LogField {
  std::string key;
  std::string value;
};

// Called from whichever thread noticed the event; must be thread-safe and
// must not call back into the engine.
using LogSink = std::function<void(LogLevel level, std::string_view message, const std::vector<LogField>& fields)>;

// The default sink: one line "pathlock: LEVEL: MESSAGE" on stderr (the
// fields repeat what the message says, for structured sinks).
void log_to_stderr(LogLevel level, std::string_view message, const std::vector<LogField>& fields);

// --- the observer ----------------------------------------------------------

struct ObservedCall {
  enum class Kind : std::uint8_t { acquire, release, renew } kind = Kind::acquire;
  std::string_view ns;
  std::string_view op;     // acquire: the requested operation; else empty
  std::string_view owner;  // acquire: the requester; else empty
  std::string_view id;     // release, renew: the lock id; acquire: the grant's id (when granted)
  Outcome outcome = Outcome::granted;  // acquire only
  bool ok = true;                      // release, renew: the engine's answer
  Millis waited{0};                    // acquire: call to answer, when it waited (else 0)
  const Conflict* refused_by = nullptr;  // acquire refused at least once: the first refusal's conflict
};

// --- options -------------------------------------------------------------

// Part of every backend's options (MemoryOptions::observe,
// RedisOptions::observe, EngineOptions::observe).
struct ObserveOptions {
  // Where the engine counts. nullptr: the engine makes a Metrics of its own
  // (LockEngine::metrics() returns it). Must have been made for a matrix with
  // the engine's operations (Metrics::fits), or the factory throws
  // InvalidRequest.
  std::shared_ptr<Metrics> metrics{};
  // false: count nothing (LockEngine::metrics() returns nullptr); the
  // observer and the logs still work. For measuring what counting costs.
  bool count = true;
  // Called after each acquire, release and renew, on the caller's thread;
  // must be thread-safe and must not call back into the engine.
  std::function<void(const ObservedCall&)> observer{};
  // Where messages go (nullptr: log_to_stderr).
  LogSink log{};
  // Both thresholds must be positive (else the factory throws InvalidRequest).
  // A waiting acquire still refused after this long is logged once (a
  // warning naming the holder that refused it: owner, operation, path).
  Millis long_wait{10000};
  // A lock held this long is logged once (a warning with its owner,
  // operation and path) when its holder renews or releases it; a lock that
  // is never renewed nor released ends with its lease and is not reported.
  Millis long_hold{300000};
};

}  // namespace pathlock
