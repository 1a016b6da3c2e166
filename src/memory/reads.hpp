// The read side of the embedded backend (reads.cpp): functions of a
// namespace's state and the engine's matrix, called with the namespace's
// mutex held, after reaping (invariant I3 of memory_engine.cpp).
#pragma once

#include "core/request.hpp"
#include "memory/lock_table.hpp"
#include "memory/namespace_state.hpp"
#include "memory/path_index.hpp"

#include <pathlock/clock.hpp>
#include <pathlock/engine.hpp>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace pathlock::memory {

// What is left of a lease or reservation ending at `at` (0 when over).
Millis remaining(Clock::time_point at, Clock::time_point now);
// The relation of a held path to a requested one that overlaps it.
Relation relation_of(std::string_view held, std::string_view requested);
// The held codes that refuse requested code `code`, by relation.
Blockers blockers_of(const MatrixTable& matrix, int code);
// Fills `out` with entry `hit` (a lock's or a waiter's) refusing target `t`.
void describe(const MatrixTable& matrix, const Entry& hit, const core::ResolvedTarget& t, Relation rel,
              Clock::time_point now, Conflict& out);
// The same entry as a Blocker (with fence and holds, or how long it waited).
Blocker blocker_of(const MatrixTable& matrix, const Entry& e, const core::ResolvedTarget& t, Relation rel,
                   Clock::time_point now);
// The first held entry that refuses one of `req`'s targets (in role order),
// with `out` filled; null when none. `probes`, when given, gets a walk of
// each target's path for link() (filled up to the target hit).
const Entry* held_refusal(const MatrixTable& matrix, const NamespaceState& st, const core::ResolvedRequest& req,
                          Clock::time_point now, Conflict& out, PathProbe* probes = nullptr);
// Fairness: is there a waiter older than `me` (all of them if me is null)
// that refuses target t (and that `skip`, when given, does not skip)? Fills
// `out` with it. The index answers "no waiter at all" in O(depth) (me's own
// entries are indexed too, so for a waiter in line that is only a filter);
// a hit scans the line to name the oldest such waiter.
bool find_older_waiter(const MatrixTable& matrix, const NamespaceState& st, const core::ResolvedTarget& t,
                       const Waiter* me, Clock::time_point now, Conflict& out,
                       const std::function<bool(const Waiter&)>& skip = {});
// Does a conversion of `lock` pass over waiter w (convert.hpp): w is its own
// place, or an entry of `lock` as it is now refuses one of w's targets?
bool passed_over(const MatrixTable& matrix, const Lock& lock, const Waiter& w);
// LockEngine::blockers, waiters and list on one namespace's state. For the
// blockers of a conversion of lock `own` (when given): never `own`, nor a
// place the conversion passes over; `fair` false: held locks only.
BlockersPage find_blockers(const MatrixTable& matrix, const NamespaceState& st, const core::ResolvedRequest& req,
                           std::size_t limit, Clock::time_point now, const Lock* own = nullptr, bool fair = true);
std::vector<WaiterInfo> list_waiters(const MatrixTable& matrix, const NamespaceState& st, const std::string& canonical,
                                     std::size_t limit, Clock::time_point now);
std::vector<LockInfo> list_locks(const MatrixTable& matrix, const NamespaceState& st, const std::string& canonical,
                                 Clock::time_point now);

}  // namespace pathlock::memory
