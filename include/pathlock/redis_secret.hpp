// pathlock/redis_secret.hpp: where the password of a redis URL lies in its
// text, without parsing the rest, and the URL with it redacted, for a
// message, a page or a log line (header-only: usable in builds without the
// Redis backend). The url parser's messages, the console's page and the
// CLI's password options use it.
#pragma once

#include <string>
#include <string_view>
#include <utility>

namespace pathlock::redis {

// [begin, end) of the text between "user:" and the last '@' of the
// credentials (before any '#'); {npos, npos} when the url shows none.
inline std::pair<std::size_t, std::size_t> url_password_span(std::string_view url) {
  constexpr std::size_t none = std::string_view::npos;
  const std::size_t scheme = url.find("://");
  const std::size_t from = scheme == none ? 0 : scheme + 3;
  const std::string_view rest = url.substr(from, url.find('#', from) - from);
  const std::size_t at = rest.rfind('@');
  const std::size_t colon = at == none ? none : rest.substr(0, at).find(':');
  if (colon == none) return {none, none};
  return {from + colon + 1, from + at};
}

// `url` for messages and pages: the password (whatever lies between
// "user:" and the last '@' of the credentials) as ***:
// "redis://user:***@host:6379", "redis://:***@host". Any text is accepted
// (a malformed url is redacted the same way).
inline std::string redact_redis_url(std::string_view url) {
  const auto [begin, end] = url_password_span(url);
  if (begin == std::string_view::npos) return std::string(url);
  return std::string(url.substr(0, begin)) + "***" + std::string(url.substr(end));
}

}  // namespace pathlock::redis
