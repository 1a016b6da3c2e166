// The Redis engine's warnings about what its user may not do, and what each
// costs (src/redis/redis_engine.cpp logs them through ObserveOptions::log).
// Private to the Redis backend.
#pragma once

#include <string>
#include <string_view>

namespace pathlock::redis {

struct Warning {
  std::string message;
  std::string event;  // the log field `event`
};

// A command the library can do without, refused on namespace `ns`'s keys.
// SPUBLISH: waiting requests re-check on a timer; PEXPIREAT: the namespaces
// this user creates keep their keys (docs/lua-protocol.md#expiry); INFO: the
// library cannot read the eviction policy, so it gives no key a TTL.
Warning optional_denied_warning(std::string_view server, std::string_view ns, std::string_view command);
// GET of the default limits (pl:limits) refused with `error`: no default
// limits apply to this user's requests (docs/lua-protocol.md#limits).
Warning default_unread_warning(std::string_view server, std::string_view error);

}  // namespace pathlock::redis
