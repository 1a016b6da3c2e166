// Parsing of redis[s]:// and redis[s]-sentinel:// URLs; see redis_url.hpp.
#include <pathlock/redis_url.hpp>

#include <pathlock/engine.hpp>

#include <fmt/format.h>

#include <charconv>

namespace pathlock::redis {
namespace {

[[noreturn]] void bad(std::string_view url, std::string_view why) {
  throw InvalidRequest(fmt::format(
      "redis url '{}': {} (expected redis[s]://[user:password@]host:port[,host:port...][/db] or "
      "redis[s]-sentinel://[user:password@]host:port[,host:port...][/db]#MASTER)",
      redact_redis_url(url), why));
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view url, std::string_view s, std::string_view where) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size()) bad(url, fmt::format("truncated %-escape in the {}", where));
    const int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
    if (hi < 0 || lo < 0) bad(url, fmt::format("bad %-escape in the {}", where));
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

Endpoint parse_hostport(std::string_view url, std::string_view hostport, int default_port) {
  Endpoint out{{}, default_port};
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

// "user:password", ":password", or "user" when the password is given apart.
void read_credentials(std::string_view url, std::string_view userinfo, bool password_apart, RedisUrl& out) {
  const std::size_t colon = userinfo.find(':');
  if (colon == std::string_view::npos && !password_apart)
    bad(url, "credentials need a password (user:password@ or :password@, or a password given apart)");
  std::string user = percent_decode(url, userinfo.substr(0, colon), "credentials");
  if (colon != std::string_view::npos) {
    std::string secret = percent_decode(url, userinfo.substr(colon + 1), "credentials");
    if (secret.empty()) bad(url, "the password is empty");
    out.password = std::move(secret);
  }
  if (!user.empty()) out.user = std::move(user);
}

}  // namespace

std::string Endpoint::describe() const {
  const bool v6 = host.find(':') != std::string::npos;
  return fmt::format("{}{}{}:{}", v6 ? "[" : "", host, v6 ? "]" : "", port);
}

std::string RedisUrl::describe() const {
  std::string out;
  for (const Endpoint& e : nodes) out += (out.empty() ? "" : ",") + e.describe();
  out += fmt::format("/{}", db);
  if (kind == Kind::sentinel) out += fmt::format(" (master {} via sentinels)", master_name);
  if (tls) out += " (tls)";
  return out;
}

RedisUrl parse_redis_url(std::string_view url, const std::optional<std::string>& password) {
  struct Scheme {
    std::string_view prefix;
    RedisUrl::Kind kind;
    bool tls;
  };
  static constexpr Scheme kSchemes[] = {{"redis://", RedisUrl::Kind::redis, false},
                                        {"rediss://", RedisUrl::Kind::redis, true},
                                        {"redis-sentinel://", RedisUrl::Kind::sentinel, false},
                                        {"rediss-sentinel://", RedisUrl::Kind::sentinel, true}};
  RedisUrl out;
  std::string_view rest;
  bool known = false;
  for (const Scheme& s : kSchemes) {
    if (url.substr(0, s.prefix.size()) != s.prefix) continue;
    out.kind = s.kind;
    out.tls = s.tls;
    rest = url.substr(s.prefix.size());
    known = true;
    break;
  }
  if (!known) bad(url, "the scheme must be redis://, rediss://, redis-sentinel:// or rediss-sentinel://");
  if (rest.find('?') != std::string_view::npos) bad(url, "query strings are not supported");
  if (const std::size_t hash = rest.find('#'); hash != std::string_view::npos) {
    if (out.kind != RedisUrl::Kind::sentinel) bad(url, "a #fragment is only for redis[s]-sentinel:// (the master name)");
    out.master_name = percent_decode(url, rest.substr(hash + 1), "master name");
    rest = rest.substr(0, hash);
  }
  if (out.kind == RedisUrl::Kind::sentinel && out.master_name.empty())
    bad(url, "a sentinel url needs the master name after '#'");

  // Credentials end at the last '@' (a password may contain '@' only %-escaped,
  // but a raw one is accepted as long as the host part has none).
  if (const std::size_t at = rest.rfind('@'); at != std::string_view::npos) {
    read_credentials(url, rest.substr(0, at), password.has_value(), out);
    rest = rest.substr(at + 1);
  }
  if (password) {
    if (out.password) bad(url, "it has a password and another one is given apart (a file, the environment): give one");
    if (password->empty()) bad(url, "the password given apart is empty");
    out.password = password;
  }

  std::string_view hosts = rest;
  if (const std::size_t slash = rest.find('/'); slash != std::string_view::npos) {
    hosts = rest.substr(0, slash);
    const std::string_view db = rest.substr(slash + 1);
    if (!db.empty()) out.db = parse_number(url, db, 0, 1 << 20, "db");
  }
  const int default_port = out.kind == RedisUrl::Kind::sentinel ? 26379 : 6379;
  for (std::size_t at = 0;;) {
    const std::size_t comma = hosts.find(',', at);
    out.nodes.push_back(parse_hostport(url, hosts.substr(at, comma - at), default_port));
    if (comma == std::string_view::npos) break;
    at = comma + 1;
  }
  out.host = out.nodes.front().host;
  out.port = out.nodes.front().port;
  return out;
}

}  // namespace pathlock::redis
