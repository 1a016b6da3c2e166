// How names compare under a name policy (issue 51; docs/design.md#names):
// the folded form of a path, which locks will meet by. Internal: not yet
// part of the engine or of any client; the definition every client is to
// fold by, tested against the Unicode Character Database's own files
// (tests/names_fold_test.cpp).
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace pathlock::names {

enum class Policy {
  bytes,        // byte for byte (pathlock 1.0's only policy): the path as given
  nfc,          // canonically equivalent spellings meet: Unicode NFC
  nfc_casefold  // and so do spellings that differ in case: canonical caseless
                // matching (Unicode 3.13, D145), full case folding, never
                // compatibility forms; the folded form is written in NFC
};

// The Unicode version every client's library can fold: under a policy other
// than bytes, a name holding a code point not assigned in it is refused (the
// clients' libraries implement different versions, and only for code points
// assigned in the oldest of them do normalisation and case folding agree).
inline constexpr std::string_view kUnicodeVersion = "13.0";

// A folded path, or why the input cannot be folded (problem not empty: it is
// not valid UTF-8, or it holds a code point not assigned in kUnicodeVersion).
struct Folded {
  std::string text;
  std::string problem;
  bool ok() const { return problem.empty(); }
};

Folded fold(Policy policy, std::string_view path);

// Is `cp` assigned in kUnicodeVersion?
bool assigned(char32_t cp);

// The ranges of assigned code points, inclusive, ascending (for the test
// that compares them with the Unicode Character Database).
struct Range {
  char32_t first, last;
};
std::span<const Range> assigned_ranges();

}  // namespace pathlock::names
