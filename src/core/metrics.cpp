// Metrics (pathlock/metrics.hpp): per-thread blocks of counters, sized once
// from the matrix, so counting never allocates (after a thread's first
// count) nor locks nor contends; a snapshot sums the blocks (the Prometheus
// text written from it: metrics_text.cpp). A thread's block stays with the
// Metrics when the thread ends: its counts are never lost.
// Per-thread blocks rather than shared atomics: many threads counting into
// one cache line (fetch_add) would contend on every acquire and release.
//
// A histogram keeps one counter per bucket (not cumulative) and its sum in
// nanoseconds; its count is the sum of its buckets, so the exposition's
// `+Inf` bucket always equals `_count` even while engines count.
#include <pathlock/metrics.hpp>

#include "core/process.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <set>
#include <unordered_map>

namespace pathlock {

namespace {

constexpr std::size_t kBuckets = kSecondsBuckets.size() + 1;

constexpr std::array<std::uint64_t, kSecondsBuckets.size()> bucket_bounds_ns() {
  std::array<std::uint64_t, kSecondsBuckets.size()> out{};
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<std::uint64_t>(kSecondsBuckets[i] * 1e9 + 0.5);
  return out;
}
constexpr auto kBoundsNs = bucket_bounds_ns();

using Counter = std::atomic<std::uint64_t>;

// Single writer per counter (its thread's Block): no locked read-modify-write.
void add(Counter& c, std::uint64_t n = 1) noexcept {
  c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}
std::uint64_t get(const Counter& c) noexcept { return c.load(std::memory_order_relaxed); }

struct Histogram {
  std::array<Counter, kBuckets> counts{};
  Counter sum_ns{0};

  void observe(std::chrono::nanoseconds d) noexcept {
    const auto ns = static_cast<std::uint64_t>(std::max<std::int64_t>(0, d.count()));
    // Prometheus buckets are "less than or equal": the first bound >= ns.
    const std::size_t i =
        static_cast<std::size_t>(std::lower_bound(kBoundsNs.begin(), kBoundsNs.end(), ns) - kBoundsNs.begin());
    add(counts[i]);
    add(sum_ns, ns);
  }
};

}  // namespace

std::string_view conversion_outcome_name(std::size_t index) {
  static constexpr std::array<std::string_view, kConversionOutcomeCount> kNames{
      "granted", "refused", "not_holder", "cancelled", "over_limit", "would_deadlock", "error"};
  return index < kNames.size() ? kNames[index] : "error";
}

std::string_view outcome_name(Outcome outcome) {
  switch (outcome) {
    case Outcome::granted: return "granted";
    case Outcome::refused: return "refused";
    case Outcome::waited_then_granted: return "waited_then_granted";
    case Outcome::timed_out: return "timed_out";
    case Outcome::cancelled: return "cancelled";
    case Outcome::error: return "error";
  }
  return "?";
}

std::string_view refusal_kind_name(std::size_t kind) {
  if (kind == kRefusalQueued) return "queued";
  if (kind < kRelationCount) return relation_name(static_cast<Relation>(kind));
  return "?";
}

std::string_view retry_reason_name(RetryReason reason) {
  switch (reason) {
    case RetryReason::moved: return "moved";
    case RetryReason::ask: return "ask";
    case RetryReason::busy: return "busy";
    case RetryReason::read_only: return "read_only";
    case RetryReason::not_sent: return "not_sent";
    case RetryReason::unreachable: return "unreachable";
  }
  return "?";
}

std::string_view backend_name(Backend backend) {
  switch (backend) {
    case Backend::memory: return "memory";
    case Backend::redis: return "redis";
    case Backend::postgres: return "postgres";
  }
  return "unknown";
}

std::string_view failover_kind_name(FailoverKind kind) {
  return kind == FailoverKind::sentinel ? "sentinel" : "cluster";
}

std::string_view log_level_name(LogLevel level) {
  switch (level) {
    case LogLevel::debug: return "debug";
    case LogLevel::info: return "info";
    case LogLevel::warning: return "warning";
    case LogLevel::error: return "error";
  }
  return "?";
}

// The library's one write to stderr, and only when the service gave no sink.
void log_to_stderr(LogLevel level, std::string_view message, const std::vector<LogField>&) {
  const std::string line = fmt::format("pathlock: {}: {}\n", log_level_name(level), message);
  std::fwrite(line.data(), 1, line.size(), stderr);
}

std::uint64_t HistogramSnapshot::count() const {
  std::uint64_t n = 0;
  for (const std::uint64_t c : counts) n += c;
  return n;
}

namespace {
std::ptrdiff_t index_of(const std::vector<std::string>& ops, std::string_view op) {
  const auto it = std::find(ops.begin(), ops.end(), op);
  return it == ops.end() ? -1 : it - ops.begin();
}
}  // namespace

std::uint64_t MetricsSnapshot::acquired(std::string_view op, Outcome outcome) const {
  const std::ptrdiff_t i = index_of(ops, op);
  return i < 0 ? 0 : acquires[static_cast<std::size_t>(i)][static_cast<std::size_t>(outcome)];
}

std::uint64_t MetricsSnapshot::refused(std::string_view op, std::string_view held_op, std::size_t kind) const {
  const std::ptrdiff_t r = index_of(ops, op), h = index_of(ops, held_op);
  if (r < 0 || h < 0 || kind >= kRefusalKindCount) return 0;
  return refusals[(static_cast<std::size_t>(r) * ops.size() + static_cast<std::size_t>(h)) * kRefusalKindCount + kind];
}

std::uint64_t MetricsSnapshot::acquires_total() const {
  std::uint64_t n = 0;
  for (const auto& row : acquires)
    for (const std::uint64_t c : row) n += c;
  return n;
}

std::uint64_t MetricsSnapshot::refusals_total() const {
  std::uint64_t n = 0;
  for (const std::uint64_t c : refusals) n += c;
  return n;
}

// One thread's counters. Only its thread writes them (a relaxed load and
// store: plain instructions, no locked read-modify-write), and any thread
// reads them (relaxed loads), so counting costs a few additions and a
// snapshot sums the blocks.
struct Block {
  explicit Block(std::size_t n)
      : acquires(n * kOutcomeCount),
        refusals(n * n * kRefusalKindCount),
        wait(std::make_unique<Histogram[]>(n)),
        hold(std::make_unique<Histogram[]>(n)) {}
  std::vector<Counter> acquires;
  std::vector<Counter> refusals;
  std::unique_ptr<Histogram[]> wait, hold;
  Counter releases{0}, force_releases{0}, renewals{0}, renewals_missing{0}, leases_lost{0}, long_waits{0},
      long_holds{0}, backend_errors{0};
  std::array<std::array<Counter, kRetryReasonCount>, kBackendCount> retries{};
  std::array<std::array<Counter, kFailoverKindCount>, kBackendCount> failovers{};
  std::array<Histogram, kBackendCount> calls;
  std::array<Counter, 3> limit_refusals{};
  std::array<Counter, kConversionOutcomeCount> conversions{};
};

struct Metrics::Impl {
  explicit Impl(const MatrixTable& matrix) : n(matrix.op_count), id(next_id.fetch_add(1) + 1), waiting(n) {
    for (std::size_t i = 0; i < n; ++i) ops.emplace_back(matrix.ops[i].name);
  }
  std::size_t n;
  std::vector<std::string> ops;
  // Never reused, unlike an address: a thread's cache entry for a Metrics
  // that is gone can never match a new one.
  const std::uint64_t id;
  static inline std::atomic<std::uint64_t> next_id{0};
  mutable std::mutex mutex;  // guards blocks (taken once per thread, and by snapshots)
  std::vector<std::unique_ptr<Block>> blocks;
  // Waits in progress: [op] -> when each began. Taken twice per waiting call.
  mutable std::mutex waits_mutex;
  std::vector<std::multiset<std::chrono::steady_clock::time_point>> waiting;

  bool has(int op) const { return op >= 0 && static_cast<std::size_t>(op) < n; }

  // The waits in progress into `s`.
  void in_progress(MetricsSnapshot& s) const {
    const auto now = std::chrono::steady_clock::now();
    s.waiting.assign(n, 0);
    s.oldest_wait.assign(n, 0.0);
    const core::NoForkSection no_fork;
    std::lock_guard guard(waits_mutex);
    for (std::size_t op = 0; op < n; ++op) {
      const auto& set = waiting[op];
      s.waiting[op] = set.size();
      if (!set.empty()) s.oldest_wait[op] = std::chrono::duration<double>(now - *set.begin()).count();
    }
  }

  // The calling thread's block: a one-entry cache, then a per-thread map,
  // then (once per thread and Metrics) a new block under the mutex.
  Block& mine() {
    struct Last {
      std::uint64_t id = 0;
      Block* block = nullptr;
    };
    thread_local Last last;
    if (last.id == id) return *last.block;
    thread_local std::unordered_map<std::uint64_t, Block*> known;
    Block*& b = known[id];
    if (!b) {
      const core::NoForkSection no_fork;  // a child of a fork here would find `mutex` held for ever
      std::lock_guard guard(mutex);
      blocks.push_back(std::make_unique<Block>(n));
      b = blocks.back().get();
    }
    last = Last{id, b};
    return *b;
  }
};

Metrics::Metrics(const MatrixTable& matrix) : impl_(std::make_unique<Impl>(matrix)) {}
Metrics::~Metrics() = default;

bool Metrics::fits(const MatrixTable& matrix) const {
  if (matrix.op_count != impl_->n) return false;
  for (std::size_t i = 0; i < impl_->n; ++i)
    if (matrix.ops[i].name != impl_->ops[i]) return false;
  return true;
}

void Metrics::count_acquire(int op, Outcome outcome) noexcept {
  if (impl_->has(op))
    add(impl_->mine().acquires[static_cast<std::size_t>(op) * kOutcomeCount + static_cast<std::size_t>(outcome)]);
}
void Metrics::count_refusal(int op, int held_op, std::size_t kind) noexcept {
  if (!impl_->has(op) || !impl_->has(held_op) || kind >= kRefusalKindCount) return;
  add(impl_->mine().refusals[(static_cast<std::size_t>(op) * impl_->n + static_cast<std::size_t>(held_op)) *
                                 kRefusalKindCount + kind]);
}
void Metrics::observe_wait(int op, std::chrono::nanoseconds waited) noexcept {
  if (impl_->has(op)) impl_->mine().wait[static_cast<std::size_t>(op)].observe(waited);
}
void Metrics::observe_hold(int op, std::chrono::nanoseconds held) noexcept {
  if (impl_->has(op)) impl_->mine().hold[static_cast<std::size_t>(op)].observe(held);
}
void Metrics::count_release() noexcept { add(impl_->mine().releases); }
void Metrics::count_force_release() noexcept { add(impl_->mine().force_releases); }
void Metrics::count_renewal(bool renewed) noexcept {
  Block& b = impl_->mine();
  add(renewed ? b.renewals : b.renewals_missing);
}
void Metrics::count_lease_lost() noexcept { add(impl_->mine().leases_lost); }
void Metrics::count_long_wait() noexcept { add(impl_->mine().long_waits); }
void Metrics::count_long_hold() noexcept { add(impl_->mine().long_holds); }
void Metrics::count_backend_error() noexcept { add(impl_->mine().backend_errors); }
void Metrics::count_limit_refusal(LimitKind kind) noexcept {
  add(impl_->mine().limit_refusals[static_cast<std::size_t>(kind)]);
}
void Metrics::count_conversion(std::size_t outcome) noexcept {
  if (outcome < kConversionOutcomeCount) add(impl_->mine().conversions[outcome]);
}
void Metrics::count_retry(Backend backend, RetryReason reason) noexcept {
  add(impl_->mine().retries[static_cast<std::size_t>(backend)][static_cast<std::size_t>(reason)]);
}
void Metrics::count_failover(Backend backend, FailoverKind kind) noexcept {
  add(impl_->mine().failovers[static_cast<std::size_t>(backend)][static_cast<std::size_t>(kind)]);
}
void Metrics::observe_call(Backend backend, std::chrono::nanoseconds took) noexcept {
  impl_->mine().calls[static_cast<std::size_t>(backend)].observe(took);
}
void Metrics::wait_began(int op, std::chrono::steady_clock::time_point since) noexcept {
  if (!impl_->has(op)) return;
  try {
    const core::NoForkSection no_fork;
    std::lock_guard guard(impl_->waits_mutex);
    impl_->waiting[static_cast<std::size_t>(op)].insert(since);
  } catch (...) {  // out of memory: this wait is not shown in progress
  }
}
void Metrics::wait_ended(int op, std::chrono::steady_clock::time_point since) noexcept {
  if (!impl_->has(op)) return;
  const core::NoForkSection no_fork;
  std::lock_guard guard(impl_->waits_mutex);
  auto& set = impl_->waiting[static_cast<std::size_t>(op)];
  if (const auto it = set.find(since); it != set.end()) set.erase(it);
}

MetricsSnapshot Metrics::snapshot() const {
  const Impl& m = *impl_;
  const std::size_t n = m.n;
  MetricsSnapshot s;
  s.ops = m.ops;
  s.acquires.resize(n);
  s.refusals.assign(n * n * kRefusalKindCount, 0);
  s.wait.resize(n);
  s.hold.resize(n);
  auto sum = [](HistogramSnapshot& into, const Histogram& h) {
    for (std::size_t i = 0; i < kBuckets; ++i) into.counts[i] += get(h.counts[i]);
    into.sum += static_cast<double>(get(h.sum_ns)) / 1e9;
  };
  m.in_progress(s);
  const core::NoForkSection no_fork;
  std::lock_guard guard(m.mutex);
  for (const std::unique_ptr<Block>& bp : m.blocks) {
    const Block& b = *bp;
    for (std::size_t op = 0; op < n; ++op) {
      for (std::size_t o = 0; o < kOutcomeCount; ++o) s.acquires[op][o] += get(b.acquires[op * kOutcomeCount + o]);
      sum(s.wait[op], b.wait[op]);
      sum(s.hold[op], b.hold[op]);
    }
    for (std::size_t i = 0; i < s.refusals.size(); ++i) s.refusals[i] += get(b.refusals[i]);
    s.releases += get(b.releases);
    s.force_releases += get(b.force_releases);
    s.renewals += get(b.renewals);
    s.renewals_missing += get(b.renewals_missing);
    s.leases_lost += get(b.leases_lost);
    s.long_waits += get(b.long_waits);
    s.long_holds += get(b.long_holds);
    s.backend_errors += get(b.backend_errors);
    for (std::size_t k = 0; k < s.limit_refusals.size(); ++k) s.limit_refusals[k] += get(b.limit_refusals[k]);
    for (std::size_t k = 0; k < s.conversions.size(); ++k) s.conversions[k] += get(b.conversions[k]);
    for (std::size_t k = 0; k < kBackendCount; ++k) {
      for (std::size_t i = 0; i < kRetryReasonCount; ++i) s.backend_retries[k][i] += get(b.retries[k][i]);
      for (std::size_t i = 0; i < kFailoverKindCount; ++i) s.backend_failovers[k][i] += get(b.failovers[k][i]);
      sum(s.calls[k], b.calls[k]);
    }
  }
  const auto redis = static_cast<std::size_t>(Backend::redis);
  s.retries = s.backend_retries[redis];
  s.failovers = s.backend_failovers[redis];
  s.redis_calls = s.calls[redis];
  return s;
}

}  // namespace pathlock
