#include <pathlock/guard.hpp>

namespace pathlock {

LockGuard::LockGuard(LockEngine& engine, const LockRequest& request, LeaseKeeper* keeper,
                     std::function<void(const Lease&)> on_lost)
    : LockGuard(engine, request, std::stop_token{}, keeper, std::move(on_lost)) {}

LockGuard::LockGuard(LockEngine& engine, const LockRequest& request, std::stop_token stop, LeaseKeeper* keeper,
                     std::function<void(const Lease&)> on_lost)
    : engine_(&engine), keeper_(keeper), ns_(request.ns) {
  const AcquireResult result = engine.acquire(request, std::move(stop));
  if (!result.granted()) {
    conflict_ = result.conflict;
    cancelled_ = result.cancelled();
    return;
  }
  grant_ = result.grant;
  owns_ = true;
  if (!keeper_) return;
  try {
    lease_ = keeper_->keep(ns_, grant_, request.ttl, std::move(on_lost));
  } catch (...) {
    // The constructor throws, so no destructor runs: release here, never
    // leave a lock that no guard owns.
    owns_ = false;
    try {
      engine.release(ns_, grant_.id, grant_.token);
    } catch (...) {
    }
    throw;
  }
}

LockGuard::~LockGuard() {
  if (!owns_) return;
  try {
    release();
  } catch (...) {
    // A destructor must not throw; the lease ends on its own.
  }
}

LockGuard::LockGuard(LockGuard&& other) noexcept
    : engine_(other.engine_),
      keeper_(other.keeper_),
      ns_(std::move(other.ns_)),
      grant_(std::move(other.grant_)),
      conflict_(std::move(other.conflict_)),
      lease_(std::move(other.lease_)),
      owns_(other.owns_),
      cancelled_(other.cancelled_) {
  other.owns_ = false;
}

LockGuard& LockGuard::operator=(LockGuard&& other) noexcept {
  if (this == &other) return *this;
  if (owns_) {
    try {
      release();
    } catch (...) {
    }
  }
  engine_ = other.engine_;
  keeper_ = other.keeper_;
  ns_ = std::move(other.ns_);
  grant_ = std::move(other.grant_);
  conflict_ = std::move(other.conflict_);
  lease_ = std::move(other.lease_);
  owns_ = other.owns_;
  cancelled_ = other.cancelled_;
  other.owns_ = false;
  return *this;
}

void LockGuard::stop_keeping() noexcept {
  if (lease_ && keeper_) keeper_->stop(*lease_);
}

bool LockGuard::release() {
  if (!owns_) return false;
  owns_ = false;
  stop_keeping();  // first: no renewal may follow the release
  return engine_->release(ns_, grant_.id, grant_.token);
}

AcquireResult LockGuard::convert(ConvertRequest request, std::stop_token stop) {
  AcquireResult out;
  if (!owns_) {
    out.outcome = AcquireOutcome::not_holder;
    return out;
  }
  request.ns = ns_;
  request.id = grant_.id;
  request.token = grant_.token;
  out = engine_->convert(request, std::move(stop));
  if (out.granted()) grant_ = out.grant;
  return out;
}

bool LockGuard::renew(std::optional<Millis> ttl) {
  if (!owns_) return false;
  return engine_->renew(ns_, grant_.id, grant_.token, ttl);
}

}  // namespace pathlock
