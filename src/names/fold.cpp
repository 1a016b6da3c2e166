#include "names/fold.hpp"

#include <fmt/format.h>
#include <utf8proc.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

namespace pathlock::names {
namespace {

constexpr Range kAssigned[] = {
#include "names/assigned_13.inc"
};

// utf8proc's output (malloc'ed) and its length, or the error code.
struct Mapped {
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> text{nullptr, &std::free};
  utf8proc_ssize_t length = 0;
};

Mapped map(std::string_view in, int options) {
  Mapped out;
  utf8proc_uint8_t* text = nullptr;
  out.length = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(in.data()),
                            static_cast<utf8proc_ssize_t>(in.size()), &text,
                            static_cast<utf8proc_option_t>(options | UTF8PROC_STABLE));
  out.text.reset(text);
  return out;
}

// Why `path` cannot be folded: not UTF-8, or a code point the oldest
// client library does not know; empty if it can.
std::string unfoldable(std::string_view path) {
  const auto* s = reinterpret_cast<const utf8proc_uint8_t*>(path.data());
  const auto size = static_cast<utf8proc_ssize_t>(path.size());
  for (utf8proc_ssize_t at = 0; at < size;) {
    utf8proc_int32_t cp = 0;
    const utf8proc_ssize_t n = utf8proc_iterate(s + at, size - at, &cp);
    if (n < 0) return fmt::format("is not valid UTF-8 (at byte {})", at);
    if (!assigned(static_cast<char32_t>(cp)))
      return fmt::format("holds U+{:04X}, which is not assigned in Unicode {}: not every client can fold it", cp,
                         kUnicodeVersion);
    at += n;
  }
  return {};
}

}  // namespace

bool assigned(char32_t cp) {
  const auto* end = std::end(kAssigned);
  const auto* r = std::upper_bound(std::begin(kAssigned), end, cp,
                                   [](char32_t c, const Range& range) { return c < range.first; });
  return r != std::begin(kAssigned) && cp <= (r - 1)->last;
}

std::span<const Range> assigned_ranges() { return kAssigned; }

Folded fold(Policy policy, std::string_view path) {
  if (policy == Policy::bytes) return {std::string(path), {}};
  if (std::string problem = unfoldable(path); !problem.empty()) return {{}, std::move(problem)};
  // nfc: one pass. nfc_casefold: NFD first, then case folding of the
  // decomposed text, decomposed again, reordered and composed: NFC of
  // NFD(toCasefold(NFD(X))). One pass would fold each code point before
  // the canonical reordering of the whole text, which differs where folding
  // changes a mark's combining class (U+0345 folds to a starter, U+03B9).
  std::string_view nfd = path;
  Mapped first;
  if (policy == Policy::nfc_casefold) {
    first = map(path, UTF8PROC_DECOMPOSE);
    if (first.length < 0) return {{}, utf8proc_errmsg(first.length)};
    nfd = {reinterpret_cast<const char*>(first.text.get()), static_cast<std::size_t>(first.length)};
  }
  const Mapped out = map(nfd, UTF8PROC_COMPOSE | (policy == Policy::nfc_casefold ? UTF8PROC_CASEFOLD : 0));
  if (out.length < 0) return {{}, utf8proc_errmsg(out.length)};
  return {std::string(reinterpret_cast<const char*>(out.text.get()), static_cast<std::size_t>(out.length)), {}};
}

}  // namespace pathlock::names
