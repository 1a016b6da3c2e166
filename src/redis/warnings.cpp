// The Redis engine's warnings about its user's permissions (warnings.hpp).
#include "redis/warnings.hpp"

#include "redis/limits.hpp"

#include <fmt/format.h>

namespace pathlock::redis {

Warning optional_denied_warning(std::string_view server, std::string_view ns, std::string_view command) {
  if (command == "SPUBLISH")
    return {fmt::format("redis at {}: this user may not SPUBLISH on pl:{{{}}}:wake; waiting requests only re-check on "
                        "a timer. Grant the user the channels pl:* (ACL SETUSER ... &pl:*)", server, ns),
            "no_spublish"};
  const bool info = command == "INFO";
  return {fmt::format("redis at {}: this user may not run {} {}; namespaces it creates keep their keys until calls "
                      "remove them. Grant +{}", server, command,
                      info ? "(the library reads maxmemory-policy with it)" : fmt::format("on pl:{{{}}}:*", ns),
                      info ? "info" : "pexpireat"),
          info ? "no_info" : "no_pexpireat"};
}

Warning default_unread_warning(std::string_view server, std::string_view error) {
  if (error.rfind("could not read it", 0) == 0)
    return {fmt::format("redis at {}: the default limits ({}): {}", server, kDefaultLimitsKey, error),
            "default_limits_unreachable"};
  return {fmt::format("redis at {}: this user may not GET {} ({}); no default limits apply to its requests. Grant "
                      "+get on ~pl:*", server, kDefaultLimitsKey, error),
          "no_default_limits"};
}

}  // namespace pathlock::redis
