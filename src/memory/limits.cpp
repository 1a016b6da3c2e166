// Limits per namespace in the embedded backend (limits.hpp).
#include "memory/limits.hpp"

#include "core/limits.hpp"

namespace pathlock::memory {

namespace {

std::uint64_t stored(const std::optional<std::uint64_t>& v, std::uint64_t none) { return v ? *v : none; }
std::optional<std::uint64_t> loaded(const std::atomic<std::uint64_t>& v, std::uint64_t none) {
  const std::uint64_t x = v.load(std::memory_order_relaxed);
  return x == none ? std::nullopt : std::optional<std::uint64_t>(x);
}

std::uint64_t live_places(const NamespaceState& st, Clock::time_point now) {
  std::uint64_t n = 0;
  for (const Waiter& w : st.waiters) n += w.deadline > now ? 1 : 0;
  return n;
}

}  // namespace

void DefaultLimits::set(const Limits& limits) noexcept {
  locks_.store(stored(limits.locks, kNone), std::memory_order_relaxed);
  places_.store(stored(limits.places, kNone), std::memory_order_relaxed);
  owner_locks_.store(stored(limits.owner_locks, kNone), std::memory_order_relaxed);
}

Limits DefaultLimits::get() const noexcept {
  return Limits{loaded(locks_, kNone), loaded(places_, kNone), loaded(owner_locks_, kNone)};
}

void count_owner(NamespaceState& st, const std::string& owner, int delta) {
  if (delta > 0) {
    ++st.owners[owner];
    return;
  }
  const auto it = st.owners.find(owner);
  if (it == st.owners.end()) return;
  if (--it->second == 0) st.owners.erase(it);
}

std::optional<AcquireResult> grant_refusal(const Limits& limits, const NamespaceState& st, const std::string& owner) {
  if (limits.locks && st.locks.live() >= *limits.locks)
    return core::over_limit(LimitKind::locks, *limits.locks, st.locks.live());
  if (limits.owner_locks) {
    const auto it = st.owners.find(owner);
    const std::uint64_t mine = it == st.owners.end() ? 0 : it->second;
    if (mine >= *limits.owner_locks) return core::over_limit(LimitKind::owner_locks, *limits.owner_locks, mine);
  }
  return std::nullopt;
}

std::optional<AcquireResult> place_refusal(const Limits& limits, const NamespaceState& st, Clock::time_point now) {
  if (!limits.places) return std::nullopt;
  const std::uint64_t n = live_places(st, now);
  if (n < *limits.places) return std::nullopt;
  return core::over_limit(LimitKind::places, *limits.places, n);
}

LimitsStatus limits_status(const Limits& defaults, const std::optional<Limits>& own, const NamespaceState* st,
                           Clock::time_point now) {
  LimitsStatus out;
  out.defaults = defaults;
  out.overrides = own;
  out.effective = own ? *own : defaults;
  if (!st) return out;
  out.locks = st->locks.live();
  out.places = live_places(*st, now);
  for (const auto& [owner, n] : st->owners) {
    if (n > out.owner_locks || (n == out.owner_locks && owner < out.owner)) {
      out.owner_locks = n;
      out.owner = owner;
    }
  }
  return out;
}

}  // namespace pathlock::memory
