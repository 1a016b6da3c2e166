// The outputs; see report.hpp.
//
// The markdown is a list of sections (kSections at the bottom), one per
// sweep, each built from two table helpers: latency_table (cells p50 / p99
// · ops/s per series, then ratio columns) and cpu_table (Redis CPU per step
// of each Redis series, with its ratio to the bare lock). A new sweep adds
// one section function and one entry in kSections.
#include "report.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "goals.hpp"

namespace pathlock::bench {
namespace {

namespace fs = std::filesystem;

// ---- tables ----------------------------------------------------------------------
using Rows = std::vector<std::pair<std::string, At>>;  // row label, coordinates (series filled per column)

enum class Metric { p50, rate, cpu };

struct Ratio {
  std::string header, num, den;
  Metric metric;
};

double value(const Results& r, At at, const std::string& series, Metric metric) {
  at.series = series;
  const Point* p = r.find(at);
  if (!p) return NAN;
  return metric == Metric::p50 ? p->m.p50_us : metric == Metric::rate ? p->m.throughput : p->m.server_cpu_us;
}

std::string cell(const Results& r, At at, const std::string& series) {
  at.series = series;
  const Point* p = r.any(at);
  if (!p) return "-";
  if (!p->ok()) return "skipped";
  std::string text = fmt::format("{} / {} · {}/s", fmt_us(p->m.p50_us), fmt_us(p->m.p99_us), fmt_rate(p->m.throughput));
  if (p->m.unexpected) text += fmt::format(" · **{} unexpected**", p->m.unexpected);  // a subject bug
  return text;
}

std::string latency_table(const Results& r, const std::string& first, const Rows& rows,
                          const std::vector<Ratio>& ratios) {
  std::string md = "| " + first + " |", rule = "|---:|";
  for (const std::string& s : r.series) md += " " + s + " |", rule += "---|";
  for (const Ratio& q : ratios) md += " " + q.header + " |", rule += "---:|";
  md += "\n" + rule + "\n";
  for (const auto& [label, at] : rows) {
    md += "| " + label + " |";
    for (const std::string& s : r.series) md += " " + cell(r, at, s) + " |";
    for (const Ratio& q : ratios)
      md += " " + fmt_ratio(value(r, at, q.num, q.metric) / value(r, at, q.den, q.metric)) + " |";
    md += "\n";
  }
  return md + "\n";
}

std::string cpu_table(const Results& r, const std::string& first, const Rows& rows) {
  std::string md = "| " + first + " |", rule = "|---:|";
  for (const std::string& s : r.redis_series) md += " " + s + " |", rule += "---:|";
  md += "\n" + rule + "\n";
  for (const auto& [label, at] : rows) {
    md += "| " + label + " |";
    const double bare = value(r, at, "bare", Metric::cpu);
    for (const std::string& s : r.redis_series) {
      const double cpu = value(r, at, s, Metric::cpu);
      md +=
          " " + fmt_us(cpu) + (s == "bare" || std::isnan(cpu * bare) ? "" : " (" + fmt_ratio(cpu / bare) + ")") + " |";
    }
    md += "\n";
  }
  return md + "\n";
}

constexpr const char* kCpuNote =
    "Redis CPU per {} (growth of the server's `used_cpu_user` + `used_cpu_sys` over the point / {} run, warm-up "
    "included); in brackets the ratio to bare:";

// The two tables of one sweep, headed by `first`: latency with `ratios`,
// then Redis CPU per `step` (kCpuNote).
std::string sweep_tables(const Results& r, const std::string& first, const Rows& rows, const std::vector<Ratio>& ratios,
                         const char* step = "pair", const char* steps = "pairs") {
  return latency_table(r, first, rows, ratios) + fmt::format(kCpuNote, step, steps) + "\n\n" +
         cpu_table(r, first, rows);
}

// ---- sections ----------------------------------------------------------------------
// The held points measured against 0 held in alternating windows (Point::zero_held).
std::string zero_held_table(const Results& r, const std::string& world) {
  std::string rows;
  std::vector<std::string> series;
  for (const Point& p : r.points) {
    if (p.at.sweep != "held" || p.at.task != Task::pair || !p.ok() || !p.zero_held) continue;
    if (std::find(series.begin(), series.end(), p.at.series) == series.end()) series.push_back(p.at.series);
    const Measurement& z = *p.zero_held;
    rows += fmt::format("| {} | {} | {}/s | {}/s | {} | {} | {} | {} |\n", fmt_count(p.at.held), p.at.series,
                        fmt_rate(p.m.throughput), fmt_rate(z.throughput), fmt_ratio(p.m.throughput / z.throughput),
                        fmt_us(p.m.p50_us), fmt_us(z.p50_us), fmt_ratio(p.m.p50_us / z.p50_us));
  }
  if (rows.empty()) return {};
  return fmt::format(
             "{} against 0 held in the same stretch of time: each point above with held locks was measured in "
             "{:.1f} s slices alternating with an empty namespace of the same engine (0 held, world {}-empty), "
             "both warmed up first; a change of the machine's load falls on both alike:\n\n",
             fmt::join(series, " and "), kSliceSeconds, world) +
         "| held | series | pairs/s | pairs/s with 0 held, same windows | ratio | p50 | p50 with 0 held, same windows "
         "| "
         "p50 ratio |\n|---:|---|---:|---:|---:|---:|---:|---:|\n" +
         rows + "\n";
}

std::string held_section(const Results& r) {
  const Plan& p = r.plan;
  Rows rows;
  for (std::size_t h : p.held) rows.push_back({fmt_count(h), At{"held", "", Task::pair, h, 1, p.base_depth}});
  std::string md = fmt::format("### Locks held (1 client, depth {})\n\n", p.base_depth);
  md += sweep_tables(r, "held", rows,
                     {{"pathlock/bare p50", "pathlock-redis", "bare", Metric::p50},
                      {"scan/pathlock p50", "scan", "pathlock-redis", Metric::p50}});
  md +=
      "Redis memory per held lock (growth of `used_memory` over the fills / locks held) and fill speed (held locks "
      "added per second by the fill that reached the count: pathlock through its public API on 4 threads, the "
      "peers with pipelined commands):\n\n| held |";
  std::string rule = "|---:|";
  for (const std::string& s : r.redis_series) md += " memory " + s + " |", rule += "---:|";
  for (const std::string& s : r.series) md += " fill " + s + " |", rule += "---:|";
  md += "\n" + rule + "\n";
  const std::string world = fmt::format("d{}", p.base_depth);
  for (std::size_t h : p.held) {
    if (h == 0) continue;
    md += "| " + fmt_count(h) + " |";
    for (const std::string& s : r.redis_series) {
      const double b = r.bytes_per_lock(s, world, h);
      md += " " + (std::isnan(b) ? std::string("-") : fmt::format("{:.0f} B", b)) + " |";
    }
    for (const std::string& s : r.series) {
      const Fill* f = r.fill_to(s, world, h);
      md += " " + (f ? fmt_rate(static_cast<double>(f->to - f->from) / std::max(f->seconds, 1e-9)) + "/s" : "-") + " |";
    }
    md += "\n";
  }
  md += "\n";
  md += zero_held_table(r, world);
  if (!r.scan_stop.empty()) md += fmt::format("The scan baseline is not run on more held locks: {}.\n\n", r.scan_stop);
  return md;
}

std::string refused_section(const Results& r) {
  const Plan& p = r.plan;
  Rows rows;
  for (std::size_t h : p.held)
    if (h > 0) rows.push_back({fmt_count(h), At{"refused", "", Task::refused, h, 1, p.base_depth}});
  if (rows.empty()) return {};
  std::string md = fmt::format("### Refused acquire (1 client, depth {})\n\n", p.base_depth);
  md +=
      "One acquire that a held lock refuses: pathlock asks for `delete_folder` of a held lock's parent folder (the "
      "reply names the lock below), per-level for the parent's exclusive lock, scan for the parent, bare for the "
      "held key itself (it knows no tree).\n\n";
  md += sweep_tables(r, "held", rows, {{"pathlock/bare p50", "pathlock-redis", "bare", Metric::p50}}, "refused acquire",
                     "attempts");
  return md;
}

std::string clients_section(const Results& r) {
  const Plan& p = r.plan;
  Rows rows;
  for (unsigned c : p.clients)
    rows.push_back({std::to_string(c), At{"clients", "", Task::pair, p.ref_held, c, p.base_depth}});
  return fmt::format("### Concurrent clients ({} held, depth {}; one thread per client)\n\n", fmt_count(p.ref_held),
                     p.base_depth) +
         sweep_tables(r, "clients", rows,
                      {{"pathlock/bare pairs/s", "pathlock-redis", "bare", Metric::rate},
                       {"pathlock/per-level pairs/s", "pathlock-redis", "per-level", Metric::rate}});
}

std::string depth_section(const Results& r) {
  const Plan& p = r.plan;
  Rows rows;
  for (int d : p.depths) rows.push_back({std::to_string(d), At{"depth", "", Task::pair, p.ref_held, 1, d}});
  return fmt::format("### Path depth ({} held, 1 client)\n\n", fmt_count(p.ref_held)) +
         sweep_tables(r, "depth", rows,
                      {{"pathlock/bare p50", "pathlock-redis", "bare", Metric::p50},
                       {"per-level/pathlock p50", "per-level", "pathlock-redis", Metric::p50}});
}

// Sweep "alternating": pairs of subjects measured in alternating slices
// (one row per pair, in the order measured).
std::string alternating_section(const Results& r) {
  std::string rows;
  auto figures = [](const Point* p) {
    if (!p) return std::string("- | -");
    if (!p->ok()) return std::string("skipped | -");
    return fmt::format("{} / {} · {}/s | {}", fmt_us(p->m.p50_us), fmt_us(p->m.p99_us), fmt_rate(p->m.throughput),
                       fmt_us(p->m.server_cpu_us));
  };
  for (const Point& a : r.points) {
    if (a.at.sweep != "alternating") continue;
    At other = a.at;
    other.series = a.at.versus;
    other.versus = a.at.series;
    const Point* b = r.any(other);
    if (b && b < &a) continue;  // its row was written with the partner
    const bool both = b && a.ok() && b->ok();
    rows += fmt::format("| {} held, {} client{}, depth {} | {} | {} | {} | {} | {} | {} | {} |\n", fmt_count(a.at.held),
                        a.at.clients, a.at.clients == 1 ? "" : "s", a.at.depth, a.at.series, figures(&a), a.at.versus,
                        figures(b), fmt_ratio(both ? a.m.p50_us / b->m.p50_us : NAN),
                        fmt_ratio(both ? a.m.throughput / b->m.throughput : NAN),
                        fmt_ratio(both ? a.m.server_cpu_us / b->m.server_cpu_us : NAN));
  }
  if (rows.empty()) return {};
  return fmt::format(
             "### Subjects in alternating slices\n\n"
             "The goals' ratios between two subjects, each pair measured on the one server in {:.1f} s slices that "
             "alternate between the two (both warmed up first, each given the window), so a change of the "
             "machine's load falls on both alike; Redis CPU per pair: the growth of `INFO cpu` during each "
             "subject's own runs (warm-up and slices) / the pairs it ran in them. The tables above measure the "
             "subjects one after the other.\n\n",
             kSliceSeconds) +
         "| point | A | A: p50 / p99 · pairs/s | A: Redis CPU per pair | B | B: p50 / p99 · pairs/s | B: Redis CPU per "
         "pair | A/B p50 | A/B pairs/s | A/B CPU |\n|---|---|---|---:|---|---|---:|---:|---:|---:|\n" +
         rows + "\n";
}

std::string scale_section(const Results& r) {
  const Plan& p = r.plan;
  std::string md = fmt::format("### Embedded backend across namespaces ({} held in each, depth {})\n\n",
                               fmt_count(p.scale_held), p.base_depth);
  md += "| threads (one namespace each) | pathlock-memory |\n|---:|---|\n";
  for (unsigned t : {1U, 2U})
    md += fmt::format("| {} | {} |\n", t,
                      cell(r, At{"scale", "", Task::pair, p.scale_held, t, p.base_depth, t}, "pathlock-memory"));
  return md + "\n";
}

std::string topology_section(const Results& r) {
  const Plan& p = r.plan;
  if (p.topology_namespaces.empty()) return {};
  auto at = [&](unsigned n, unsigned masters) {
    return At{"topology", "pathlock-redis", Task::pair, p.topology_held, p.topology_clients, p.base_depth, n, masters};
  };
  std::string md = fmt::format(
      "### Namespaces and masters (pathlock-redis, {} clients spread over the namespaces, {} held in each, depth "
      "{})\n\n",
      p.topology_clients, fmt_count(p.topology_held), p.base_depth);
  md +=
      "1 master: the server of the other sweeps; 3 masters: a local Redis Cluster of 3 masters + 3 replicas on the "
      "same machine (a namespace lives on one master). Redis CPU per pair: the masters' sum, replicas not "
      "counted.\n\n";
  md +=
      "| namespaces | 1 master | 3 masters | 3/1 pairs/s | CPU 1 master | CPU 3 masters |\n"
      "|---:|---|---|---:|---:|---:|\n";
  for (unsigned n : p.topology_namespaces) {
    const Point* one = r.find(at(n, 1));
    const Point* three = r.find(at(n, 3));
    md += fmt::format("| {} | {} | {} | {} | {} | {} |\n", n, cell(r, at(n, 1), "pathlock-redis"),
                      cell(r, at(n, 3), "pathlock-redis"),
                      fmt_ratio(one && three ? three->m.throughput / one->m.throughput : NAN),
                      fmt_us(one ? one->m.server_cpu_us : NAN), fmt_us(three ? three->m.server_cpu_us : NAN));
  }
  return md + "\n";
}

using Section = std::string (*)(const Results&);
constexpr Section kSections[] = {held_section,        refused_section, clients_section, depth_section,
                                 alternating_section, scale_section,   topology_section};

}  // namespace

// ---- live log ------------------------------------------------------------------------
LiveLog::LiveLog(const std::string& out_dir)
    : points_((fs::path(out_dir) / "results.csv").string()), fills_((fs::path(out_dir) / "fills.csv").string()) {
  points_.row(csv_header());
  fills_.row(fill_csv_header());
}

void LiveLog::point(const Point& p) {
  const At& a = p.at;
  std::string where =
      fmt::format("[{:<7}] {:<16} held={:<8} clients={:<3} depth={:<3}", a.sweep, a.series, a.held, a.clients, a.depth);
  if (a.namespaces != 1 || a.masters != 1) where += fmt::format(" namespaces={} masters={}", a.namespaces, a.masters);
  if (!a.versus.empty()) where += fmt::format(" versus={}", a.versus);
  if (p.ok()) {
    const Measurement& m = p.m;
    fmt::print(stderr, "{} p50 {:>9}  p99 {:>9}  {:>7} {}/s  ({} {}{}, {:.1f} s{})\n", where, fmt_us(m.p50_us),
               fmt_us(m.p99_us), fmt_rate(m.throughput), a.task == Task::pair ? "pairs" : "refusals", m.ops,
               a.task == Task::pair ? "pairs" : "refusals",
               m.unexpected ? fmt::format(", {} UNEXPECTED", m.unexpected) : "", m.seconds,
               std::isnan(m.server_cpu_us) ? "" : ", redis cpu " + fmt_us(m.server_cpu_us) + "/op");
    if (p.zero_held)
      fmt::print(
          stderr, "{:>{}} alternating with 0 held: p50 {:>9}  {:>7} pairs/s  ({:.2f}x pairs/s, {:.2f}x p50{})\n", "",
          14, fmt_us(p.zero_held->p50_us), fmt_rate(p.zero_held->throughput), m.throughput / p.zero_held->throughput,
          m.p50_us / p.zero_held->p50_us,
          std::isnan(p.zero_held->server_cpu_us) ? "" : ", redis cpu " + fmt_us(p.zero_held->server_cpu_us) + "/op");
  } else {
    fmt::print(stderr, "{} {}\n", where, p.status);
  }
  points_.row(csv_row(p));
}

void LiveLog::fill(const Fill& f) {
  fmt::print(stderr, "fill {:<16} world {:<3} {:>8} -> {:>8} held  {:6.1f} s  ({:.0f} locks/s)\n", f.series, f.world,
             f.from, f.to, f.seconds, static_cast<double>(f.to - f.from) / std::max(f.seconds, 1e-9));
  fills_.row(fill_csv_row(f));
}

// ---- markdown ------------------------------------------------------------------------
std::string markdown(const Results& r) {
  const RunInfo& i = r.info;
  std::string md = fmt::format(
      "Run of {} ({} mode). Machine: {} cores (nproc), {}; load average {} at the start, {} at the end; Redis {} "
      "({}); pathlock commit {}.\n\n",
      i.started_utc, i.mode, cpu_count(), cpu_model(), i.load_at_start, i.load_at_end,
      i.redis_version.empty() ? "-" : i.redis_version, i.redis_where.empty() ? "none" : i.redis_where, i.commit);
  md += fmt::format("Command: `{}`\n\n", i.command);
  md += fmt::format(
      "Cells: p50 / p99 latency of one acquire+release pair (or one refused acquire) · pairs (refusals) per second. "
      "Measurement window {:.2f} s per point after {:.2f} s of warm-up.\n\n",
      r.plan.window.measure_s, r.plan.window.warmup_s);
  for (Section section : kSections) md += section(r);
  md += "### Goals\n\n";
  for (const Goal& g : evaluate_goals(r)) md += fmt::format("- **{}** {}\n", g.verdict, g.text);
  std::vector<std::string> skipped;
  for (const auto& [series, why] : r.skipped) skipped.push_back(fmt::format("{} (skipped: {})", series, why));
  if (!skipped.empty()) md += fmt::format("\nNot (fully) measured: {}.\n", fmt::join(skipped, "; "));
  return md;
}

void update_docs(const std::string& file, const std::string& md) {
  std::string text;
  {
    std::ifstream in(file);
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
  std::ofstream out(file, std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + file);
}

}  // namespace pathlock::bench
