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

}  // namespace

std::vector<Goal> evaluate_goals(const Results& r) {
  Goals g;
  const Plan& p = r.plan;
  const int d = p.base_depth;
  const std::size_t top = p.held.empty() ? 0 : p.held.back();
  auto at = [&](const char* sweep, const char* series, std::size_t held, unsigned clients, int depth) {
    return r.find(At{sweep, series, Task::pair, held, clients, depth});
  };
  const std::string ref = fmt::format("{} held, depth {}", fmt_count(p.ref_held), d);
  const Pair ref_pair = pair_at(r, "held", "pathlock-redis", "bare", p.ref_held, 1, d);

  // cpu: Redis CPU per pair, pathlock vs bare, at the reference point.
  {
    const Point* pl = ref_pair.a;
    const Point* bare = ref_pair.b;
    const double x = pl && bare ? pl->m.server_cpu_us / bare->m.server_cpu_us : NAN;
    const bool measured = std::isfinite(x);
    const std::string figures = fmt::format("{} vs {} = {}", pl ? fmt_us(pl->m.server_cpu_us) : "-",
                                            bare ? fmt_us(bare->m.server_cpu_us) : "-", fmt_ratio(x));
    g.add(measured, x <= 5.0,
          fmt::format("pathlock-redis Redis CPU per pair <= 5x the bare pair's ({}, 1 client{}): {}", ref,
                      ref_pair.how(), figures));
    g.add(measured, x <= 4.0, fmt::format("stretch: the same <= 4x: {}", fmt_ratio(x)));
  }
  // latency: pair p50 vs bare, 1 client.
  {
    const Point* pl = ref_pair.a;
    const Point* bare = ref_pair.b;
    const double x = pl && bare ? pl->m.p50_us / bare->m.p50_us : NAN;
    g.add(pl && bare, x <= 2.0,
          fmt::format("pathlock-redis pair p50 <= 2x the bare pair's, 1 client ({}{}): {} vs {} = {}", ref,
                      ref_pair.how(), pl ? fmt_us(pl->m.p50_us) : "-", bare ? fmt_us(bare->m.p50_us) : "-",
                      fmt_ratio(x)));
  }
  // clients: 32 clients (or the most measured up to 32), share of bare's pairs/s.
  {
    const unsigned c = p.goal_clients();
    const Pair pair = pair_at(r, "clients", "pathlock-redis", "bare", p.ref_held, c, d);
    const Point* pl = pair.a;
    const Point* bare = pair.b;
    const double x = pl && bare ? pl->m.throughput / bare->m.throughput : NAN;
    g.add(pl && bare, x >= 0.4,
          fmt::format("pathlock-redis >= 40% of the bare lock's pairs/s with {} clients ({}{}): {} vs {} pairs/s = {}",
                      c, ref, pair.how(), pl ? fmt_rate(pl->m.throughput) : "-",
                      bare ? fmt_rate(bare->m.throughput) : "-", pct(x)));
  }
  // flat: p50 from 0 to the most held. Each held count's p50 against 0 held
  // in alternating slices of its point (Point::zero_held): the largest ratio;
  // without those, the spread of the separate points.
  {
    std::vector<std::string> parts;
    double worst = 0;
    std::size_t alternating = 0, with_held = 0;
    for (std::size_t h : p.held) {
      if (h == 0) continue;
      ++with_held;
      const Point* pt = at("held", "pathlock-redis", h, 1, d);
      if (!pt || !pt->zero_held) continue;
      const double x = pt->m.p50_us / pt->zero_held->p50_us;
      worst = std::max(worst, x);
      parts.push_back(fmt::format("{} {} vs {} = {}", fmt_count(h), fmt_us(pt->m.p50_us), fmt_us(pt->zero_held->p50_us),
                                  fmt_ratio(x)));
      ++alternating;
    }
    if (alternating == with_held && alternating > 0) {
      g.add(true, worst <= 1.25,
            fmt::format("pathlock-redis p50 flat within 1.25x from 0 to {} held (1 client, depth {}; each held count "
                        "against 0 held in alternating slices): {}; largest {}",
                        fmt_count(top), d, fmt::join(parts, ", "), fmt_ratio(worst)));
    } else {
      double lo = INFINITY, hi = 0;
      std::size_t n = 0;
      for (std::size_t h : p.held)
        if (const Point* pt = at("held", "pathlock-redis", h, 1, d)) {
          lo = std::min(lo, pt->m.p50_us);
          hi = std::max(hi, pt->m.p50_us);
          ++n;
        }
      const bool all = n == p.held.size() && n > 1;
      g.add(all, hi / lo <= 1.25,
            fmt::format(
                "pathlock-redis p50 flat within 1.25x from 0 to {} held (1 client, depth {}): min {} max {} = {}",
                fmt_count(top), d, all ? fmt_us(lo) : "-", all ? fmt_us(hi) : "-", all ? fmt_ratio(hi / lo) : "-"));
    }
  }
  // scan: pairs/s at 100k held (or the most held below).
  {
    std::size_t h = 0;
    for (std::size_t n : p.held)
      if (n <= 100000) h = std::max(h, n);
    const Point* pl = at("held", "pathlock-redis", h, 1, d);
    const Point* scan = at("held", "scan", h, 1, d);
    const double x = pl && scan ? pl->m.throughput / scan->m.throughput : NAN;
    g.add(pl && scan, x >= 100,
          fmt::format("pathlock-redis >= 100x the scan baseline's pairs/s at {} held: {} vs {} pairs/s = {}",
                      fmt_count(h), pl ? fmt_rate(pl->m.throughput) : "-", scan ? fmt_rate(scan->m.throughput) : "-",
                      fmt_ratio(x)));
  }
  // per-level: faster at every measured depth >= 3.
  {
    std::vector<std::string> parts;
    bool measured = false, pass = true;
    for (int depth : p.depths) {
      if (depth < Plan::kPerLevelMinDepth) continue;
      const Pair pair = pair_at(r, "depth", "pathlock-redis", "per-level", p.ref_held, 1, depth);
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
    g.add(
        measured, pass,
        fmt::format("pathlock-redis pair p50 below the per-level lock's at depth 3 and beyond ({} held, 1 client): {}",
                    fmt_count(p.ref_held), parts.empty() ? "-" : fmt::format("{}", fmt::join(parts, "; "))));
  }
  // embedded: pairs/s with the most held vs with none, in alternating windows
  // of one point (Point::zero_held); the separate held-0 point only when
  // the point has no such measurement.
  {
    const Point* full = at("held", "pathlock-memory", top, 1, d);
    const Point* none = at("held", "pathlock-memory", 0, 1, d);
    const Measurement* zero = full && full->zero_held ? &*full->zero_held : none ? &none->m : nullptr;
    const double x = full && zero ? full->m.throughput / zero->throughput : NAN;
    g.add(full && zero && top > 0, x >= 0.8,
          fmt::format("pathlock-memory pairs/s with {} held >= 0.8x those with 0 held (1 thread, depth {}{}): {} vs {} "
                      "pairs/s = {}",
                      fmt_count(top), d, full && full->zero_held ? ", alternating windows" : "",
                      full ? fmt_rate(full->m.throughput) : "-", zero ? fmt_rate(zero->throughput) : "-",
                      fmt_ratio(x)));
  }
  return g.take();
}

}  // namespace pathlock::bench
