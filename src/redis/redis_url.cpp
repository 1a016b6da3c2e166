// Parsing of redis:// URLs; see redis_url.hpp for the accepted form.
#include "redis/redis_url.hpp"

#include <pathlock/engine.hpp>

#include <fmt/format.h>

#include <charconv>

namespace pathlock::redis {
namespace {

[[noreturn]] void bad(std::string_view url, std::string_view why) {
  throw InvalidRequest(fmt::format("redis url '{}': {} (expected redis://[user:password@]host:port[/db])", url, why));
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view url, std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size()) bad(url, "truncated %-escape in the credentials");
    const int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
    if (hi < 0 || lo < 0) bad(url, "bad %-escape in the credentials");
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

int parse_number(std::string_view url, std::string_view text, int lo, int hi, std::string_view what) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < lo || value > hi)
    bad(url, fmt::format("{} '{}' is not a number in {}..{}", what, text, lo, hi));
  return value;
}

}  // namespace

std::string RedisUrl::describe() const {
  const bool v6 = host.find(':') != std::string::npos;
  return fmt::format("{}{}{}:{}/{}", v6 ? "[" : "", host, v6 ? "]" : "", port, db);
}

RedisUrl parse_redis_url(std::string_view url) {
  constexpr std::string_view kScheme = "redis://";
  if (url.substr(0, kScheme.size()) != kScheme) bad(url, "the scheme must be redis://");
  std::string_view rest = url.substr(kScheme.size());
  if (rest.find_first_of("?#") != std::string_view::npos) bad(url, "query strings and fragments are not supported");

  RedisUrl out;
  // Credentials end at the last '@' (a password may contain '@' only %-escaped,
  // but a raw one is accepted as long as the host part has none).
  if (const std::size_t at = rest.rfind('@'); at != std::string_view::npos) {
    const std::string_view userinfo = rest.substr(0, at);
    rest = rest.substr(at + 1);
    const std::size_t colon = userinfo.find(':');
    if (colon == std::string_view::npos) bad(url, "credentials need a password (user:password@ or :password@)");
    std::string user = percent_decode(url, userinfo.substr(0, colon));
    std::string password = percent_decode(url, userinfo.substr(colon + 1));
    if (password.empty()) bad(url, "the password is empty");
    if (!user.empty()) out.user = std::move(user);
    out.password = std::move(password);
  }

  std::string_view hostport = rest;
  if (const std::size_t slash = rest.find('/'); slash != std::string_view::npos) {
    hostport = rest.substr(0, slash);
    const std::string_view db = rest.substr(slash + 1);
    if (!db.empty()) out.db = parse_number(url, db, 0, 1 << 20, "db");
  }

  std::string_view port;
  if (!hostport.empty() && hostport.front() == '[') {
    const std::size_t close = hostport.find(']');
    if (close == std::string_view::npos) bad(url, "unclosed '[' in the host");
    out.host = std::string(hostport.substr(1, close - 1));
    const std::string_view after = hostport.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') bad(url, "unexpected text after ']'");
      port = after.substr(1);
      if (port.empty()) bad(url, "empty port");
    }
  } else {
    const std::size_t colon = hostport.find(':');
    out.host = std::string(hostport.substr(0, colon));
    if (colon != std::string_view::npos) {
      port = hostport.substr(colon + 1);
      if (port.empty()) bad(url, "empty port");
    }
  }
  if (out.host.empty()) bad(url, "the host is empty");
  if (!port.empty()) out.port = parse_number(url, port, 1, 65535, "port");
  return out;
}

}  // namespace pathlock::redis
