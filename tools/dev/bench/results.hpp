// What one pathlock-bench run produced, the only thing the report, the plots
// and the goals read: the plan it followed, the points it measured, the
// fills, and the facts about the run (machine, server, commit).
//
// A point is identified by its coordinates (`At`): the sweep it belongs to,
// the series (subject name), the task (pair or refused acquire) and the
// dimensions held / clients / depth / namespaces / masters. A sweep that adds
// a new dimension adds a field here (with a default that every other sweep
// keeps), a CSV column in results.cpp, and nothing else in this file.
//
// Formatting helpers for the human-readable outputs sit here too, so the
// report, the goals and the console agree on units.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "measure.hpp"
#include "subject.hpp"

namespace pathlock::bench {

struct Plan {
  std::vector<std::size_t> held{0, 1000, 10000, 100000, 1000000};
  std::vector<unsigned> clients{1, 8, 32, 64};
  std::vector<int> depths{2, 3, 5, 10};
  int base_depth = 5;
  std::size_t ref_held = 10000;     // held locks for the clients and depth sweeps
  std::size_t scale_held = 100000;  // per namespace, embedded 1 vs 2 threads
  std::vector<unsigned> topology_namespaces{1, 8, 32};
  unsigned topology_clients = 32;    // spread over the namespaces
  std::size_t topology_held = 1000;  // per namespace
  Window window{0.5, 4.0, 5};

  static constexpr unsigned kGoalClients = 32;  // the clients goal's client count
  static constexpr int kPerLevelMinDepth = 3;   // the per-level goal's depths start here
  // The clients goal's point: the most clients measured up to kGoalClients (0: none).
  unsigned goal_clients() const;
};
// quick: held 0/1k/10k, clients 1/8, depths 3/5, topology 1/4 namespaces
// with 4 clients and 100 held, short windows.
// max_held > 0 drops larger held counts (and lowers ref_held/scale_held to it).
Plan make_plan(bool quick, std::size_t max_held);

struct At {
  std::string sweep, series;
  Task task = Task::pair;
  std::size_t held = 0;
  unsigned clients = 1;
  int depth = 5;
  unsigned namespaces = 1;  // distinct namespaces the clients spread over
  unsigned masters = 1;     // Redis masters serving them
  // Sweep "alternating": the subject measured in the slices between this
  // one's (measure_alternating), at the same coordinates; empty elsewhere.
  std::string versus = {};
  bool operator==(const At&) const = default;
};

struct Point {
  At at;
  Measurement m;
  std::string status = "ok";  // or "skipped: <reason>"
  // Held sweep, pathlock-memory and pathlock-redis, held > 0: the same
  // subject and engine with 0 held (an empty namespace of its own), measured
  // in windows alternating with m's (measure_alternating), so their ratio is
  // of one stretch of time.
  std::optional<Measurement> zero_held = std::nullopt;
  bool ok() const { return status == "ok"; }
};

// Growing one world of one series from `from` to `to` held locks.
struct Fill {
  std::string series, world;
  std::size_t from = 0, to = 0;
  double seconds = 0;
  long long memory_growth = 0;  // used_memory after - before (Redis subjects)
};

struct RunInfo {
  std::string mode;  // "full", "quick", "held up to 10k"
  std::string command, started_utc, commit;
  std::string load_at_start, load_at_end;
  std::string redis_version, redis_where;
  std::string run_id;
};

struct Results {
  Plan plan;
  RunInfo info;
  std::vector<std::string> series;             // every subject, in run order
  std::vector<std::string> redis_series;       // those whose locks live in Redis, same order
  std::map<std::string, std::string> skipped;  // series -> why it (partly) did not run
  std::vector<Point> points;
  std::vector<Fill> fills;
  std::string scan_stop;  // why the scan baseline was not run on larger held counts

  // The measured (ok) point at `at`, or nullptr.
  const Point* find(const At& at) const;
  // Any point at `at`, ok or skipped, or nullptr.
  const Point* any(const At& at) const;
  // Redis memory per held lock of `series` after its world `world` reached
  // `held` (growth of used_memory over all its fills / held); NaN if unknown.
  double bytes_per_lock(const std::string& series, const std::string& world, std::size_t held) const;
  // Seconds and held locks of the fill of `series`/`world` that ended at `held`.
  const Fill* fill_to(const std::string& series, const std::string& world, std::size_t held) const;
};

// CSV of the points (results.csv) and of the fills (fills.csv).
std::vector<std::string> csv_header();
std::vector<std::string> csv_row(const Point& p);
std::vector<std::string> fill_csv_header();
std::vector<std::string> fill_csv_row(const Fill& f);

// ---- formatting -------------------------------------------------------------
std::string fmt_us(double us);         // "154 µs", "41.7 ms", "-" for NaN
std::string fmt_rate(double r);        // "5816", "16.8k", "1.03M"
std::string fmt_count(std::size_t n);  // "1k", "1M", "1500"
std::string fmt_ratio(double r);       // "2.92x", "-" when not finite
std::string task_name(Task t);         // "pair", "refused"

}  // namespace pathlock::bench
