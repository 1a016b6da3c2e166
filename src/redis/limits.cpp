// Limits per namespace on Redis: the default's cache and the replies of the
// library's limit calls (limits.hpp).
#include "redis/limits.hpp"

#include "redis/redis_client.hpp"

#include "core/process.hpp"

#include <fmt/format.h>

#include <utility>

namespace pathlock::redis {

// The mutex is held for a copy only, never across the GET (a fork while a
// thread of the parent waits for the reply would leave it held in the
// child), and inside a NoForkSection. Threads that find the text stale at
// once all read it: one GET each, every kLimitsRefresh.
std::string DefaultLimitsCache::text(RedisClient& client, bool fresh,
                                     const std::function<void(std::string_view)>& warn) {
  const auto now = std::chrono::steady_clock::now();
  {
    const core::NoForkSection no_fork;
    std::lock_guard guard(mutex_);
    if (read_ && !fresh && now - read_at_ < kLimitsRefresh) return text_;
  }
  Reply r;
  try {
    r = client.call({"GET", std::string(kDefaultLimitsKey)});
  } catch (const BackendError& e) {
    // The key's node cannot be reached (a Cluster node down or cut off,
    // which the namespace's own node need not be): the last text read
    // stays, tried again after kLimitsRefresh, and the acquire goes on.
    // A limit protects the server's memory, not a lock: a read that fails
    // must not fail every namespace's acquires with it.
    bool tell = false;
    std::string kept;
    {
      const core::NoForkSection no_fork;
      std::lock_guard guard(mutex_);
      read_at_ = now;
      read_ = true;
      kept = text_;
      tell = !std::exchange(unreachable_, true);
    }
    if (tell && warn) warn(fmt::format("could not read it ({}); the last default read stays", e.what()));
    return kept;
  }
  // An error (a user without GET on pl:*) counts as none, and is told once;
  // a value this release cannot read (another tool's) counts as none.
  std::string text;
  if (!r.is_error() && r.type == Reply::Type::string && core::parse_limits(r.str)) text = r.str;
  bool tell = false;
  {
    const core::NoForkSection no_fork;
    std::lock_guard guard(mutex_);
    text_ = text;
    read_at_ = now;
    read_ = true;
    unreachable_ = false;
    tell = r.is_error() && !std::exchange(warned_, true);
  }
  if (tell && warn) warn(r.str);
  return text;
}

void DefaultLimitsCache::set(RedisClient& client, const Limits& limits) {
  const bool none = !limits.locks && !limits.places && !limits.owner_locks;
  const std::string text = none ? std::string() : core::limits_text(limits);
  if (none) client.command({"DEL", std::string(kDefaultLimitsKey)});
  else client.command({"SET", std::string(kDefaultLimitsKey), text});
  const core::NoForkSection no_fork;
  std::lock_guard guard(mutex_);
  text_ = text;
  read_at_ = std::chrono::steady_clock::now();
  read_ = true;
}

AcquireResult read_over_limit(const Reply& r, const RedisClient& client) {
  const std::optional<LimitKind> kind = core::limit_kind(r.at(1).text());
  if (!kind) client.fail(fmt::format("acquire replied over_limit with an unknown limit '{}'", r.at(1).text()));
  return core::over_limit(*kind, static_cast<std::uint64_t>(r.at(2).number()),
                          static_cast<std::uint64_t>(r.at(3).number()));
}

LimitsStatus read_limits_status(const Reply& r, std::string_view default_text) {
  LimitsStatus out;
  out.defaults = core::parse_limits(default_text).value_or(Limits{});
  if (!r.at(1).text().empty()) out.overrides = core::parse_limits(r.at(1).text());
  out.effective = out.overrides ? *out.overrides : out.defaults;
  out.locks = static_cast<std::uint64_t>(r.at(2).number());
  out.places = static_cast<std::uint64_t>(r.at(3).number());
  out.owner_locks = static_cast<std::uint64_t>(r.at(4).number());
  out.owner = r.at(5).text();
  return out;
}

}  // namespace pathlock::redis
