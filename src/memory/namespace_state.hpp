// One namespace of the embedded backend: a fixed part that lives as long as
// the engine (mutex, condition variable, the fence and waiter counters) and a
// NamespaceState that exists only while the namespace is in use (the path
// index, the lock slab, the expiry wheel, the line of waiters).
//
// The registry's sweep (namespace_registry.hpp) calls trim_if_idle(), which
// frees the state of a namespace with no lock and no waiter, and only when no
// acquire came since its previous visit either (a second chance): a
// namespace in use is idle between each release and the next acquire, and
// freeing it there would rebuild its state every few calls. The fixed part
// keeps the fence counter, so fences never restart.
//
// Locking: `mutex` guards everything here; the caller holds it for every
// member but trim_if_idle(), which only try-locks.
#pragma once

#include "memory/expiry_wheel.hpp"
#include "memory/lock_table.hpp"
#include "memory/namespace_registry.hpp"
#include "memory/path_index.hpp"

#include "core/request.hpp"

#include <pathlock/clock.hpp>
#include <pathlock/engine.hpp>

#include <condition_variable>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace pathlock::memory {

struct NamespaceState {
  PathIndex index;
  LockTable locks;
  ExpiryWheel expiry;
  std::list<Waiter> waiters;  // oldest first
  std::unordered_map<std::string, Lock*> idempotent;  // idempotency key -> its live lock
  std::unordered_map<std::string, std::uint64_t> owners;  // owner -> its live locks (limits.hpp)

  explicit NamespaceState(Clock::time_point now) : expiry(now) {}
  bool idle() const { return locks.live() == 0 && waiters.empty(); }
};

struct Namespace final {
  std::mutex mutex;
  std::condition_variable changed;  // notified when a lock or a waiter goes
  std::uint64_t generation = 0;     // counts those notifications
  std::uint64_t next_fence = 1;
  std::uint64_t next_waiter = 1;
  std::unique_ptr<NamespaceState> state;  // null: trimmed (or never used)
  bool acquired_since_visit = false;      // an acquire came since the sweep's last visit
  std::uint64_t trims = 0;                // states freed so far (stats)
  std::optional<Limits> limits;           // its own limits (set_limits), else the engine's default

  bool trim_if_idle();
  // The state, made when there is none. Call with `mutex` held; an acquire
  // also sets acquired_since_visit.
  NamespaceState& use(Clock::time_point now);
  // A lock or a waiter went: wake the waiters, which may now get in.
  void notify();
};

// A new place at the back of the line of `ns` for `req` (of `owner`),
// reserved until `deadline`; and the place taken out again (waking the
// younger waiters, which may go now). Call with ns.mutex held.
Waiter* enqueue(Namespace& ns, NamespaceState& st, const core::ResolvedRequest& req, const std::string& owner,
                Clock::time_point now, Clock::time_point deadline);
void dequeue(Namespace& ns, NamespaceState& st, Waiter& w);

// Gives `lock` the targets of `req` (moving its paths) and links them, held;
// `probes`, when given, are walks of those paths (PathIndex::link). The
// lock's entries must be unlinked.
void link_targets(NamespaceState& st, Lock& lock, core::ResolvedRequest& req, const PathProbe* probes = nullptr);
// Does `lock` have the operation and the (canonical) targets of `req`?
bool same_targets(const Lock& lock, const core::ResolvedRequest& req);
// `lock` as a grant: its lease left at `now`.
Grant grant_of(const Lock& lock, Clock::time_point now);

}  // namespace pathlock::memory
