// Redis connection URLs for the Redis backend.
//
// Accepted form: redis://[[user]:password@]host[:port][/db]
//   * host: a name, an IPv4 address or a bracketed IPv6 address ("[::1]");
//   * port: 1..65535, default 6379;
//   * db: the database number for SELECT, default 0;
//   * user and password are percent-decoded ("%40" is '@'); a password
//     without a user ("redis://:secret@host") authenticates as the default
//     user (AUTH password), a user and a password with AUTH user password.
// Anything else (another scheme, a query string, an empty host, a bad port
// or db) throws InvalidRequest naming the problem. Pure functions, no state.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace pathlock::redis {

struct RedisUrl {
  std::string host;
  int port = 6379;
  std::optional<std::string> user;      // AUTH user password
  std::optional<std::string> password;  // AUTH password when user is empty
  int db = 0;

  // "host:port/db" without credentials, for messages.
  std::string describe() const;
};

// Parses `url`. Throws InvalidRequest.
RedisUrl parse_redis_url(std::string_view url);

}  // namespace pathlock::redis
