// Limits per namespace on Redis (docs/lua-protocol.md#limits): what the
// engine keeps beside the library's functions. A namespace's own limits are
// the library's (meta's `lim`, set_limits, limits_ro); the default for every
// namespace is the key pl:limits (one string, the text form of
// core/limits.hpp), which every engine reads at most every kLimitsRefresh
// and sends with each acquire (its argument default_limits). Private to the
// Redis backend.
#pragma once

#include "core/limits.hpp"

#include <pathlock/engine.hpp>
#include <pathlock/metrics.hpp>

#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>

namespace pathlock::redis {

class RedisClient;
struct Reply;

// The key of the default limits (outside every namespace's hash tag: any
// Cluster node may hold it).
inline constexpr std::string_view kDefaultLimitsKey = "pl:limits";

// The default limits as this engine last read them. Thread-safe.
class DefaultLimitsCache {
 public:
  // The text to send with an acquire ("" when none): read from the server
  // when older than kLimitsRefresh (or `fresh`); a read the user may not make
  // (NOPERM) counts as none, with one warning through `warn`; a read that
  // fails on the network keeps the last text read (none before the first),
  // with one warning per stretch of failures, and is tried again after
  // kLimitsRefresh.
  std::string text(RedisClient& client, bool fresh, const std::function<void(std::string_view)>& warn);
  // Sets them on the server (SET, or DEL for no limit at all) and here.
  void set(RedisClient& client, const Limits& limits);

 private:
  std::mutex mutex_;
  std::string text_;
  std::chrono::steady_clock::time_point read_at_{};
  bool read_ = false, warned_ = false;
  bool unreachable_ = false;  // the last read failed on the network (told once per such stretch)
};

// acquire's {"over_limit", limit, max, count}, as an AcquireResult; an
// unknown limit name fails through `client`.
AcquireResult read_over_limit(const Reply& r, const RedisClient& client);
// limits_ro's {"limits", own, locks, places, owner_locks, owner} with the
// default text, as a LimitsStatus.
LimitsStatus read_limits_status(const Reply& r, std::string_view default_text);

}  // namespace pathlock::redis
