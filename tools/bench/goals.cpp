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

  // cpu: Redis CPU per pair, pathlock vs bare, at the reference point.
  {
    const Point* pl = at("held", "pathlock-redis", p.ref_held, 1, d);
    const Point* bare = at("held", "bare", p.ref_held, 1, d);
    const double x = pl && bare ? pl->m.server_cpu_us / bare->m.server_cpu_us : NAN;
    const bool measured = std::isfinite(x);
    const std::string figures = fmt::format("{} vs {} = {}", pl ? fmt_us(pl->m.server_cpu_us) : "-",
                                            bare ? fmt_us(bare->m.server_cpu_us) : "-", fmt_ratio(x));
    g.add(measured, x <= 5.0,
          fmt::format("pathlock-redis Redis CPU per pair <= 5x the bare pair's ({}, 1 client): {}", ref, figures));
    g.add(measured, x <= 4.0, fmt::format("stretch: the same <= 4x: {}", fmt_ratio(x)));
  }
  // latency: pair p50 vs bare, 1 client.
  {
    const Point* pl = at("held", "pathlock-redis", p.ref_held, 1, d);
    const Point* bare = at("held", "bare", p.ref_held, 1, d);
    const double x = pl && bare ? pl->m.p50_us / bare->m.p50_us : NAN;
    g.add(pl && bare, x <= 2.0,
          fmt::format("pathlock-redis pair p50 <= 2x the bare pair's, 1 client ({}): {} vs {} = {}", ref,
                      pl ? fmt_us(pl->m.p50_us) : "-", bare ? fmt_us(bare->m.p50_us) : "-", fmt_ratio(x)));
  }
  // clients: 32 clients (or the most measured up to 32), share of bare's pairs/s.
  {
    unsigned c = 0;
    for (unsigned n : p.clients)
      if (n <= 32) c = std::max(c, n);
    const Point* pl = at("clients", "pathlock-redis", p.ref_held, c, d);
    const Point* bare = at("clients", "bare", p.ref_held, c, d);
    const double x = pl && bare ? pl->m.throughput / bare->m.throughput : NAN;
    g.add(pl && bare, x >= 0.4,
          fmt::format("pathlock-redis >= 40% of the bare lock's pairs/s with {} clients ({}): {} vs {} pairs/s = {}", c,
                      ref, pl ? fmt_rate(pl->m.throughput) : "-", bare ? fmt_rate(bare->m.throughput) : "-", pct(x)));
  }
  // flat: p50 from 0 to the most held.
  {
    double lo = INFINITY, hi = 0;
    std::size_t n = 0;
    for (std::size_t h : p.held)
      if (const Point* pt = at("held", "pathlock-redis", h, 1, d)) {
        lo = std::min(lo, pt->m.p50_us);
        hi = std::max(hi, pt->m.p50_us);
        ++n;
      }
    const bool all = n == p.held.size() && n > 1;
    g.add(
        all, hi / lo <= 1.25,
        fmt::format("pathlock-redis p50 flat within 1.25x from 0 to {} held (1 client, depth {}): min {} max {} = {}",
                    fmt_count(top), d, all ? fmt_us(lo) : "-", all ? fmt_us(hi) : "-", all ? fmt_ratio(hi / lo) : "-"));
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
      if (depth < 3) continue;
      const Point* pl = at("depth", "pathlock-redis", p.ref_held, 1, depth);
      const Point* lvl = at("depth", "per-level", p.ref_held, 1, depth);
      if (!pl || !lvl) {
        pass = false;
        parts.push_back(fmt::format("depth {}: -", depth));
        continue;
      }
      measured = true;
      pass = pass && pl->m.p50_us < lvl->m.p50_us;
      parts.push_back(fmt::format("depth {}: {} vs {} = {}", depth, fmt_us(pl->m.p50_us), fmt_us(lvl->m.p50_us),
                                  fmt_ratio(pl->m.p50_us / lvl->m.p50_us)));
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
