// The results of one run; see results.hpp.
#include "results.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>
#include <cmath>

namespace pathlock::bench {

Plan make_plan(bool quick, std::size_t max_held) {
  Plan p;
  if (quick) {
    p.held = {0, 1000, 10000};
    p.clients = {1, 8};
    p.depths = {3, 5};
    p.scale_held = 10000;
    p.topology_namespaces = {1, 4};
    p.topology_clients = 4;
    p.topology_held = 100;
    p.window = Window{0.1, 0.4, 3};
  }
  if (max_held > 0) {
    std::erase_if(p.held, [&](std::size_t h) { return h > max_held; });
    p.ref_held = std::min(p.ref_held, max_held);
    p.scale_held = std::min(p.scale_held, max_held);
    p.topology_held = std::min(p.topology_held, max_held);
    if (std::find(p.held.begin(), p.held.end(), p.ref_held) == p.held.end()) p.held.push_back(p.ref_held);
    std::sort(p.held.begin(), p.held.end());
  }
  return p;
}

unsigned Plan::goal_clients() const {
  unsigned c = 0;
  for (unsigned n : clients)
    if (n <= kGoalClients) c = std::max(c, n);
  return c;
}

const Point* Results::any(const At& at) const {
  for (const Point& p : points)
    if (p.at == at) return &p;
  return nullptr;
}

const Point* Results::find(const At& at) const {
  for (const Point& p : points)
    if (p.at == at && p.ok()) return &p;
  return nullptr;
}

const Fill* Results::fill_to(const std::string& s, const std::string& world, std::size_t held) const {
  for (const Fill& f : fills)
    if (f.series == s && f.world == world && f.to == held) return &f;
  return nullptr;
}

double Results::bytes_per_lock(const std::string& s, const std::string& world, std::size_t held) const {
  if (held == 0 || !fill_to(s, world, held)) return NAN;
  long long bytes = 0;
  for (const Fill& f : fills)
    if (f.series == s && f.world == world && f.to <= held) bytes += f.memory_growth;
  return static_cast<double>(bytes) / static_cast<double>(held);
}

// ---- CSV ----------------------------------------------------------------------
std::vector<std::string> csv_header() {
  return {"sweep",
          "series",
          "task",
          "held",
          "clients",
          "depth",
          "namespaces",
          "masters",
          "ops",
          "unexpected",
          "seconds",
          "ops_per_s",
          "p50_us",
          "p99_us",
          "max_us",
          "redis_cpu_us_per_op",
          "status",
          "zero_held_ops_per_s",
          "zero_held_p50_us",
          "versus",
          "zero_held_redis_cpu_us_per_op"};
}

std::vector<std::string> csv_row(const Point& p) {
  const At& a = p.at;
  const Measurement& m = p.m;
  std::vector<std::string> row{a.sweep,
                               a.series,
                               task_name(a.task),
                               std::to_string(a.held),
                               std::to_string(a.clients),
                               std::to_string(a.depth),
                               std::to_string(a.namespaces),
                               std::to_string(a.masters)};
  auto num = [](double v, int digits) { return std::isnan(v) ? std::string() : fmt::format("{:.{}f}", v, digits); };
  if (p.ok()) {
    for (std::string v : {std::to_string(m.ops), std::to_string(m.unexpected), num(m.seconds, 3), num(m.throughput, 1),
                          num(m.p50_us, 2), num(m.p99_us, 2), num(m.max_us, 2), num(m.server_cpu_us, 2)})
      row.push_back(std::move(v));
  } else {
    row.resize(row.size() + 8);
  }
  row.push_back(p.status);
  if (p.ok() && p.zero_held) {  // after the status, so the older columns keep their places
    row.push_back(num(p.zero_held->throughput, 1));
    row.push_back(num(p.zero_held->p50_us, 2));
  } else {
    row.resize(row.size() + 2);
  }
  row.push_back(a.versus);
  row.push_back(p.ok() && p.zero_held ? num(p.zero_held->server_cpu_us, 2) : std::string());
  return row;
}

std::vector<std::string> fill_csv_header() {
  return {"series", "world", "from", "to", "seconds", "locks_per_s", "memory_growth_bytes"};
}

std::vector<std::string> fill_csv_row(const Fill& f) {
  return {f.series,
          f.world,
          std::to_string(f.from),
          std::to_string(f.to),
          fmt::format("{:.3f}", f.seconds),
          fmt::format("{:.0f}", static_cast<double>(f.to - f.from) / std::max(f.seconds, 1e-9)),
          std::to_string(f.memory_growth)};
}

// ---- formatting -------------------------------------------------------------
namespace {

// One way of spelling a number: from `at` up, v / unit with `decimals`
// decimals, then `suffix`.
struct Tier {
  double at, unit;
  int decimals;
  const char* suffix;
};

// `v` spelled by the first tier it reaches ("-" for NaN); tiers run from the
// largest down and the last one takes everything.
std::string tiered(double v, std::initializer_list<Tier> tiers) {
  if (std::isnan(v)) return "-";
  const Tier* t = tiers.begin();
  while (v < t->at && t + 1 != tiers.end()) ++t;
  return fmt::format("{:.{}f}{}", v / t->unit, t->decimals, t->suffix);
}

}  // namespace

std::string fmt_us(double us) {
  return tiered(us, {{100000, 1000, 0, " ms"}, {10000, 1000, 1, " ms"}, {100, 1, 0, " µs"}, {0, 1, 1, " µs"}});
}

std::string fmt_rate(double r) {
  return tiered(r, {{1e6, 1e6, 2, "M"}, {1e4, 1e3, 1, "k"}, {100, 1, 0, ""}, {0, 1, 1, ""}});
}

std::string fmt_count(std::size_t n) {
  if (n >= 1000000 && n % 1000000 == 0) return fmt::format("{}M", n / 1000000);
  if (n >= 1000 && n % 1000 == 0) return fmt::format("{}k", n / 1000);
  return std::to_string(n);
}

std::string fmt_ratio(double r) {
  return std::isfinite(r) ? fmt::format("{:.2f}x", r) : "-";
}

std::string task_name(Task t) {
  return t == Task::pair ? "pair" : "refused";
}

}  // namespace pathlock::bench
