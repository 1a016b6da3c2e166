// pathlock/path.hpp: canonical lock paths.
//
// A lock path is an absolute, '/'-separated path compared by whole components:
// "/p/A/C" overlaps "/p/A" and "/p/A/C/x" but never "/p/A/CD" or "/p/X/A/C".
// Paths are data: no character has a pattern or wildcard meaning.
//
// Normalisation (the result spells the same path):
//   * repeated slashes collapse ("/p//A" -> "/p/A");
//   * a trailing slash is dropped ("/p/A/" -> "/p/A"); "/" is the root.
// Refused with PathError (never silently rewritten into another path):
//   * empty input or a relative path (not starting with '/');
//   * "." or ".." components (their meaning depends on links the lock engine
//     cannot see);
//   * control characters (U+0000..U+001F, U+007F);
//   * bytes that are not well-formed UTF-8 (overlong forms, surrogates, and
//     code points above U+10FFFF included);
//   * a component longer than 255 bytes or a path longer than 4096 bytes.
// Unicode names are compared byte for byte: no case folding and no Unicode
// normalisation (NFC "é" and NFD "é" are different names).
//
// Thread safety: free functions without shared state.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace pathlock {

inline constexpr std::size_t kMaxPathBytes = 4096;
inline constexpr std::size_t kMaxComponentBytes = 255;

// Thrown for a path that cannot be a lock path; what() says why.
class PathError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Returns the canonical form of `path`. Throws PathError if it is refused.
std::string normalize_path(std::string_view path);

// Describes the first control character or malformed UTF-8 sequence in
// `text` ("invalid UTF-8 at byte 3"), or returns nullopt if there is none.
std::optional<std::string> text_problem(std::string_view text);

// Sets `part` to the component of canonical `path` that starts at `pos` and
// moves `pos` past it; false when no component is left.
inline bool next_path_component(std::string_view path, std::size_t& pos, std::string_view& part) {
  if (pos >= path.size()) return false;
  std::size_t end = path.find('/', pos);
  if (end == std::string_view::npos) end = path.size();
  part = path.substr(pos, end - pos);
  pos = end + 1;
  return true;
}

// Walks the components of a canonical path without allocating:
//   PathCursor cursor(path); std::string_view part;
//   while (cursor.next(part)) ...
// Precondition: the path came from normalize_path and outlives the cursor.
class PathCursor {
 public:
  explicit PathCursor(std::string_view canonical) : path_(canonical) {}
  // Sets `part` to the next component; false when there is none left.
  bool next(std::string_view& part) { return next_path_component(path_, pos_, part); }

 private:
  std::string_view path_;
  std::size_t pos_ = 1;
};

// Returns the components of a canonical path ("/" has none).
// Precondition: `canonical` came from normalize_path.
std::vector<std::string_view> path_components(std::string_view canonical);

// True if canonical `inner` equals canonical `outer` or lies inside it.
bool path_within(std::string_view inner, std::string_view outer);

// True if two canonical paths are equal or one lies inside the other.
bool paths_overlap(std::string_view a, std::string_view b);

}  // namespace pathlock
