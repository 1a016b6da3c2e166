// LockEngine's stoppable acquire for engines that do not stop a wait
// themselves (every backend of this library does; see engine.hpp).
#include <pathlock/engine.hpp>

namespace pathlock {

AcquireResult LockEngine::acquire(const LockRequest& request, std::stop_token stop) {
  AcquireResult out;
  if (stop.stop_requested()) {
    out.outcome = AcquireOutcome::cancelled;
    return out;
  }
  out = acquire(request);
  if (!out.granted() || !stop.stop_requested()) return out;
  // Stopped while the grant was on its way: give it back, never drop it.
  release(request.ns, out.grant.id, out.grant.token);
  AcquireResult cancelled;
  cancelled.outcome = AcquireOutcome::cancelled;
  return cancelled;
}

}  // namespace pathlock
