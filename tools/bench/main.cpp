// pathlock-bench: one command that measures pathlock against a bare Redis
// lock and against the original scan-everything implementation, and pathlock's
// embedded backend, then writes CSV, plots and a summary.
//
//   pathlock-bench [--quick] [--redis URL] [--out DIR] [--update-docs FILE]
//
// What is measured (series.hpp has the details of each subject): the latency
// of one acquire+release pair, one pair after another on each client thread,
// for a fixed window after a warm-up; p50 / p99 over every pair of the window
// and throughput = pairs / window, all clients together.
//
// Sweeps. Not the full cross product (it would not fit in ~20 minutes on two
// cores), but three one-dimensional sweeps around one reference point
// (10k held, depth 5, 1 client):
//   held     0, 1k, 10k, 100k, 1M locks held   (1 client, depth 5)
//   clients  1, 8, 32, 64 client threads       (10k held, depth 5)
//   depth    2, 5, 10 path components          (10k held, 1 client)
// plus the embedded backend on 1 vs 2 threads in different namespaces.
// --quick: held 0/1k/10k, clients 1/8, depth 5 only, short windows.
// The held sweep fills one world per subject step by step (1k, then 9k more,
// ...); Redis memory per held lock = growth of INFO used_memory over that
// subject's fills / locks held. The scan baseline stops growing once one of
// its requests took more than 1 s, or when its last p50 scaled linearly to
// the next count exceeds 1 s (it is reported as skipped, with the reason).
//
// Redis: without --redis, a private redis-server is started on a free
// loopback port and stopped at the end, on errors and on Ctrl-C (RAII). With
// --redis, that server is used and this run's keys are deleted at the end.
// A subject that cannot run (the Redis backend not built yet, no server) is
// reported as "skipped: <reason>" and the others still run.
//
// Goals are evaluated from this run and printed as PASS / MISS / SKIP; they
// never change the exit status (0, or 1 for bad arguments or unwritable
// output, 130 when interrupted).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <sstream>

#include "series.hpp"
#include "util.hpp"

#ifndef PATHLOCK_SOURCE_DIR  // for `git rev-parse` (the commit measured)
#define PATHLOCK_SOURCE_DIR "."
#endif
#ifndef PATHLOCK_BENCH_OUT  // the build directory's bench-results/, whatever the working directory
#define PATHLOCK_BENCH_OUT "build/bench-results"
#endif

namespace pathlock::bench {
namespace {

namespace fs = std::filesystem;

constexpr const char* kBeginMarker = "<!-- bench:begin -->";
constexpr const char* kEndMarker = "<!-- bench:end -->";
constexpr double kScanLimitUs = 1e6;  // the scan baseline stops past 1 s per request

struct Options {
  bool quick = false;
  std::string redis_url;  // empty: start our own server
  std::string out_dir = PATHLOCK_BENCH_OUT;
  std::string update_docs;  // empty: do not touch docs
};

struct Plan {
  std::vector<std::size_t> held{0, 1000, 10000, 100000, 1000000};
  std::vector<unsigned> clients{1, 8, 32, 64};
  std::vector<int> depths{2, 5, 10};
  int base_depth = 5;
  std::size_t ref_held = 10000;     // held locks for the clients and depth sweeps
  std::size_t scale_held = 100000;  // per namespace, embedded 1 vs 2 threads
  Window window{0.5, 4.0, 5};
};

Plan make_plan(bool quick) {
  Plan p;
  if (quick) {
    p.held = {0, 1000, 10000};
    p.clients = {1, 8};
    p.depths = {5};
    p.scale_held = 10000;
    p.window = Window{0.1, 0.5, 3};
  }
  return p;
}

struct Point {
  std::string sweep, series;
  std::size_t held = 0;
  unsigned clients = 1;
  int depth = 5;
  Measurement m;
  std::string status = "ok";  // or "skipped: <reason>"
  bool ok() const { return status == "ok"; }
};

struct Series {
  std::string name;
  std::unique_ptr<Subject> subject;
  std::string skip;                                            // non-empty: why it no longer runs
  std::map<std::string, std::size_t> held;                     // world tag -> held locks
  std::map<std::string, long long> bytes;                      // world tag -> used_memory growth
  std::vector<std::pair<std::size_t, double>> bytes_per_lock;  // held sweep
};

std::string fmt_us(double us) {
  if (std::isnan(us)) return "-";
  if (us >= 100000) return fmt::format("{:.0f} ms", us / 1000);
  if (us >= 10000) return fmt::format("{:.1f} ms", us / 1000);
  if (us >= 100) return fmt::format("{:.0f} µs", us);
  return fmt::format("{:.1f} µs", us);
}
std::string fmt_rate(double r) {
  if (r >= 1e6) return fmt::format("{:.2f}M", r / 1e6);
  if (r >= 1e4) return fmt::format("{:.1f}k", r / 1e3);
  if (r >= 100) return fmt::format("{:.0f}", r);
  return fmt::format("{:.1f}", r);
}
std::string fmt_count(std::size_t n) {
  if (n >= 1000000 && n % 1000000 == 0) return fmt::format("{}M", n / 1000000);
  if (n >= 1000 && n % 1000 == 0) return fmt::format("{}k", n / 1000);
  return std::to_string(n);
}
std::string fmt_ratio(double r) {
  return std::isfinite(r) ? fmt::format("{:.2f}x", r) : "-";
}

std::string run_command(const std::string& cmd) {
  std::string out;
  if (FILE* f = ::popen(cmd.c_str(), "r")) {
    char buf[256];
    while (std::fgets(buf, sizeof buf, f)) out += buf;
    ::pclose(f);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

class Bench {
 public:
  Bench(Options opt, std::string command)
      : opt_(std::move(opt)), plan_(make_plan(opt_.quick)), command_(std::move(command)) {}

  int run() {
    load_at_start_ = load_average();
    fs::create_directories(opt_.out_dir);
    csv_ = std::make_unique<CsvWriter>((fs::path(opt_.out_dir) / "results.csv").string());
    csv_->row({"sweep", "series", "held", "clients", "depth", "pairs", "refused", "seconds", "pairs_per_s", "p50_us",
               "p99_us", "max_us", "redis_cpu_us_per_pair", "status"});
    start_redis();
    make_series();
    held_sweep();
    depth_sweep();
    scale_sweep();
    report();
    return 0;
  }

 private:
  // ---- setup ---------------------------------------------------------------
  void start_redis() {
    try {
      if (opt_.redis_url.empty()) {
        server_ = std::make_unique<RedisServer>();
        redis_url_ = server_->url();
        redis_where_ = "own redis-server on loopback";
      } else {
        redis_url_ = opt_.redis_url;
        redis_where_ = "external server (--redis)";
      }
      addr_ = redis_url_;
      info_ = std::make_unique<RedisConnection>(addr_);
      redis_version_ = info_field(*info_, "server", "redis_version");
      fmt::print(stderr, "redis {} at {} ({})\n", redis_version_, redis_url_, redis_where_);
    } catch (const Interrupted&) {
      throw;
    } catch (const std::exception& e) {
      redis_skip_ = one_line(fmt::format("no Redis server: {}", e.what()));
      fmt::print(stderr, "{}\n", redis_skip_);
    }
  }

  void make_series() {
    std::random_device rd;
    run_ = fmt::format("{:06x}", rd() & 0xffffffU);
    auto add = [&](const std::string& name, bool needs_redis, const std::function<std::unique_ptr<Subject>()>& make) {
      Series s;
      s.name = name;
      if (needs_redis && !redis_skip_.empty()) {
        s.skip = redis_skip_;
      } else {
        try {
          s.subject = make();
        } catch (const Interrupted&) {
          throw;
        } catch (const std::exception& e) {
          s.skip = one_line(e.what());
        }
      }
      if (!s.skip.empty()) fmt::print(stderr, "{}: skipped: {}\n", name, s.skip);
      series_.push_back(std::move(s));
    };
    add("pathlock-redis", true, [&] { return make_pathlock_subject(Backend::redis, redis_url_, run_); });
    add("bare", true, [&] { return make_bare_subject(addr_, run_); });
    add("scan", true, [&] { return make_scan_subject(addr_, run_); });
    add("pathlock-memory", false, [&] { return make_pathlock_subject(Backend::memory, "", run_); });
  }

  static std::string one_line(std::string s) {
    for (char& c : s)
      if (c == '\n' || c == '\r' || c == ',') c = c == ',' ? ';' : ' ';
    return s;
  }

  // ---- running points --------------------------------------------------------
  // Brings world w of series s to `target` held locks; false if s is skipped.
  bool fill(Series& s, const World& w, std::size_t target) {
    if (!s.skip.empty()) return false;
    std::size_t& have = s.held[w.tag];
    if (have >= target) return true;
    try {
      const long long before = s.subject->in_redis() ? used_memory(*info_) : 0;
      const auto t0 = Clock::now();
      s.subject->fill(w, have, target);
      const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
      const long long after = s.subject->in_redis() ? used_memory(*info_) : 0;
      s.bytes[w.tag] += after - before;
      fmt::print(stderr, "fill {:<16} world {:<3} {:>8} -> {:>8} held  {:6.1f} s  ({:.0f} locks/s)\n", s.name, w.tag,
                 have, target, secs, static_cast<double>(target - have) / std::max(secs, 1e-9));
      have = target;
      return true;
    } catch (const Interrupted&) {
      throw;
    } catch (const std::exception& e) {
      s.skip = one_line(fmt::format("filling {} held locks failed: {}", target, e.what()));
      return false;
    }
  }

  Point& point(Series& s, const std::string& sweep, const World& w, std::size_t held, unsigned clients,
               const std::string& forced_skip = {}) {
    Point p{sweep, s.name, held, clients, w.depth, {}, "ok"};
    if (!forced_skip.empty()) {
      p.status = "skipped: " + forced_skip;
    } else if (!s.skip.empty() || !fill(s, w, held)) {
      p.status = "skipped: " + s.skip;
    } else {
      try {
        auto workers = s.subject->workers(w, held, clients);
        const double cpu0 = s.subject->in_redis() ? used_cpu_seconds(*info_) : 0;
        p.m = measure(workers, plan_.window);
        if (s.subject->in_redis() && p.m.all_pairs)
          p.m.server_cpu_us = (used_cpu_seconds(*info_) - cpu0) * 1e6 / static_cast<double>(p.m.all_pairs);
      } catch (const Interrupted&) {
        throw;
      } catch (const std::exception& e) {
        s.skip = one_line(e.what());
        p.status = "skipped: " + s.skip;
      }
    }
    record(p);
    return points_.back();
  }

  void record(const Point& p) {
    points_.push_back(p);
    const Measurement& m = p.m;
    if (p.ok()) {
      fmt::print(stderr,
                 "[{:<7}] {:<16} held={:<8} clients={:<3} depth={:<3} p50 {:>9}  p99 {:>9}  {:>7} pairs/s  ({} "
                 "pairs{}, {:.1f} s{})\n",
                 p.sweep, p.series, p.held, p.clients, p.depth, fmt_us(m.p50_us), fmt_us(m.p99_us),
                 fmt_rate(m.throughput), m.pairs, m.refused ? fmt::format(", {} REFUSED", m.refused) : "", m.seconds,
                 std::isnan(m.server_cpu_us) ? "" : ", redis cpu " + fmt_us(m.server_cpu_us) + "/pair");
      csv_->row({p.sweep, p.series, std::to_string(p.held), std::to_string(p.clients), std::to_string(p.depth),
                 std::to_string(m.pairs), std::to_string(m.refused), fmt::format("{:.3f}", m.seconds),
                 fmt::format("{:.1f}", m.throughput), fmt::format("{:.2f}", m.p50_us), fmt::format("{:.2f}", m.p99_us),
                 fmt::format("{:.2f}", m.max_us),
                 std::isnan(m.server_cpu_us) ? std::string() : fmt::format("{:.2f}", m.server_cpu_us), p.status});
    } else {
      fmt::print(stderr, "[{:<7}] {:<16} held={:<8} clients={:<3} depth={:<3} {}\n", p.sweep, p.series, p.held,
                 p.clients, p.depth, p.status);
      csv_->row({p.sweep, p.series, std::to_string(p.held), std::to_string(p.clients), std::to_string(p.depth), "", "",
                 "", "", "", "", "", "", p.status});
    }
  }

  const Point* find(const std::string& sweep, const std::string& series, std::size_t held, unsigned clients,
                    int depth) const {
    for (const Point& p : points_)
      if (p.sweep == sweep && p.series == series && p.held == held && p.clients == clients && p.depth == depth &&
          p.ok())
        return &p;
    return nullptr;
  }

  // ---- sweeps ----------------------------------------------------------------
  void held_sweep() {
    const World w{"d5", plan_.base_depth};
    std::optional<Point> scan_last;  // the scan's last measured point
    for (std::size_t held : plan_.held) {
      for (Series& s : series_) {
        if (s.name != "scan") {
          point(s, "held", w, held, 1);
        } else {
          if (scan_stop_.empty() && scan_last && scan_last->held > 0) {
            const double projected =
                scan_last->m.p50_us * static_cast<double>(held) / static_cast<double>(scan_last->held);
            if (projected > kScanLimitUs)
              scan_stop_ = fmt::format("projected {:.1f} s per request at {} held (p50 {} at {} held; limit 1 s)",
                                       projected / 1e6, fmt_count(held), fmt_us(scan_last->m.p50_us),
                                       fmt_count(scan_last->held));
          }
          const Point& p = point(s, "held", w, held, 1, scan_stop_);
          if (p.ok()) {
            scan_last = p;
            if (p.m.max_us > kScanLimitUs && scan_stop_.empty())
              scan_stop_ =
                  fmt::format("one request took {:.1f} s at {} held (limit 1 s)", p.m.max_us / 1e6, fmt_count(held));
          }
        }
        if (s.subject && s.subject->in_redis() && s.held[w.tag] == held && held > 0)
          s.bytes_per_lock.emplace_back(held, static_cast<double>(s.bytes[w.tag]) / static_cast<double>(held));
      }
      if (held == plan_.ref_held) clients_sweep(w);
    }
  }

  void clients_sweep(const World& w) {
    for (unsigned c : plan_.clients)
      for (Series& s : series_) point(s, "clients", w, plan_.ref_held, c);
  }

  void depth_sweep() {
    for (int depth : plan_.depths) {
      for (Series& s : series_) {
        if (depth == plan_.base_depth) {  // the held sweep already measured it
          if (const Point* p = find("held", s.name, plan_.ref_held, 1, depth)) {
            Point copy = *p;
            copy.sweep = "depth";
            record(copy);
            continue;
          }
        }
        point(s, "depth", World{fmt::format("d{}", depth), depth}, plan_.ref_held, 1);
      }
    }
  }

  // Embedded backend: 1 thread in one namespace vs 2 threads in 2 namespaces.
  void scale_sweep() {
    Series& s = series_.back();
    const World a{"s0", plan_.base_depth}, b{"s1", plan_.base_depth};
    for (unsigned threads : {1U, 2U}) {
      Point p{"scale", s.name, plan_.scale_held, threads, plan_.base_depth, {}, "ok"};
      if (!fill(s, a, plan_.scale_held) || !fill(s, b, plan_.scale_held)) {
        p.status = "skipped: " + s.skip;
      } else {
        try {
          auto workers = s.subject->workers(a, plan_.scale_held, 1);
          if (threads == 2) workers.push_back(std::move(s.subject->workers(b, plan_.scale_held, 1).front()));
          p.m = measure(workers, plan_.window);
        } catch (const Interrupted&) {
          throw;
        } catch (const std::exception& e) {
          p.status = "skipped: " + one_line(e.what());
        }
      }
      record(p);
    }
  }

  // ---- report ------------------------------------------------------------------
  struct Goal {
    std::string verdict, text;
  };

  std::vector<Goal> goals() const {
    std::vector<Goal> out;
    auto add = [&](bool evaluable, bool pass, std::string text) {
      if (!evaluable) text += " (not measured in this run)";
      out.push_back({evaluable ? (pass ? "PASS" : "MISS") : "SKIP", std::move(text)});
    };
    const int d = plan_.base_depth;
    const std::size_t top = plan_.held.back();
    const std::string top_s = fmt_count(top);
    // 1. pathlock vs bare at 1 client.
    {
      const Point* pl = find("clients", "pathlock-redis", plan_.ref_held, 1, d);
      const Point* bare = find("clients", "bare", plan_.ref_held, 1, d);
      const double r = pl && bare ? pl->m.p50_us / bare->m.p50_us : NAN;
      add(pl && bare, r <= 1.5,
          fmt::format(
              "pathlock-redis pair within 1.5x of the bare pair, 1 client ({} held, depth {}): p50 {} vs {} = {}",
              fmt_count(plan_.ref_held), d, pl ? fmt_us(pl->m.p50_us) : "-", bare ? fmt_us(bare->m.p50_us) : "-",
              fmt_ratio(r)));
    }
    // 2. flat from 0 to top held.
    {
      double lo = INFINITY, hi = 0;
      std::size_t n = 0;
      for (std::size_t h : plan_.held)
        if (const Point* p = find("held", "pathlock-redis", h, 1, d)) {
          lo = std::min(lo, p->m.p50_us);
          hi = std::max(hi, p->m.p50_us);
          ++n;
        }
      const bool all = n == plan_.held.size();
      add(all, hi / lo <= 1.25,
          fmt::format("pathlock-redis p50 flat within 1.25x from 0 to {} held (1 client): min {} max {} = {}", top_s,
                      all ? fmt_us(lo) : "-", all ? fmt_us(hi) : "-", all ? fmt_ratio(hi / lo) : "-"));
    }
    // 3. at least 100x the scan baseline's throughput at 100k held (quick: the top count).
    {
      const std::size_t h = std::min<std::size_t>(100000, top);
      const Point* pl = find("held", "pathlock-redis", h, 1, d);
      const Point* scan = find("held", "scan", h, 1, d);
      const double r = pl && scan ? pl->m.throughput / scan->m.throughput : NAN;
      add(pl && scan, r >= 100,
          fmt::format("pathlock-redis >= 100x the scan baseline's throughput at {} held: {} vs {} pairs/s = {}",
                      fmt_count(h), pl ? fmt_rate(pl->m.throughput) : "-", scan ? fmt_rate(scan->m.throughput) : "-",
                      fmt_ratio(r)));
    }
    // 4. 32 clients: at least 50% of the bare lock's throughput (quick: the most clients).
    {
      const unsigned c = std::min(32U, plan_.clients.back());
      const Point* pl = find("clients", "pathlock-redis", plan_.ref_held, c, d);
      const Point* bare = find("clients", "bare", plan_.ref_held, c, d);
      const double r = pl && bare ? pl->m.throughput / bare->m.throughput : NAN;
      add(pl && bare, r >= 0.5,
          fmt::format("pathlock-redis >= 50% of the bare lock's throughput with {} clients: {} vs {} pairs/s = {}", c,
                      pl ? fmt_rate(pl->m.throughput) : "-", bare ? fmt_rate(bare->m.throughput) : "-",
                      std::isfinite(r) ? fmt::format("{:.0f}%", r * 100) : "-"));
    }
    // 5. embedded: 1M pairs/s on one thread with the most held, and 2 threads in 2 namespaces scale.
    {
      const Point* p = find("held", "pathlock-memory", top, 1, d);
      add(p != nullptr, p && p->m.throughput >= 1e6,
          fmt::format("pathlock-memory >= 1,000,000 pairs/s on one thread, depth {}, {} held: {} pairs/s", d, top_s,
                      p ? fmt_rate(p->m.throughput) : "-"));
      const Point* one = find("scale", "pathlock-memory", plan_.scale_held, 1, d);
      const Point* two = find("scale", "pathlock-memory", plan_.scale_held, 2, d);
      const double r = one && two ? two->m.throughput / one->m.throughput : NAN;
      add(one && two, r >= 1.5,
          fmt::format("pathlock-memory scales across namespaces, 2 threads >= 1.5x 1 thread ({} held each, {} cores): "
                      "{} vs {} pairs/s = {}",
                      fmt_count(plan_.scale_held), cpu_count(), two ? fmt_rate(two->m.throughput) : "-",
                      one ? fmt_rate(one->m.throughput) : "-", fmt_ratio(r)));
    }
    return out;
  }

  std::string cell(const std::string& sweep, const std::string& series, std::size_t held, unsigned clients, int depth,
                   bool rate_only = false) const {
    for (const Point& p : points_)
      if (p.sweep == sweep && p.series == series && p.held == held && p.clients == clients && p.depth == depth) {
        if (!p.ok()) return "skipped";
        if (rate_only) return fmt_rate(p.m.throughput);
        return fmt::format("{} / {} · {}/s", fmt_us(p.m.p50_us), fmt_us(p.m.p99_us), fmt_rate(p.m.throughput));
      }
    return "-";
  }

  double p50(const std::string& sweep, const std::string& series, std::size_t held, unsigned clients, int depth) const {
    const Point* p = find(sweep, series, held, clients, depth);
    return p ? p->m.p50_us : NAN;
  }
  double rate(const std::string& sweep, const std::string& series, std::size_t held, unsigned clients,
              int depth) const {
    const Point* p = find(sweep, series, held, clients, depth);
    return p ? p->m.throughput : NAN;
  }

  std::string markdown() const {
    const int d = plan_.base_depth;
    std::string md;
    auto line = [&](const std::string& s) { md += s + "\n"; };
    line(fmt::format(
        "Run of {} ({} mode). Machine: {} cores (nproc), {}; load average {} at the start, {} at "
        "the end; Redis {} ({}); pathlock commit {}.",
        utc_now(), opt_.quick ? "quick" : "full", cpu_count(), cpu_model(), load_at_start_, load_average(),
        redis_version_.empty() ? "-" : redis_version_, redis_where_.empty() ? "none" : redis_where_, git_revision()));
    line("");
    line(fmt::format("Command: `{}`", command_));
    line("");
    line(
        fmt::format("Cells: p50 / p99 latency of one acquire+release pair · pairs per second. Measurement window "
                    "{:.2f} s per point after {:.2f} s of warm-up.",
                    plan_.window.measure_s, plan_.window.warmup_s));
    line("");
    std::vector<std::string> names;
    for (const Series& s : series_) names.push_back(s.name);
    // Held.
    line(fmt::format("### Locks held (1 client, depth {})", d));
    line("");
    auto header = [&](const std::string& first) {
      std::string h = "| " + first + " |";
      for (const std::string& n : names) h += " " + n + " |";
      return h;
    };
    std::string rule = "|---:|";
    for (std::size_t i = 0; i < names.size(); ++i) rule += "---|";
    line(header("held") + " pathlock/bare p50 | scan/pathlock p50 |");
    line(rule + "---:|---:|");
    for (std::size_t h : plan_.held) {
      std::string row = "| " + fmt_count(h) + " |";
      for (const std::string& n : names) row += " " + cell("held", n, h, 1, d) + " |";
      row += fmt::format(" {} | {} |", fmt_ratio(p50("held", "pathlock-redis", h, 1, d) / p50("held", "bare", h, 1, d)),
                         fmt_ratio(p50("held", "scan", h, 1, d) / p50("held", "pathlock-redis", h, 1, d)));
      line(row);
    }
    line("");
    // Memory.
    line(
        "Redis memory per held lock (growth of `used_memory` while filling / locks held) and Redis CPU per pair "
        "(growth of `used_cpu_user` + `used_cpu_sys` / pairs run, 1 client):");
    line("");
    line("| held | memory pathlock-redis | memory scan | memory bare | CPU pathlock-redis | CPU scan | CPU bare |");
    line("|---:|---:|---:|---:|---:|---:|---:|");
    for (std::size_t h : plan_.held) {
      std::string row = "| " + fmt_count(h) + " |";
      for (const char* n : {"pathlock-redis", "scan", "bare"}) {
        std::string v = "-";
        for (const Series& s : series_)
          if (s.name == n)
            for (const auto& [held, bytes] : s.bytes_per_lock)
              if (held == h) v = fmt::format("{:.0f} B", bytes);
        row += " " + v + " |";
      }
      for (const char* n : {"pathlock-redis", "scan", "bare"}) {
        const Point* p = find("held", n, h, 1, d);
        row += " " + (p ? fmt_us(p->m.server_cpu_us) : std::string("-")) + " |";
      }
      line(row);
    }
    line("");
    if (!scan_stop_.empty()) {
      line(fmt::format("The scan baseline is not run on more held locks: {}.", scan_stop_));
      line("");
    }
    // Clients.
    line(
        fmt::format("### Concurrent clients ({} held, depth {}; one thread per client)", fmt_count(plan_.ref_held), d));
    line("");
    line(header("clients") + " pathlock/bare pairs/s |");
    line(rule + "---:|");
    for (unsigned c : plan_.clients) {
      std::string row = fmt::format("| {} |", c);
      for (const std::string& n : names) row += " " + cell("clients", n, plan_.ref_held, c, d) + " |";
      row += fmt::format(" {} |", fmt_ratio(rate("clients", "pathlock-redis", plan_.ref_held, c, d) /
                                            rate("clients", "bare", plan_.ref_held, c, d)));
      line(row);
    }
    line("");
    // Depth.
    if (plan_.depths.size() > 1) {
      line(fmt::format("### Path depth ({} held, 1 client)", fmt_count(plan_.ref_held)));
      line("");
      line(header("depth"));
      line(rule);
      for (int depth : plan_.depths) {
        std::string row = fmt::format("| {} |", depth);
        for (const std::string& n : names) row += " " + cell("depth", n, plan_.ref_held, 1, depth) + " |";
        line(row);
      }
      line("");
    }
    line(fmt::format("### Embedded backend across namespaces ({} held in each, depth {})", fmt_count(plan_.scale_held),
                     d));
    line("");
    line("| threads (one namespace each) | pathlock-memory |");
    line("|---:|---|");
    for (unsigned t : {1U, 2U})
      line(fmt::format("| {} | {} |", t, cell("scale", "pathlock-memory", plan_.scale_held, t, d)));
    line("");
    line("### Goals");
    line("");
    for (const Goal& g : goals()) line(fmt::format("- **{}** {}", g.verdict, g.text));
    std::vector<std::string> skipped;
    for (const Series& s : series_)
      if (!s.skip.empty()) skipped.push_back(fmt::format("{} (skipped: {})", s.name, s.skip));
    if (!skipped.empty()) {
      line("");
      line("Not (fully) measured: " + fmt::format("{}", fmt::join(skipped, "; ")) + ".");
    }
    return md;
  }

  std::string git_revision() const {
    const std::string dir = PATHLOCK_SOURCE_DIR;
    const std::string rev = run_command("git -C '" + dir + "' rev-parse --short HEAD 2>/dev/null");
    if (rev.empty()) return "unknown";
    const std::string dirty = run_command("git -C '" + dir + "' status --porcelain --untracked-files=no 2>/dev/null");
    return dirty.empty() ? rev : rev + " + uncommitted changes";
  }

  void write_plots() {
    const fs::path gp = fs::path(opt_.out_dir) / "plot.gp";
    std::ofstream out(gp);
    out << "# Generated by pathlock-bench: plots of results.csv (data inlined below).\n"
           "# Re-run with: cd "
        << opt_.out_dir
        << " && gnuplot plot.gp\n"
           "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) { set terminal pngcairo size 960,600 noenhanced } "
           "else { set terminal png size 960,600 }\n"
           "set grid\nset key outside right\nset pointsize 1.2\n";
    const int d = plan_.base_depth;
    // One datablock per (sweep, series): x p50 p99 throughput.
    auto block = [&](const std::string& sweep, const std::string& series) {
      std::string name = "$" + sweep + "_" + series;
      for (char& c : name)
        if (c == '-') c = '_';
      out << name << " << EOD\n";
      for (const Point& p : points_)
        if (p.sweep == sweep && p.series == series && p.ok()) {
          const double x = sweep == "held"      ? (p.held == 0 ? 100.0 : static_cast<double>(p.held))
                           : sweep == "clients" ? p.clients
                                                : p.depth;
          out << fmt::format("{} {:.3f} {:.3f} {:.3f}\n", x, p.m.p50_us, p.m.p99_us, p.m.throughput);
        }
      out << "EOD\n";
      return name;
    };
    std::map<std::string, std::map<std::string, std::string>> blocks;
    for (const char* sweep : {"held", "clients", "depth"})
      for (const Series& s : series_) blocks[sweep][s.name] = block(sweep, s.name);
    // One plot per call; series without a measured point are left out, and
    // so is a plot with none at all.
    auto plot = [&](const std::string& sweep, int column, const std::string& output, const std::string& ylabel) {
      std::string cmd;
      for (std::size_t i = 0; i < series_.size(); ++i) {
        const std::string& name = series_[i].name;
        if (!std::any_of(points_.begin(), points_.end(),
                         [&](const Point& p) { return p.sweep == sweep && p.series == name && p.ok(); }))
          continue;
        cmd += cmd.empty() ? "plot " : ", \\\n     ";
        cmd += fmt::format("{} using 1:{} with linespoints lw 2 lc {} title '{}{}'", blocks[sweep][name], column, i + 1,
                           name, column == 2 ? " p50" : "");
        if (column == 2)
          cmd += fmt::format(", {} using 1:3 with linespoints dt 2 lc {} title '{} p99'", blocks[sweep][name], i + 1,
                             name);
      }
      if (!cmd.empty()) out << "set output '" << output << "'\nset ylabel '" << ylabel << "'\n" << cmd << "\n";
    };
    const std::string latency = "latency of an acquire+release pair (µs)";
    out << "set logscale xy\nset xtics ('0' 100, '1k' 1000, '10k' 10000, '100k' 100000, '1M' 1000000)\n"
        << fmt::format("set xrange [70:{}]\n", static_cast<double>(plan_.held.back()) * 1.4)
        << "set xlabel 'locks held (1 client, depth " << d << "; 0 drawn at 100)'\n";
    plot("held", 2, "latency_vs_held.png", latency);
    out << "set format y '%.0s%c'\n";
    plot("held", 4, "throughput_vs_held.png", "pairs per second");
    out << fmt::format("set xrange [0.8:{}]\n", plan_.clients.back() * 1.25)
        << "set xtics ('1' 1, '8' 8, '32' 32, '64' 64)\n"
           "set xlabel 'concurrent clients, one thread each ("
        << fmt_count(plan_.ref_held) << " held, depth " << d << ")'\n";
    plot("clients", 4, "throughput_vs_clients.png", "pairs per second, all clients");
    out << "set format y '%g'\n";
    plot("clients", 2, "latency_vs_clients.png", latency);
    if (plan_.depths.size() > 1) {
      out << "unset logscale x\nset xtics autofreq\nset xrange [1:11]\n"
             "set xlabel 'path depth, components ("
          << fmt_count(plan_.ref_held) << " held, 1 client)'\n";
      plot("depth", 2, "latency_vs_depth.png", latency);
    }
    out.close();
    if (run_command("command -v gnuplot").empty()) {
      fmt::print(stderr, "plots skipped: gnuplot not found (apt-get install gnuplot-nox); script left in {}\n",
                 gp.string());
      return;
    }
    const std::string err = run_command("cd '" + opt_.out_dir + "' && gnuplot plot.gp 2>&1");
    if (!err.empty()) fmt::print(stderr, "gnuplot said:\n{}\n", err);
  }

  void update_docs(const std::string& md) const {
    std::string text;
    {
      std::ifstream in(opt_.update_docs);
      std::stringstream s;
      s << in.rdbuf();
      text = s.str();
    }
    const std::string block = std::string(kBeginMarker) + "\n" + md + kEndMarker;
    const auto b = text.find(kBeginMarker);
    const auto e = text.find(kEndMarker);
    if (b != std::string::npos && e != std::string::npos && e > b) {
      text.replace(b, e + std::string(kEndMarker).size() - b, block);
    } else {
      text += (text.empty() ? "# Benchmarks\n\n" : "\n") + block + "\n";
    }
    std::ofstream out(opt_.update_docs, std::ios::trunc);
    out << text;
    if (!out) throw std::runtime_error("cannot write " + opt_.update_docs);
    fmt::print(stderr, "updated {}\n", opt_.update_docs);
  }

  void report() {
    write_plots();
    const std::string md = markdown();
    {
      std::ofstream out(fs::path(opt_.out_dir) / "summary.md");
      out << md;
    }
    if (!opt_.update_docs.empty()) update_docs(md);
    fmt::print("{}\n", md);
    fmt::print("Results: {}/results.csv, summary.md, plot.gp and *.png\n\n", opt_.out_dir);
    for (const Goal& g : goals()) fmt::print("{} {}\n", g.verdict, g.text);
  }

  Options opt_;
  Plan plan_;
  std::string command_;
  std::unique_ptr<RedisServer> server_;  // declared before the connections that use it
  std::string redis_url_, redis_where_, redis_version_, redis_skip_, run_;
  std::string load_at_start_;  // the machine is shared: how busy it was
  std::string scan_stop_;      // why the scan baseline was not run on larger held counts
  std::string addr_;
  std::unique_ptr<RedisConnection> info_;
  std::unique_ptr<CsvWriter> csv_;
  std::vector<Series> series_;
  std::vector<Point> points_;

 public:
  // With an external server, delete this run's keys (our own server just stops).
  ~Bench() {
    if (!server_ && info_ && !run_.empty()) {
      try {
        const std::vector<std::string> patterns{"pl:{bench-" + run_ + "-*", "bare:" + run_ + ":*",
                                                "scan:" + run_ + ":*"};
        for (const std::string& pattern : patterns) {
          std::string cursor = "0";
          do {
            const RedisReply r = command_ok(*info_, {"SCAN", cursor, "MATCH", pattern, "COUNT", "10000"});
            cursor = r.elements.at(0).str;
            std::vector<std::string> argv{"UNLINK"};
            for (const RedisReply& k : r.elements.at(1).elements) argv.push_back(k.str);
            if (argv.size() > 1) command_ok(*info_, argv);
          } while (cursor != "0");
        }
      } catch (const std::exception& e) {
        fmt::print(stderr, "cleanup of run {} keys failed: {}\n", run_, e.what());
      }
    }
    series_.clear();  // engines and connections go before the server
    info_.reset();
  }
};

int usage(const char* argv0, int status) {
  fmt::print(stderr,
             "usage: {} [--quick] [--redis URL] [--out DIR] [--update-docs FILE]\n"
             "  --quick             small sweeps and short windows (about a minute)\n"
             "  --redis URL         use this server instead of starting redis-server\n"
             "  --out DIR           results folder (default {})\n"
             "  --update-docs FILE  rewrite the section between {} and {} of FILE\n",
             argv0, PATHLOCK_BENCH_OUT, kBeginMarker, kEndMarker);
  return status;
}

}  // namespace
}  // namespace pathlock::bench

int main(int argc, char** argv) {
  using namespace pathlock::bench;
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::optional<std::string> {
      if (i + 1 >= argc) return std::nullopt;
      return std::string(argv[++i]);
    };
    std::optional<std::string> v;
    if (a == "--quick") {
      opt.quick = true;
    } else if (a == "--redis" && (v = value())) {
      opt.redis_url = *v;
    } else if (a == "--out" && (v = value())) {
      opt.out_dir = *v;
    } else if (a == "--update-docs" && (v = value())) {
      opt.update_docs = *v;
    } else if (a == "-h" || a == "--help") {
      return usage(argv[0], 0);
    } else {
      return usage(argv[0], 1);
    }
  }
  install_signal_handlers();
  try {
    Bench bench(opt, shell_join(argc, argv));
    return bench.run();
  } catch (const Interrupted&) {
    fmt::print(stderr, "interrupted; redis-server stopped, partial results left in {}\n", opt.out_dir);
    return 130;
  } catch (const std::exception& e) {
    fmt::print(stderr, "pathlock-bench: {}\n", e.what());
    return 1;
  }
}
