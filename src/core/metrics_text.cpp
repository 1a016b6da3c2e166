// The Prometheus text exposition of Metrics (pathlock/metrics.hpp), written
// from a snapshot: HELP and TYPE lines before each family, every series from
// the start (at 0), histograms cumulative with `+Inf` equal to `_count`.
#include <pathlock/metrics.hpp>

#include <fmt/format.h>

#include <iterator>
#include <string>

namespace pathlock {

namespace {

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

// The per-backend series: every backend's that makes calls (not the
// embedded one), from the start (at 0).
constexpr auto kFirstCalled = static_cast<std::size_t>(Backend::redis);
// The 1.1 series of limits and conversions.
void limit_and_conversion_lines(std::string& out, const MetricsSnapshot& s) {
  auto it = std::back_inserter(out);
  header(out, "pathlock_limit_refusals_total", "counter",
         "Acquire calls refused by a namespace's limit (docs/operations.md#limits-per-namespace), by limit.");
  for (LimitKind k : {LimitKind::locks, LimitKind::places, LimitKind::owner_locks})
    fmt::format_to(it, "pathlock_limit_refusals_total{{limit=\"{}\"}} {}\n", limit_name(k),
                   s.limit_refusals[static_cast<std::size_t>(k)]);
  header(out, "pathlock_conversions_total", "counter",
         "Conversions of a held lock (LockEngine::convert, docs/design.md#conversion), by outcome.");
  for (std::size_t k = 0; k < kConversionOutcomeCount; ++k)
    fmt::format_to(it, "pathlock_conversions_total{{outcome=\"{}\"}} {}\n", conversion_outcome_name(k),
                   s.conversions[k]);
}

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

// 1.0's names: the Redis backend's series alone (deprecated in 1.1, gone in 1.2).
void deprecated_redis_lines(std::string& out, const MetricsSnapshot& s) {
  auto it = std::back_inserter(out);
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
  limit_and_conversion_lines(out, s);
  backend_lines(out, s);
  deprecated_redis_lines(out, s);
  return out;
}

}  // namespace pathlock
