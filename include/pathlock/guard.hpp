// pathlock/guard.hpp: a move-only owner of one lock, in the spirit of
// std::unique_lock.
//
//   pathlock::LockGuard guard(*engine, request);          // acquires (may wait)
//   if (!guard.owns_lock()) return busy(guard.conflict());
//   do_work(guard.grant().fence);
//   // the destructor releases; it never throws
//
// With a LeaseKeeper, the guard's lease is renewed while the guard owns the
// lock; check lost() (or pass a callback) before committing work.
//
// Thread safety: one guard is used by one thread at a time, like any value.
// release() may be called from the keeper's on_lost callback of the guard's
// own lease (it does not wait for the keeper).
#pragma once

#include <pathlock/engine.hpp>
#include <pathlock/keeper.hpp>

#include <memory>

namespace pathlock {

class LockGuard {
 public:
  LockGuard() = default;
  // Acquires `request` from `engine` (which must outlive the guard). If
  // `keeper` is given, the lease is kept alive until release; `on_lost` is
  // called if it is lost anyway. Throws what LockEngine::acquire throws.
  LockGuard(LockEngine& engine, const LockRequest& request, LeaseKeeper* keeper = nullptr,
            std::function<void(const Lease&)> on_lost = {});
  // The same, stoppable: a stop during the wait leaves the guard owning
  // nothing with cancelled() set (LockEngine::acquire(request, stop)).
  LockGuard(LockEngine& engine, const LockRequest& request, std::stop_token stop, LeaseKeeper* keeper = nullptr,
            std::function<void(const Lease&)> on_lost = {});
  ~LockGuard();

  LockGuard(LockGuard&& other) noexcept;
  LockGuard& operator=(LockGuard&& other) noexcept;
  LockGuard(const LockGuard&) = delete;
  LockGuard& operator=(const LockGuard&) = delete;

  // True while the guard holds its lock (granted and not yet released).
  bool owns_lock() const noexcept { return owns_; }
  explicit operator bool() const noexcept { return owns_; }

  // The grant; meaningful while owns_lock().
  const Grant& grant() const noexcept { return grant_; }
  // The conflict that refused the request; meaningful when the acquisition
  // was refused.
  const Conflict& conflict() const noexcept { return conflict_; }
  // True when the acquisition was stopped by the caller's stop token.
  bool cancelled() const noexcept { return cancelled_; }
  // True if the keeper found the lease lost (always false without a keeper).
  bool lost() const noexcept { return lease_ && lease_->lost(); }

  // Releases the lock (one hold). Returns the engine's answer; false if the
  // guard owned nothing. Afterwards owns_lock() is false. May throw
  // BackendError; the guard then no longer claims the lock.
  bool release();
  // Renews the lease (the lock's TTL when ttl is empty). Returns false if the
  // guard owns nothing or the engine refused (the lease was lost).
  bool renew(std::optional<Millis> ttl = std::nullopt);
  // Converts the guard's lock (LockEngine::convert, added in 1.1): `request`'s
  // ns, id and token are the guard's. Granted: grant() is the lock's new
  // state (same id and token, the new fence) and a keeper goes on keeping
  // it. Anything else leaves the guard and its lock as they were. Returns
  // the engine's answer (not_holder when the guard owns nothing); throws
  // what LockEngine::convert throws.
  AcquireResult convert(ConvertRequest request, std::stop_token stop = {});

 private:
  void stop_keeping() noexcept;

  LockEngine* engine_ = nullptr;
  LeaseKeeper* keeper_ = nullptr;
  std::string ns_;
  Grant grant_;
  Conflict conflict_;
  std::shared_ptr<Lease> lease_;
  bool owns_ = false;
  bool cancelled_ = false;
};

}  // namespace pathlock
