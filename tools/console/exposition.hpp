// Reading what another engine's exporter serves: the Prometheus text
// exposition format (version 0.0.4, what Metrics::prometheus() writes), for
// the one family the console draws, pathlock_refusals_total
// (docs/operations.md#metrics).
//
// Strict, like Prometheus itself: every sample line of the text must be
// well formed (a name, an optional label set whose values escape only \\,
// \" and \n, a number, an optional integer timestamp), or the whole text is
// refused with the line and column of the first fault. The text is
// untrusted: nothing here throws on bad input, and no input can make it
// read out of bounds or loop; its cost is linear in the text's length.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pathlock::console {

inline constexpr std::string_view kRefusalFamily = "pathlock_refusals_total";

// One sample line, parsed. `labels` in the order written.
struct Sample {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;  // name, unescaped value
  double value = 0;
};

// Parses one sample line (without its newline; not a comment, not blank).
// Returns "" and fills `out`, or what is wrong ("column N: ..."); `out` is
// then unspecified.
std::string parse_sample_line(std::string_view line, Sample& out);

// The refusal counts of one exporter's text.
struct RefusalText {
  // (op, held_op) -> refusals, summed over `relation` and any other label.
  // Empty when `error` is set.
  std::map<std::pair<std::string, std::string>, std::uint64_t> pairs;
  // A "# TYPE pathlock_refusals_total counter" line or a sample of the
  // family was seen (false: probably not a pathlock exporter).
  bool family_seen = false;
  // "" or the first fault: "line N, column M: ..." (or "line N: ...").
  std::string error;

  std::uint64_t total() const;
};

// Reads every line of `text`. Samples of other families are checked for
// form and otherwise ignored. A sample of the family must carry the labels
// op and held_op, a whole non-negative value (below 2^53), and a label set
// that no other of its lines repeats; a TYPE line for the family must say
// counter and come once.
RefusalText read_refusals(std::string_view text);

// a + b, or UINT64_MAX when that overflows.
inline std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
  return a + b < a ? UINT64_MAX : a + b;
}

}  // namespace pathlock::console
