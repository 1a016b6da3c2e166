// Conversion on the embedded backend (convert.hpp).
#include "memory/convert.hpp"

#include "memory/reads.hpp"

#include <pathlock/path.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace pathlock::memory {

namespace {

// The live place in line of lock id's waiting conversion, or null.
const Waiter* waiting_conversion(const NamespaceState& st, const std::string& id, Clock::time_point now) {
  for (const Waiter& w : st.waiters)
    if (w.converts == id && w.deadline > now) return &w;
  return nullptr;
}

// `lock` granted `req`: its new operation, targets, fence and lease (its
// old entries are unlinked).
void take(Namespace& ns, NamespaceState& st, Lock& lock, core::ResolvedRequest& req, const ConvertRequest& request,
          Clock::time_point now) {
  lock.fence = ns.next_fence++;
  lock.op = req.op;
  lock.ttl = request.ttl;
  lock.convert_key = request.idempotency_key;
  st.expiry.rearm(lock, now + request.ttl);
  link_targets(st, lock, req);
  ns.notify();  // what the lock no longer covers may let waiters in
}

}  // namespace

bool try_convert(const MatrixTable& matrix, Namespace& ns, NamespaceState& st, core::ResolvedRequest& req,
                 const ConvertRequest& request, const Waiter* me, Clock::time_point now, AcquireResult& result,
                 const Lock*& holder) {
  Lock* lock = st.locks.find(request.id);
  if (!lock || lock->token != request.token) {
    result.outcome = AcquireOutcome::not_holder;
    return false;
  }
  holder = lock;
  // A retry of the conversion that made the lock what it is: unchanged, its
  // lease extended (as an idempotent acquire's).
  if (!request.idempotency_key.empty() && lock->convert_key == request.idempotency_key && same_targets(*lock, req)) {
    if (now + request.ttl > lock->expires_at) st.expiry.rearm(*lock, now + request.ttl);
    result.outcome = AcquireOutcome::granted;
    result.grant = grant_of(*lock, now);
    return true;
  }
  if (lock->holds > 1)
    throw InvalidRequest(fmt::format(
        "lock {} has {} holds: a lock is converted only with one hold (its other holders re-entered it for what it "
        "is); release the others first",
        lock->id, lock->holds));

  for (Entry& e : lock->entries) st.index.unlink(e, kHeld);
  bool refused = false;
  result.outcome = AcquireOutcome::conflicted;
  if (const Entry* hit = held_refusal(matrix, st, req, now, result.conflict)) {
    refused = true;
    const Waiter* other = waiting_conversion(st, hit->lock->id, now);
    // (other converts another lock, so it is passed over only when this lock refuses it)
    if (other && passed_over(matrix, *lock, *other)) result.outcome = AcquireOutcome::would_deadlock;
  } else if (request.fair) {
    const auto skip = [&](const Waiter& w) { return passed_over(matrix, *lock, w); };
    refused = std::any_of(req.targets.begin(), req.targets.end(), [&](const core::ResolvedTarget& t) {
      return find_older_waiter(matrix, st, t, me, now, result.conflict, skip);
    });
  }
  if (refused) {  // exactly as it was: its entries back in their place
    const std::uint64_t fence = lock->fence;
    for (Entry& e : lock->entries)
      st.index.link_behind(e, kHeld, [fence](const Entry& other) { return other.lock && other.lock->fence > fence; });
    return false;
  }
  take(ns, st, *lock, req, request, now);
  result.outcome = AcquireOutcome::granted;
  result.grant = grant_of(*lock, now);
  return true;
}

}  // namespace pathlock::memory
