// pathlock/keeper.hpp: keeps held leases alive while their work runs.
//
// A LeaseKeeper owns two background threads that renew every lease it keeps
// when a fraction of its TTL is left (by default after a third of the TTL),
// and tell the holder as soon as a lease is lost: when a renewal is refused
// (the lock expired or was force-released) or when the lease's end passes
// without a successful renewal (renewals failing or stalled: the end is
// reported on time even while a renewal call hangs, e.g. in a network
// partition). The end is the keeper's conservative view: from before the
// last successful renewal was sent, less 1% of the TTL + 10 ms (at most
// half the TTL), so the holder hears of the loss before the server ends
// the lease. It then sets the Lease's lost() flag and calls its callback
// once, on the keeper's scheduling thread (renewal calls run on the other).
//
// Thread safety: all methods may be called from any thread. Callbacks run on
// the keeper's thread without its mutex held, and should return quickly
// (other leases wait while they run). A callback may call back: stop() on
// any lease, the engine's release() (a LockGuard's release()), and even
// destroy the keeper (the destructor then lets the thread end on its own
// instead of joining itself).
// The keeper must outlive every Lease and LockGuard that uses it.
//
// Fork: a keeper made before fork() has no thread in the child. There,
// keep() throws BackendError; stop() and the destructor touch neither the
// parent's thread nor the keeper's mutex, which that thread may have held
// at the fork (docs/design.md#fork).
//
// Guarantee: once stop(lease) returns, the keeper never renews that lease
// again; a renewal in flight when stop() is called is waited for. Stop before
// you release, and a released lock is never renewed (LockGuard does this).
//
// Metrics: a lost lease counts in the engine's metrics (LockEngine::metrics(),
// pathlock_leases_lost_total); renewals count in the engine's renew.
#pragma once

#include <pathlock/engine.hpp>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace pathlock {

struct KeeperOptions {
  // Renew when this fraction of the TTL has passed since the last renewal.
  double renew_after = 1.0 / 3.0;
  // After a failed renewal (BackendError), try again this much later.
  Millis retry_interval{100};
};

// One kept lease. Shared between the keeper and the holder.
class Lease {
 public:
  const std::string& ns() const { return ns_; }
  const std::string& id() const { return id_; }
  // True once the lease is known lost; never goes back to false.
  bool lost() const { return lost_.load(std::memory_order_acquire); }
  // Number of successful renewals so far.
  std::uint64_t renewals() const { return renewals_.load(std::memory_order_relaxed); }

 private:
  friend class LeaseKeeper;
  std::string ns_, id_, token_;
  Millis ttl_{0};
  std::function<void(const Lease&)> on_lost_;
  std::chrono::steady_clock::time_point expires_at_;  // local view of the lease end
  std::chrono::steady_clock::time_point next_renew_;
  bool stopped_ = false;   // guarded by the keeper's mutex
  bool in_flight_ = false;  // guarded by the keeper's mutex
  std::atomic<bool> lost_{false};
  std::atomic<std::uint64_t> renewals_{0};
};

class LeaseKeeper {
 public:
  // `engine` must outlive the keeper.
  explicit LeaseKeeper(LockEngine& engine, KeeperOptions options = {});
  // Stops every lease and joins the thread.
  ~LeaseKeeper();
  LeaseKeeper(const LeaseKeeper&) = delete;
  LeaseKeeper& operator=(const LeaseKeeper&) = delete;

  // Starts keeping the lease of `grant` (TTL `ttl`) in namespace `ns` alive.
  // `on_lost` (optional) is called once, on the keeper's thread, when the
  // lease is lost. Throws InvalidRequest for a bad TTL.
  std::shared_ptr<Lease> keep(const std::string& ns, const Grant& grant, Millis ttl,
                              std::function<void(const Lease&)> on_lost = {});

  // Stops renewing `lease`; waits for a renewal of it that is in flight.
  // Safe to call twice and from on_lost callbacks of other leases.
  void stop(Lease& lease);

 private:
  struct State;  // what the thread uses; shared, so the keeper may go first
  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace pathlock
