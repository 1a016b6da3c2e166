// Limits per namespace in the embedded backend (engine.hpp: Limits,
// LockEngine::set_limits): the engine-wide default, read by every attempt
// without a lock, and the checks an attempt makes under its namespace's
// mutex. A namespace's own limits live in its fixed part (Namespace::limits),
// its owners' counts in its state (NamespaceState::owners).
#pragma once

#include "memory/namespace_state.hpp"

#include <pathlock/engine.hpp>

#include <atomic>
#include <optional>

namespace pathlock::memory {

// The default limits: three atomics (a reader may see an update half done,
// which is one of the two settings field by field: harmless).
class DefaultLimits {
 public:
  void set(const Limits& limits) noexcept;
  Limits get() const noexcept;

 private:
  static constexpr std::uint64_t kNone = ~std::uint64_t{0};
  std::atomic<std::uint64_t> locks_{kNone}, places_{kNone}, owner_locks_{kNone};
};

// One more (+1) or one less (-1) live lock of `owner` in `st`.
void count_owner(NamespaceState& st, const std::string& owner, int delta);

// Would a new lock of `owner` take `st` over `limits`? The refusal, or
// nullopt. (Reaping ran first: every lock in `st` is live.)
std::optional<AcquireResult> grant_refusal(const Limits& limits, const NamespaceState& st, const std::string& owner);
// Would a new place in line take `st` over `limits`? Places whose
// reservation ended by `now` are not counted.
std::optional<AcquireResult> place_refusal(const Limits& limits, const NamespaceState& st, Clock::time_point now);

// LockEngine::limits() of a namespace (`st` null: nothing held).
LimitsStatus limits_status(const Limits& defaults, const std::optional<Limits>& own, const NamespaceState* st,
                           Clock::time_point now);

}  // namespace pathlock::memory
