// A string literal spelled for a language that escapes like C: the text in
// double quotes, `"` and `\` preceded by a backslash, printable ASCII as
// itself, and every other byte spelled by the caller (C++ and Lua spell such
// bytes differently). Header-only, so both the matrix emitters and the
// Redis library builder use it without linking each other.
#pragma once

#include <string>
#include <string_view>

namespace pathlock::core {

// `s` quoted as above; `escape_byte(c)` spells a byte c < 0x20 or >= 0x7F.
template <class EscapeByte>
std::string quoted(std::string_view s, EscapeByte escape_byte) {
  std::string out = "\"";
  for (const unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7F) {
      out += escape_byte(c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

}  // namespace pathlock::core
