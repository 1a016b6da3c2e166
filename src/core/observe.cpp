// Instruments and HoldTable; see observe.hpp.
#include "core/observe.hpp"

#include "core/request.hpp"  // log_escape

#include <fmt/format.h>

#include <new>

namespace pathlock::core {

Instruments::Instruments(const ObserveOptions& options, const MatrixTable& matrix)
    : matrix_(matrix),
      metrics_(!options.count ? nullptr : options.metrics ? options.metrics : std::make_shared<Metrics>(matrix)),
      observer_(options.observer),
      log_(options.log ? options.log : LogSink(log_to_stderr)),
      long_wait_(options.long_wait),
      long_hold_(options.long_hold) {
  if (metrics_ && !metrics_->fits(matrix))
    throw InvalidRequest("observe.metrics was made for a matrix with other operations than the engine's");
  if (long_wait_ <= Millis{0} || long_hold_ <= Millis{0})
    throw InvalidRequest("observe.long_wait and observe.long_hold must be positive");
}

void Instruments::log(LogLevel level, std::string_view message, const std::vector<LogField>& fields) const noexcept {
  try {
    log_(level, message, fields);
  } catch (...) {  // a sink that throws loses its message, never the caller's call
  }
}

void Instruments::observe(const ObservedCall& call) const noexcept {
  if (!observer_) return;
  try {
    observer_(call);
  } catch (...) {
  }
}

LogSink Instruments::sink() const { return log_; }

void Instruments::held(std::string_view ns, std::string_view id, int op, std::string_view owner, std::string_view path,
                       std::chrono::nanoseconds held_for, bool ended, bool* logged) const noexcept {
  if (ended && metrics_) metrics_->observe_hold(op, held_for);
  if (held_for < long_hold_ || (logged && *logged)) return;
  if (logged) *logged = true;
  if (metrics_) metrics_->count_long_hold();
  try {
    const std::string_view op_name = matrix_.ops[static_cast<std::size_t>(op)].name;
    const auto ms = std::chrono::duration_cast<Millis>(held_for).count();
    log(LogLevel::warning,
        fmt::format("lock {} in namespace '{}' held for {} ms (long_hold {} ms): {} by '{}' on {}", log_escape(id),
                    log_escape(ns), ms, long_hold_.count(), op_name, log_escape(owner), log_escape(path)),
        {{"event", "long_hold"},
         {"ns", std::string(ns)},
         {"id", std::string(id)},
         {"op", std::string(op_name)},
         {"owner", std::string(owner)},
         {"path", std::string(path)},
         {"held_ms", std::to_string(ms)}});
  } catch (...) {
  }
}

void Instruments::released(std::string_view ns, std::string_view id, bool ok, bool forced) const noexcept {
  if (metrics_ && ok) forced ? metrics_->count_force_release() : metrics_->count_release();
  observe_lock_call(ObservedCall::Kind::release, ns, id, ok);
}

void Instruments::renewed(std::string_view ns, std::string_view id, bool ok) const noexcept {
  if (metrics_) metrics_->count_renewal(ok);
  observe_lock_call(ObservedCall::Kind::renew, ns, id, ok);
}

void Instruments::observe_lock_call(ObservedCall::Kind kind, std::string_view ns, std::string_view id,
                                    bool ok) const noexcept {
  if (!observer_) return;
  ObservedCall c;
  c.kind = kind;
  c.ns = ns;
  c.id = id;
  c.ok = ok;
  observe(c);
}

std::string HoldTable::key(std::string_view ns, std::string_view id) {
  std::string k;
  k.reserve(ns.size() + 1 + id.size());
  k.append(ns).append(1, '\0').append(id);
  return k;
}

HoldTable::Shard& HoldTable::shard(std::string_view ns, std::string_view id) {
  const std::size_t h = std::hash<std::string_view>{}(id) ^ (std::hash<std::string_view>{}(ns) * 31);
  return shards_[h % shards_.size()];
}

void HoldTable::granted(std::string_view ns, std::string_view id, int op, std::string_view owner,
                        std::string_view path, std::uint32_t holds, Clock::time_point now, Millis lease, Millis ttl) {
  Shard& s = shard(ns, id);
  std::lock_guard guard(s.mutex);
  auto [it, fresh] = s.map.try_emplace(key(ns, id));
  Held& h = it->second;
  if (fresh) {
    h.granted_at = now;
    h.op = op;
    h.owner = owner;
    h.path = path;
  }
  h.holds = holds;
  h.ttl = ttl;
  h.lease_end = std::max(h.lease_end, now + lease);
  if (s.map.size() >= 2 * s.swept_at) {
    std::erase_if(s.map, [&](const auto& kv) { return kv.second.lease_end < now; });
    s.swept_at = std::max<std::size_t>(64, s.map.size());
  }
}

void HoldTable::granted(const LockRequest& request, const ResolvedRequest& resolved, const AcquireResult& out,
                        Clock::time_point now) {
  if (!out.granted() || resolved.targets.empty()) return;
  granted(request.ns, out.grant.id, resolved.op, request.owner, resolved.targets.front().path, out.grant.holds, now,
          out.grant.expires_in, request.ttl);
}

std::optional<HoldTable::Held> HoldTable::released(std::string_view ns, std::string_view id,
                                                   std::uint32_t holds_left) {
  Shard& s = shard(ns, id);
  std::lock_guard guard(s.mutex);
  const auto it = s.map.find(key(ns, id));
  if (it == s.map.end()) return std::nullopt;
  if (holds_left > 0) {
    it->second.holds = holds_left;
    return std::nullopt;
  }
  std::optional<Held> out(std::move(it->second));
  s.map.erase(it);
  return out;
}

void HoldTable::forget_after_fork() noexcept {
  for (Shard& s : shards_) {
    // Each member made anew over the inherited one, which is not destroyed:
    // its destructor could touch memory a parent thread was changing.
    new (&s.mutex) std::mutex();
    new (&s.map) std::unordered_map<std::string, Held>();
    s.swept_at = 64;
  }
}

std::size_t HoldTable::size() {
  std::size_t n = 0;
  for (Shard& s : shards_) {
    std::lock_guard guard(s.mutex);
    n += s.map.size();
  }
  return n;
}

void hold_renewed(HoldTable& holds, const Instruments& instruments, std::string_view ns, std::string_view id,
                  std::optional<Millis> ttl) {
  const Clock::time_point now = steady_clock()->now();
  // Copied under the table's mutex, logged after it: a log sink may call
  // the engine.
  std::optional<HoldTable::Held> long_hold;
  holds.renewed(ns, id, now, ttl, [&](HoldTable::Held& h) {
    if (h.logged || now - h.granted_at < instruments.long_hold()) return;
    h.logged = true;
    long_hold = h;
  });
  if (!long_hold) return;
  bool logged = false;
  instruments.held(ns, id, long_hold->op, long_hold->owner, long_hold->path, now - long_hold->granted_at, false,
                   &logged);
}

void hold_released(HoldTable& holds, const Instruments& instruments, std::string_view ns, std::string_view id,
                   std::uint32_t holds_left) {
  if (std::optional<HoldTable::Held> h = holds.released(ns, id, holds_left))
    instruments.held(ns, id, h->op, h->owner, h->path, steady_clock()->now() - h->granted_at, true, &h->logged);
}

}  // namespace pathlock::core
