// Metrics (pathlock/metrics.hpp): per-thread blocks of counters, sized once
// from the matrix, so counting never allocates (after a thread's first
// count) nor locks nor contends; and the Prometheus text exposition, written
// from a snapshot that sums the blocks. A thread's block stays with the
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

std::string escape_label(std::string_view v) {
  std::string out;
  for (const char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string format_bound(double b) { return fmt::format("{}", b); }

// Prometheus sample values: integers as integers, the sums as shortest round-trip doubles.
void header(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void histogram_lines(std::string& out, std::string_view name, std::string_view labels, const HistogramSnapshot& h) {
  const std::string sep = labels.empty() ? "" : ",";
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < kSecondsBuckets.size(); ++i) {
    cumulative += h.counts[i];
    fmt::format_to(std::back_inserter(out), "{}_bucket{{{}{}le=\"{}\"}} {}\n", name, labels, sep,
                   format_bound(kSecondsBuckets[i]), cumulative);
  }
  cumulative += h.counts.back();
  fmt::format_to(std::back_inserter(out), "{}_bucket{{{}{}le=\"+Inf\"}} {}\n", name, labels, sep, cumulative);
  const std::string braces = labels.empty() ? std::string() : fmt::format("{{{}}}", labels);
  fmt::format_to(std::back_inserter(out), "{}_sum{} {}\n{}_count{} {}\n", name, braces, h.sum, name, braces,
                 cumulative);
}

// The gauges of work in progress, one line per operation.
void in_progress_lines(std::string& out, const MetricsSnapshot& s) {
  auto it = std::back_inserter(out);
  header(out, "pathlock_waiting_requests", "gauge",
         "Acquire calls waiting now (refused at least once, not answered yet), by operation.");
  for (std::size_t op = 0; op < s.ops.size(); ++op)
    fmt::format_to(it, "pathlock_waiting_requests{{op=\"{}\"}} {}\n", escape_label(s.ops[op]), s.waiting[op]);
  header(out, "pathlock_oldest_wait_seconds", "gauge",
         "How long the oldest acquire call waiting now has waited (0: none waits), by operation.");
  for (std::size_t op = 0; op < s.ops.size(); ++op)
    fmt::format_to(it, "pathlock_oldest_wait_seconds{{op=\"{}\"}} {:.3f}\n", escape_label(s.ops[op]),
                   s.oldest_wait[op]);
}

}  // namespace

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

namespace {

// The per-backend series: every backend's that makes calls (not the
// embedded one), from the start (at 0).
constexpr auto kFirstCalled = static_cast<std::size_t>(Backend::redis);
void backend_lines(std::string& out, const MetricsSnapshot& s) {
  auto it = std::back_inserter(out);
  header(out, "pathlock_backend_retries_total", "counter",
         "Commands a backend's client sent again because they provably did not run, by backend and reason.");
  for (std::size_t k = kFirstCalled; k < kBackendCount; ++k)
    for (std::size_t i = 0; i < kRetryReasonCount; ++i)
      fmt::format_to(it, "pathlock_backend_retries_total{{backend=\"{}\",reason=\"{}\"}} {}\n",
                     backend_name(static_cast<Backend>(k)), retry_reason_name(static_cast<RetryReason>(i)),
                     s.backend_retries[k][i]);
  header(out, "pathlock_backend_failovers_total", "counter",
         "Changes of primary a backend's client learnt of, by backend and kind.");
  for (std::size_t k = kFirstCalled; k < kBackendCount; ++k)
    for (std::size_t i = 0; i < kFailoverKindCount; ++i)
      fmt::format_to(it, "pathlock_backend_failovers_total{{backend=\"{}\",kind=\"{}\"}} {}\n",
                     backend_name(static_cast<Backend>(k)), failover_kind_name(static_cast<FailoverKind>(i)),
                     s.backend_failovers[k][i]);
  header(out, "pathlock_backend_call_seconds", "histogram", "Duration of one call to a backend, retries included.");
  for (std::size_t k = kFirstCalled; k < kBackendCount; ++k)
    histogram_lines(out, "pathlock_backend_call_seconds",
                    fmt::format("backend=\"{}\"", backend_name(static_cast<Backend>(k))), s.calls[k]);
}

}  // namespace

std::string Metrics::prometheus() const {
  const MetricsSnapshot s = snapshot();
  const std::size_t n = s.ops.size();
  std::string out;
  auto it = std::back_inserter(out);

  header(out, "pathlock_acquires_total", "counter", "Acquire calls by operation and outcome.");
  for (std::size_t op = 0; op < n; ++op)
    for (std::size_t o = 0; o < kOutcomeCount; ++o)
      fmt::format_to(it, "pathlock_acquires_total{{op=\"{}\",outcome=\"{}\"}} {}\n", escape_label(s.ops[op]),
                     outcome_name(static_cast<Outcome>(o)), s.acquires[op][o]);

  header(out, "pathlock_refusals_total", "counter",
         "Acquire calls refused at least once, by requested operation, the operation that refused them first "
         "and how its path relates (queued: an older waiting request).");
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t h = 0; h < n; ++h)
      for (std::size_t k = 0; k < kRefusalKindCount; ++k)
        fmt::format_to(it, "pathlock_refusals_total{{op=\"{}\",held_op=\"{}\",relation=\"{}\"}} {}\n",
                       escape_label(s.ops[r]), escape_label(s.ops[h]), refusal_kind_name(k),
                       s.refusals[(r * n + h) * kRefusalKindCount + k]);

  header(out, "pathlock_wait_seconds", "histogram",
         "Time from call to answer of acquire calls that waited (refused at least once), by operation.");
  for (std::size_t op = 0; op < n; ++op)
    histogram_lines(out, "pathlock_wait_seconds", fmt::format("op=\"{}\"", escape_label(s.ops[op])), s.wait[op]);
  header(out, "pathlock_hold_seconds", "histogram",
         "Time from grant to the release that removed the lock, by operation.");
  for (std::size_t op = 0; op < n; ++op)
    histogram_lines(out, "pathlock_hold_seconds", fmt::format("op=\"{}\"", escape_label(s.ops[op])), s.hold[op]);

  in_progress_lines(out, s);

  auto counter = [&](std::string_view name, std::string_view help, std::uint64_t v) {
    header(out, name, "counter", help);
    fmt::format_to(it, "{} {}\n", name, v);
  };
  counter("pathlock_releases_total", "Release calls that dropped a hold.", s.releases);
  counter("pathlock_force_releases_total", "Force-release calls that removed a lock.", s.force_releases);
  header(out, "pathlock_renewals_total", "counter", "Renew calls by result (missing: no live lock had that id and token).");
  fmt::format_to(it, "pathlock_renewals_total{{result=\"renewed\"}} {}\npathlock_renewals_total{{result=\"missing\"}} {}\n",
                 s.renewals, s.renewals_missing);
  counter("pathlock_leases_lost_total", "Leases a LeaseKeeper lost (renewal refused, or the lease ended first).",
          s.leases_lost);
  counter("pathlock_long_waits_total", "Waiting acquires logged as long (ObserveOptions::long_wait).", s.long_waits);
  counter("pathlock_long_holds_total", "Locks logged as held long (ObserveOptions::long_hold).", s.long_holds);
  counter("pathlock_backend_errors_total", "Backend errors raised by a backend's client.", s.backend_errors);
  backend_lines(out, s);
  // 1.0's names, the Redis backend's series alone (they go in 1.2).
  header(out, "pathlock_redis_retries_total", "counter",
         "Deprecated (pathlock_backend_retries_total{backend=\"redis\"}): Redis commands sent again, by reason.");
  for (std::size_t i = 0; i < kRetryReasonCount; ++i)
    fmt::format_to(it, "pathlock_redis_retries_total{{reason=\"{}\"}} {}\n", retry_reason_name(static_cast<RetryReason>(i)),
                   s.retries[i]);
  header(out, "pathlock_redis_failovers_total", "counter",
         "Deprecated (pathlock_backend_failovers_total{backend=\"redis\"}): changes of master, by kind.");
  for (std::size_t i = 0; i < kFailoverKindCount; ++i)
    fmt::format_to(it, "pathlock_redis_failovers_total{{kind=\"{}\"}} {}\n",
                   failover_kind_name(static_cast<FailoverKind>(i)), s.failovers[i]);
  header(out, "pathlock_redis_call_seconds", "histogram",
         "Deprecated (pathlock_backend_call_seconds{backend=\"redis\"}): one Redis call, retries included.");
  histogram_lines(out, "pathlock_redis_call_seconds", "", s.redis_calls);
  return out;
}

}  // namespace pathlock
