// pathlock-bench: measures pathlock against a bare Redis lock, a per-level
// lock (one key and one round trip per path level) and the original
// scan-everything implementation, and pathlock's embedded backend, in one
// run on one Redis server; then writes CSV, plots, a markdown summary and
// the goal verdicts.
//
//   pathlock-bench [--quick] [--max-held N] [--only SUBJECT]... [--redis URL] [--out DIR]
//                  [--update-docs FILE]
//
// The program is four parts that only meet in Results (results.hpp):
//   sweeps.*   what is measured and in which order (the subjects are in
//              subject.hpp, the timed loop in measure.*)
//   report.*   console lines, CSV, the markdown and docs/benchmarks.md
//   plots.*    the gnuplot script and PNGs
//   goals.*    PASS / MISS / SKIP verdicts, all ratios within the run
// This file parses the options and runs them in that order.
//
// Exit status: 0, 1 for unwritable output or a failed run, 2 for a bad
// command line (options: tools/common/options.hpp), 130 when interrupted (the redis-server child is stopped, partial
// CSV is kept). Goals never change it.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>

#include "common/options.hpp"
#include "goals.hpp"
#include "plots.hpp"
#include "report.hpp"
#include "sweeps.hpp"

#ifndef PATHLOCK_SOURCE_DIR  // for `git rev-parse` (the commit measured)
#define PATHLOCK_SOURCE_DIR "."
#endif
#ifndef PATHLOCK_BENCH_OUT  // the build directory's bench-results/, whatever the working directory
#define PATHLOCK_BENCH_OUT "build/bench-results"
#endif

namespace pathlock::bench {
namespace {

std::string git_revision() {
  const std::string dir = PATHLOCK_SOURCE_DIR;
  const std::string rev = run_command("git -C '" + dir + "' rev-parse --short HEAD 2>/dev/null");
  if (rev.empty()) return "unknown";
  const std::string dirty = run_command("git -C '" + dir + "' status --porcelain --untracked-files=no 2>/dev/null");
  return dirty.empty() ? rev : rev + " + uncommitted changes";
}

int run(const Options& opt, const std::string& command) {
  std::filesystem::create_directories(opt.out_dir);
  Results results;
  results.plan = make_plan(opt.quick, opt.max_held);
  RunInfo& info = results.info;
  info.mode = opt.quick ? "quick" : "full";
  if (opt.max_held > 0) info.mode = (opt.quick ? "quick, " : "") + ("held up to " + fmt_count(opt.max_held));
  if (!opt.only.empty()) info.mode += fmt::format(", only {}", fmt::join(opt.only, " and "));
  info.command = command;
  info.started_utc = utc_now();
  info.commit = git_revision();
  info.load_at_start = load_average();
  LiveLog log(opt.out_dir);
  {
    Sweeps sweeps(opt, results, log);
    sweeps.run();
  }  // the redis-server stops here
  info.load_at_end = load_average();

  write_plots(results, opt.out_dir);
  const std::string md = markdown(results);
  {
    std::ofstream out(std::filesystem::path(opt.out_dir) / "summary.md");
    out << md;
  }
  if (!opt.update_docs.empty()) {
    update_docs(opt.update_docs, md);
    fmt::print(stderr, "updated {}\n", opt.update_docs);
  }
  fmt::print("{}\n", md);
  fmt::print("Results: {}/results.csv, fills.csv, summary.md, plot.gp and *.png\n\n", opt.out_dir);
  for (const Goal& g : evaluate_goals(results)) fmt::print("{} {}\n", g.verdict, g.text);
  return 0;
}

int usage(const char* argv0, int status) {
  fmt::print(stderr,
             "usage: {} [--quick] [--max-held N] [--only SUBJECT]... [--redis URL] [--out DIR] [--update-docs FILE]\n"
             "  --quick             small sweeps and short windows (under a minute)\n"
             "  --max-held N        leave out held counts above N (e.g. 10000 for a medium run)\n"
             "  --only SUBJECT      measure only this subject (repeatable; the others are reported as skipped):\n"
             "                      {}\n"
             "  --redis URL         use this server instead of starting redis-server\n"
             "  --out DIR           results folder (default {})\n"
             "  --update-docs FILE  rewrite the section between {} and {} of FILE\n",
             argv0, fmt::join(subject_names(), ", "), PATHLOCK_BENCH_OUT, kBeginMarker, kEndMarker);
  return status;
}

}  // namespace
}  // namespace pathlock::bench

int main(int argc, char** argv) {
  using namespace pathlock::bench;
  namespace cli = pathlock::options;
  const cli::Options table = cli::Options{}
                                 .flag("quick")
                                 .number("max-held", 1, 999999999)
                                 .repeated("only",
                                           [](const std::string& v) {
                                             const auto& names = subject_names();
                                             if (std::find(names.begin(), names.end(), v) == names.end())
                                               throw std::invalid_argument(
                                                   fmt::format("wants one of {}, not '{}'", fmt::join(names, ", "), v));
                                           })
                                 .value("redis")
                                 .value("out")
                                 .value("update-docs")
                                 .flag("help")
                                 .alias("-h", "help");
  const std::optional<cli::Parsed> parsed = table.parse_main(argc, argv, 1, "");
  if (!parsed) return usage(argv[0], cli::kExitUsage);
  const cli::Parsed& p = *parsed;
  if (p.has("help")) return usage(argv[0], cli::kExitOk);
  Options opt;
  opt.quick = p.has("quick");
  opt.max_held = static_cast<std::size_t>(p.number_or("max-held", 0));
  opt.only = p.all("only");
  opt.redis_url = p.get("redis");
  opt.out_dir = p.get("out", PATHLOCK_BENCH_OUT);
  opt.update_docs = p.get("update-docs");
  install_signal_handlers();
  try {
    return run(opt, shell_join(argc, argv));
  } catch (const Interrupted&) {
    fmt::print(stderr, "interrupted; redis-server stopped, partial results left in {}\n", opt.out_dir);
    return 130;
  } catch (const std::exception& e) {
    fmt::print(stderr, "pathlock-bench: {}\n", e.what());
    return 1;
  }
}
