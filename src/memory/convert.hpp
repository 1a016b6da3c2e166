// Conversion on the embedded backend (LockEngine::convert; docs/design.md#conversion):
// one attempt, under the namespace's mutex. Private to src/memory/.
//
// How an attempt judges a conversion of lock L to request R:
//   1. L's held entries are unlinked, so L is never judged against itself;
//   2. R's targets are checked against the held locks as an acquire's are;
//   3. a fair R is checked against the waiters older than its place (all of
//      them, without one), skipping L's own place and every waiter that L as
//      it is now refuses: such a waiter waits for L anyway, so holding R back
//      for it would make both wait forever (the conversion queue's rule);
//   4. granted: L takes R's operation and targets, a new fence, the lease
//      now + ttl; refused: L's entries are linked again in their place
//      (newest-first order by fence), so L is exactly as it was.
// A refusal by a held lock M whose own conversion waits in line and is
// refused by L as it is now is would_deadlock: the two would wait for each
// other, and the later one (this one: M's is in line already) is answered.
#pragma once

#include "core/request.hpp"
#include "memory/lock_table.hpp"
#include "memory/namespace_state.hpp"

#include <pathlock/clock.hpp>
#include <pathlock/engine.hpp>

namespace pathlock::memory {

// One attempt to convert the lock `request` proves. `me` is the
// conversion's place in line (or null). True when granted (result set);
// else result says why (not_holder, conflicted, would_deadlock) and the lock
// is unchanged. `holder` is set to the lock when it was found (the owner of
// a place the caller takes). Throws InvalidRequest for a lock with more than
// one hold.
bool try_convert(const MatrixTable& matrix, Namespace& ns, NamespaceState& st, core::ResolvedRequest& req,
                 const ConvertRequest& request, const Waiter* me, Clock::time_point now, AcquireResult& result,
                 const Lock*& holder);

}  // namespace pathlock::memory
