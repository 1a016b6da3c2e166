// The goals; see goals.hpp for the list and the rules they follow.
#include "goals.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

namespace pathlock::bench {
namespace {

class Goals {
 public:
  void add(bool measured, bool pass, std::string text) {
    if (!measured) text += " (not measured in this run)";
    out_.push_back({measured ? (pass ? "PASS" : "MISS") : "SKIP", std::move(text)});
  }
  std::vector<Goal> take() { return std::move(out_); }

 private:
  std::vector<Goal> out_;
};

std::string pct(double r) {
  return std::isfinite(r) ? fmt::format("{:.0f}%", r * 100) : "-";
}

// The two points a goal compares: series a and b at one point (held,
// clients, depth), from sweep "alternating" when that measured both, else
// from `sweep` (measured one after the other).
struct Pair {
  const Point* a = nullptr;
  const Point* b = nullptr;
  bool alternating = false;
  bool both() const { return a && b; }
  // "" or ", alternating slices": what the goal's text says about the method.
  std::string how() const { return alternating ? ", alternating slices" : both() ? ", one after the other" : ""; }
};

Pair pair_at(const Results& r, const char* sweep, const std::string& a, const std::string& b, std::size_t held,
             unsigned clients, int depth) {
  At alt{"alternating", a, Task::pair, held, clients, depth};
  alt.versus = b;
  At alt_b = alt;
  alt_b.series = b;
  alt_b.versus = a;
  Pair p{r.find(alt), r.find(alt_b), true};
  if (p.both()) return p;
  return Pair{r.find(At{sweep, a, Task::pair, held, clients, depth}),
              r.find(At{sweep, b, Task::pair, held, clients, depth}), false};
}

// What every goal reads: the run, its reference point and the pair of
// pathlock-redis and bare measured there.
struct Context {
  explicit Context(const Results& results)
      : r(results),
        p(results.plan),
        d(p.base_depth),
        top(p.held.empty() ? 0 : p.held.back()),
        ref(fmt::format("{} held, depth {}", fmt_count(p.ref_held), d)),
        ref_pair(pair_at(results, "held", "pathlock-redis", "bare", p.ref_held, 1, d)) {}
  const Point* at(const char* sweep, const char* series, std::size_t held, unsigned clients, int depth) const {
    return r.find(At{sweep, series, Task::pair, held, clients, depth});
  }
  const Results& r;
  const Plan& p;
  const int d;
  const std::size_t top;  // the most held
  const std::string ref;  // "10k held, depth 5"
  const Pair ref_pair;
};

// cpu: Redis CPU per pair, pathlock vs bare, at the reference point.
void cpu_goal(const Context& c, Goals& g) {
  const Point* pl = c.ref_pair.a;
  const Point* bare = c.ref_pair.b;
  const double x = pl && bare ? pl->m.server_cpu_us / bare->m.server_cpu_us : NAN;
  const bool measured = std::isfinite(x);
  const std::string figures = fmt::format("{} vs {} = {}", pl ? fmt_us(pl->m.server_cpu_us) : "-",
                                          bare ? fmt_us(bare->m.server_cpu_us) : "-", fmt_ratio(x));
  g.add(measured, x <= 5.0,
        fmt::format("pathlock-redis Redis CPU per pair <= 5x the bare pair's ({}, 1 client{}): {}", c.ref,
                    c.ref_pair.how(), figures));
  g.add(measured, x <= 4.0, fmt::format("stretch: the same <= 4x: {}", fmt_ratio(x)));
}

// latency: pair p50 vs bare, 1 client.
void latency_goal(const Context& c, Goals& g) {
  const Point* pl = c.ref_pair.a;
  const Point* bare = c.ref_pair.b;
  const double x = pl && bare ? pl->m.p50_us / bare->m.p50_us : NAN;
  g.add(pl && bare, x <= 2.0,
        fmt::format("pathlock-redis pair p50 <= 2x the bare pair's, 1 client ({}{}): {} vs {} = {}", c.ref,
                    c.ref_pair.how(), pl ? fmt_us(pl->m.p50_us) : "-", bare ? fmt_us(bare->m.p50_us) : "-",
                    fmt_ratio(x)));
}

// clients: 32 clients (or the most measured up to 32), share of bare's pairs/s.
void clients_goal(const Context& c, Goals& g) {
  const unsigned n = c.p.goal_clients();
  const Pair pair = pair_at(c.r, "clients", "pathlock-redis", "bare", c.p.ref_held, n, c.d);
  const Point* pl = pair.a;
  const Point* bare = pair.b;
  const double x = pl && bare ? pl->m.throughput / bare->m.throughput : NAN;
  g.add(pl && bare, x >= 0.4,
        fmt::format("pathlock-redis >= 40% of the bare lock's pairs/s with {} clients ({}{}): {} vs {} pairs/s = {}",
                    n, c.ref, pair.how(), pl ? fmt_rate(pl->m.throughput) : "-",
                    bare ? fmt_rate(bare->m.throughput) : "-", pct(x)));
}

// flat, without a 0-held measurement in alternating slices for every held
// count: the spread of the separate points' p50.
void flat_spread_goal(const Context& c, Goals& g) {
  double lo = INFINITY, hi = 0;
  std::size_t n = 0;
  for (std::size_t h : c.p.held)
    if (const Point* pt = c.at("held", "pathlock-redis", h, 1, c.d)) {
      lo = std::min(lo, pt->m.p50_us);
      hi = std::max(hi, pt->m.p50_us);
      ++n;
    }
  const bool all = n == c.p.held.size() && n > 1;
  g.add(all, hi / lo <= 1.25,
        fmt::format("pathlock-redis p50 flat within 1.25x from 0 to {} held (1 client, depth {}): min {} max {} = {}",
                    fmt_count(c.top), c.d, all ? fmt_us(lo) : "-", all ? fmt_us(hi) : "-",
                    all ? fmt_ratio(hi / lo) : "-"));
}

// flat: p50 from 0 to the most held. Each held count's p50 against 0 held
// in alternating slices of its point (Point::zero_held): the largest ratio;
// without those, the spread of the separate points.
void flat_goal(const Context& c, Goals& g) {
  std::vector<std::string> parts;
  double worst = 0;
  std::size_t alternating = 0, with_held = 0;
  for (std::size_t h : c.p.held) {
    if (h == 0) continue;
    ++with_held;
    const Point* pt = c.at("held", "pathlock-redis", h, 1, c.d);
    if (!pt || !pt->zero_held) continue;
    const double x = pt->m.p50_us / pt->zero_held->p50_us;
    worst = std::max(worst, x);
    parts.push_back(fmt::format("{} {} vs {} = {}", fmt_count(h), fmt_us(pt->m.p50_us), fmt_us(pt->zero_held->p50_us),
                                fmt_ratio(x)));
    ++alternating;
  }
  if (alternating != with_held || alternating == 0) return flat_spread_goal(c, g);
  g.add(true, worst <= 1.25,
        fmt::format("pathlock-redis p50 flat within 1.25x from 0 to {} held (1 client, depth {}; each held count "
                    "against 0 held in alternating slices): {}; largest {}",
                    fmt_count(c.top), c.d, fmt::join(parts, ", "), fmt_ratio(worst)));
}

// scan: pairs/s at 100k held (or the most held below).
void scan_goal(const Context& c, Goals& g) {
  std::size_t h = 0;
  for (std::size_t n : c.p.held)
    if (n <= 100000) h = std::max(h, n);
  const Point* pl = c.at("held", "pathlock-redis", h, 1, c.d);
  const Point* scan = c.at("held", "scan", h, 1, c.d);
  const double x = pl && scan ? pl->m.throughput / scan->m.throughput : NAN;
  g.add(pl && scan, x >= 100,
        fmt::format("pathlock-redis >= 100x the scan baseline's pairs/s at {} held: {} vs {} pairs/s = {}",
                    fmt_count(h), pl ? fmt_rate(pl->m.throughput) : "-", scan ? fmt_rate(scan->m.throughput) : "-",
                    fmt_ratio(x)));
}

// per-level: faster at every measured depth >= 3.
void per_level_goal(const Context& c, Goals& g) {
  std::vector<std::string> parts;
  bool measured = false, pass = true;
  for (int depth : c.p.depths) {
    if (depth < Plan::kPerLevelMinDepth) continue;
    const Pair pair = pair_at(c.r, "depth", "pathlock-redis", "per-level", c.p.ref_held, 1, depth);
    const Point* pl = pair.a;
    const Point* lvl = pair.b;
    if (!pl || !lvl) {
      pass = false;
      parts.push_back(fmt::format("depth {}: -", depth));
      continue;
    }
    measured = true;
    pass = pass && pl->m.p50_us < lvl->m.p50_us;
    parts.push_back(fmt::format("depth {}{}: {} vs {} = {}", depth, pair.how(), fmt_us(pl->m.p50_us),
                                fmt_us(lvl->m.p50_us), fmt_ratio(pl->m.p50_us / lvl->m.p50_us)));
  }
  g.add(measured, pass,
        fmt::format("pathlock-redis pair p50 below the per-level lock's at depth 3 and beyond ({} held, 1 client): {}",
                    fmt_count(c.p.ref_held), parts.empty() ? "-" : fmt::format("{}", fmt::join(parts, "; "))));
}

// embedded: pairs/s with the most held vs with none, in alternating windows
// of one point (Point::zero_held); the separate held-0 point only when
// the point has no such measurement.
void embedded_goal(const Context& c, Goals& g) {
  const Point* full = c.at("held", "pathlock-memory", c.top, 1, c.d);
  const Point* none = c.at("held", "pathlock-memory", 0, 1, c.d);
  const Measurement* zero = full && full->zero_held ? &*full->zero_held : none ? &none->m : nullptr;
  const double x = full && zero ? full->m.throughput / zero->throughput : NAN;
  g.add(full && zero && c.top > 0, x >= 0.8,
        fmt::format("pathlock-memory pairs/s with {} held >= 0.8x those with 0 held (1 thread, depth {}{}): {} vs {} "
                    "pairs/s = {}",
                    fmt_count(c.top), c.d, full && full->zero_held ? ", alternating windows" : "",
                    full ? fmt_rate(full->m.throughput) : "-", zero ? fmt_rate(zero->throughput) : "-",
                    fmt_ratio(x)));
}

}  // namespace

std::vector<Goal> evaluate_goals(const Results& r) {
  const Context c(r);
  Goals g;
  for (auto goal : {cpu_goal, latency_goal, clients_goal, flat_goal, scan_goal, per_level_goal, embedded_goal})
    goal(c, g);
  return g.take();
}

}  // namespace pathlock::bench
