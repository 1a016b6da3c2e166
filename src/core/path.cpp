// Canonical lock paths: see include/pathlock/path.hpp for the rules.
//
// normalize_path makes one pass over the bytes: it validates UTF-8 and
// control characters, splits on '/', refuses "." and "..", and rebuilds the
// path with single separators. Everything it refuses is reported with the
// byte offset, so a caller can point at the bad character.
#include <pathlock/path.hpp>

#include <fmt/format.h>

namespace pathlock {
namespace {

// Returns the length of the well-formed UTF-8 sequence at s[i], or 0.
std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;  // no overlong forms
    if (c == 0xED) hi = 0x9F;  // no UTF-16 surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;  // no overlong forms
    if (c == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  return n;
}

}  // namespace

std::optional<std::string> text_problem(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7F) return fmt::format("control character 0x{:02X} at byte {}", c, i);
    const std::size_t n = utf8_sequence_length(text, i);
    if (n == 0) return fmt::format("invalid UTF-8 at byte {}", i);
    i += n;
  }
  return std::nullopt;
}

std::string normalize_path(std::string_view path) {
  if (path.empty()) throw PathError("path is empty");
  if (path.front() != '/') throw PathError(fmt::format("path '{}' is not absolute (must start with '/')", path));
  if (path.size() > kMaxPathBytes)
    throw PathError(fmt::format("path is {} bytes long; the limit is {}", path.size(), kMaxPathBytes));

  if (const auto problem = text_problem(path)) throw PathError(fmt::format("path has {}", *problem));

  std::string out;
  out.reserve(path.size());
  std::size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    if (i == path.size()) break;
    const std::size_t end = std::min(path.find('/', i), path.size());
    const std::string_view component = path.substr(i, end - i);
    if (component == "." || component == "..")
      throw PathError(fmt::format("path '{}' has a '{}' component; give the resolved path", path, component));
    if (component.size() > kMaxComponentBytes)
      throw PathError(fmt::format("path component of {} bytes; the limit is {}", component.size(), kMaxComponentBytes));
    out += '/';
    out += component;
    i = end;
  }
  if (out.empty()) out = "/";
  return out;
}

std::vector<std::string_view> path_components(std::string_view canonical) {
  std::vector<std::string_view> parts;
  PathCursor cursor(canonical);
  std::string_view part;
  while (cursor.next(part)) parts.push_back(part);
  return parts;
}

bool path_within(std::string_view inner, std::string_view outer) {
  if (outer == "/") return true;
  if (inner.size() < outer.size() || inner.compare(0, outer.size(), outer) != 0) return false;
  return inner.size() == outer.size() || inner[outer.size()] == '/';
}

bool paths_overlap(std::string_view a, std::string_view b) {
  return path_within(a, b) || path_within(b, a);
}

}  // namespace pathlock
