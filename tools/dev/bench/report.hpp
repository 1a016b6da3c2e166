// The human-readable and machine-readable outputs of pathlock-bench, made
// from Results (results.hpp) and nothing else: the console line of every
// point as it is measured, results.csv and fills.csv (rewritten after every
// row, so an interrupted run keeps what it measured), and the markdown that
// goes to summary.md, to stdout and between the bench markers of
// docs/benchmarks.md. The goals (goals.hpp) and the plots (plots.hpp) are
// separate; the markdown ends with the goals.
#pragma once

#include <memory>
#include <string>

#include "results.hpp"
#include "util.hpp"

namespace pathlock::bench {

inline constexpr const char* kBeginMarker = "<!-- bench:begin -->";
inline constexpr const char* kEndMarker = "<!-- bench:end -->";

// Console + CSV, as the run goes.
class LiveLog {
 public:
  explicit LiveLog(const std::string& out_dir);  // throws when the folder is not writable
  void point(const Point& p);
  void fill(const Fill& f);

 private:
  CsvWriter points_, fills_;
};

// The markdown of the whole run: run facts, one section per sweep, goals.
std::string markdown(const Results& r);

// Replaces the text between kBeginMarker and kEndMarker of `file` with `md`
// (appends the block when the markers are missing). Throws when it cannot
// write the file.
void update_docs(const std::string& file, const std::string& md);

}  // namespace pathlock::bench
