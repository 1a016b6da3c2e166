// LeaseKeeper: one thread, a list of leases, each with two deadlines: when to
// renew next (next_renew_) and when the lease ends if no renewal succeeds
// (expires_at_, the local, conservative view: measured from before the
// renewal call was sent). The thread sleeps until the earliest of them.
//
// A renewal runs without the keeper's mutex (it is a network call on Redis);
// the lease is marked in_flight_ meanwhile, and stop() waits for that flag,
// which is how "never renews after release" holds.
#include <pathlock/keeper.hpp>

#include <pathlock/metrics.hpp>

#include "core/request.hpp"

#include <algorithm>

namespace pathlock {

using Clock = std::chrono::steady_clock;

LeaseKeeper::LeaseKeeper(LockEngine& engine, KeeperOptions options)
    : engine_(engine), options_(options), thread_([this] { run(); }) {}

LeaseKeeper::~LeaseKeeper() {
  {
    std::lock_guard guard(mutex_);
    shutdown_ = true;
    for (auto& lease : leases_) lease->stopped_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

std::shared_ptr<Lease> LeaseKeeper::keep(const std::string& ns, const Grant& grant, Millis ttl,
                                         std::function<void(const Lease&)> on_lost) {
  core::check_ttl(ttl);
  auto lease = std::make_shared<Lease>();
  lease->ns_ = ns;
  lease->id_ = grant.id;
  lease->token_ = grant.token;
  lease->ttl_ = ttl;
  lease->on_lost_ = std::move(on_lost);
  const auto now = Clock::now();
  lease->expires_at_ = now + grant.expires_in;
  lease->next_renew_ = now + std::chrono::duration_cast<Clock::duration>(ttl * options_.renew_after);
  {
    std::lock_guard guard(mutex_);
    leases_.push_back(lease);
  }
  changed_.notify_all();
  return lease;
}

void LeaseKeeper::stop(Lease& lease) {
  std::unique_lock guard(mutex_);
  lease.stopped_ = true;
  changed_.wait(guard, [&] { return !lease.in_flight_; });
  leases_.erase(std::remove_if(leases_.begin(), leases_.end(), [&](const auto& l) { return l.get() == &lease; }),
                leases_.end());
}

void LeaseKeeper::run() {
  std::unique_lock guard(mutex_);
  while (!shutdown_) {
    std::shared_ptr<Lease> due;
    Clock::time_point wake = Clock::time_point::max();
    for (const auto& lease : leases_) {
      const auto at = std::min(lease->next_renew_, lease->expires_at_);
      if (at < wake) {
        wake = at;
        due = lease;
      }
    }
    const auto now = Clock::now();
    if (!due || wake > now) {
      if (due) changed_.wait_until(guard, wake);
      else changed_.wait(guard);
      continue;
    }
    if (now >= due->expires_at_) {  // the lease ended without a renewal
      leases_.erase(std::find(leases_.begin(), leases_.end(), due));
      guard.unlock();
      mark_lost(*due);
      guard.lock();
      continue;
    }
    due->in_flight_ = true;
    guard.unlock();
    bool renewed = false, failed = false;
    try {
      renewed = engine_.renew(due->ns_, due->id_, due->token_, due->ttl_);
    } catch (const std::exception&) {
      failed = true;  // connection trouble: retry until the lease ends
    }
    guard.lock();
    due->in_flight_ = false;
    changed_.notify_all();
    if (due->stopped_) continue;  // stop() removes it
    if (failed) {
      due->next_renew_ = now + options_.retry_interval;
    } else if (renewed) {
      due->expires_at_ = now + due->ttl_;
      due->next_renew_ = now + std::chrono::duration_cast<Clock::duration>(due->ttl_ * options_.renew_after);
      due->renewals_.fetch_add(1, std::memory_order_relaxed);
    } else {  // refused: expired or force-released
      leases_.erase(std::find(leases_.begin(), leases_.end(), due));
      guard.unlock();
      mark_lost(*due);
      guard.lock();
    }
  }
}

void LeaseKeeper::mark_lost(Lease& lease) {
  lease.lost_.store(true, std::memory_order_release);
  if (const std::shared_ptr<Metrics> m = engine_.metrics()) m->count_lease_lost();
  if (lease.on_lost_) lease.on_lost_(lease);
}

}  // namespace pathlock
