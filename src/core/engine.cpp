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

namespace pathlock {

std::string_view limit_name(LimitKind kind) noexcept {
  switch (kind) {
    case LimitKind::locks: return "locks";
    case LimitKind::places: return "places";
    case LimitKind::owner_locks: return "owner_locks";
  }
  return "locks";
}

AcquireResult LockEngine::convert(const ConvertRequest&, std::stop_token) {
  throw BackendError("this engine does not convert locks");
}

BlockersPage LockEngine::blockers(const ConvertRequest&, std::size_t) {
  throw BackendError("this engine does not convert locks");
}

ConvertRequest ConvertRequest::of(std::string ns, const Grant& grant, std::string op, std::vector<Target> targets) {
  ConvertRequest r;
  r.ns = std::move(ns);
  r.id = grant.id;
  r.token = grant.token;
  r.op = std::move(op);
  r.targets = std::move(targets);
  return r;
}

void LockEngine::set_default_limits(const Limits&) {
  throw BackendError("this engine does not keep limits per namespace");
}
void LockEngine::set_limits(std::string_view, const std::optional<Limits>&) {
  throw BackendError("this engine does not keep limits per namespace");
}
LimitsStatus LockEngine::limits(std::string_view) {
  throw BackendError("this engine does not keep limits per namespace");
}

}  // namespace pathlock
