// LeaseKeeper: two threads, a list of leases, each with two deadlines: when to
// renew next (next_renew_) and when the lease ends if no renewal succeeds
// (expires_at_, the local, conservative view: measured from before the
// renewal call was sent, less a safety margin, 1% of the TTL + 10 ms and at
// most half of it, for the drift of the server's clock against this host's
// and for this thread's own wake-up). The scheduling thread (run) sleeps until the
// earliest of them; it hands a due renewal to the renewing thread
// (renew_loop) and reports a lease lost once its end passes, also while a
// renewal of it is still in flight: a call stalled by a partition may block
// for a connect and a command timeout, and the holder must hear of the loss
// before the server ends the lease, not when the call gives up
// (tests/partition_test.cpp).
//
// A renewal runs without the keeper's mutex (it is a network call on Redis);
// the lease is marked in_flight_ meanwhile, and stop() waits for that flag,
// which is how "never renews after release" holds. A refusal ends the lease
// (expires_at_ set to the past) and the scheduling thread reports it, so
// callbacks only ever run on that thread.
//
// The scheduling thread owns a share of State, so a callback may destroy the
// keeper: the destructor then detaches it (after joining the renewing
// thread), and it finds shutdown set when the callback returns and ends
// without touching the engine again.
#include <pathlock/keeper.hpp>

#include <pathlock/metrics.hpp>

#include "core/process.hpp"
#include "core/request.hpp"

#include <algorithm>

namespace pathlock {

using Clock = std::chrono::steady_clock;

namespace {

// How much earlier than its local end a lease is reported lost (file comment).
Clock::duration safety_margin(Millis ttl) {
  return std::min<Clock::duration>(ttl / 100 + Millis{10}, ttl / 2);
}

}  // namespace

struct LeaseKeeper::State {
  State(LockEngine& e, KeeperOptions o) : engine(e), options(o) {}
  void run();
  void renew_loop();
  void renew(std::unique_lock<std::mutex>& guard, const std::shared_ptr<Lease>& due);
  void lost(std::unique_lock<std::mutex>& guard, const std::shared_ptr<Lease>& due);

  LockEngine& engine;
  KeeperOptions options;
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::shared_ptr<Lease>> leases;
  std::vector<std::shared_ptr<Lease>> to_renew;  // handed to the renewing thread, in_flight_ set
  bool shutdown = false;
  core::ProcessStamp process;
  std::thread renewer;  // joined by ~LeaseKeeper, before the state can go
};

LeaseKeeper::LeaseKeeper(LockEngine& engine, KeeperOptions options)
    : state_(std::make_shared<State>(engine, options)), thread_([s = state_] { s->run(); }) {
  state_->renewer = std::thread([s = state_.get()] { s->renew_loop(); });
}

LeaseKeeper::~LeaseKeeper() {
  if (state_->process.forked()) {
    // The parent's thread is not in this process, and it may have held the
    // mutex at the fork (a copy locked for ever here): touch neither. The
    // thread object is kept (destroying a joinable std::thread terminates
    // the process), and so is the state.
    (void)new std::thread(std::move(thread_));
    (void)new std::shared_ptr<State>(std::move(state_));
    return;
  }
  {
    std::lock_guard guard(state_->mutex);
    state_->shutdown = true;
    for (auto& lease : state_->leases) lease->stopped_ = true;
  }
  state_->changed.notify_all();
  state_->renewer.join();  // callbacks never run on it, so this is another thread
  if (std::this_thread::get_id() == thread_.get_id()) {
    thread_.detach();  // destroyed from a callback: the thread ends by itself
  } else {
    thread_.join();
  }
}

std::shared_ptr<Lease> LeaseKeeper::keep(const std::string& ns, const Grant& grant, Millis ttl,
                                         std::function<void(const Lease&)> on_lost) {
  core::check_ttl(ttl);
  if (state_->process.forked())
    throw BackendError(
        "this LeaseKeeper was created in another process (before a fork) and has no thread here: create a "
        "LeaseKeeper in the process that uses it (docs/design.md#fork)");
  auto lease = std::make_shared<Lease>();
  lease->ns_ = ns;
  lease->id_ = grant.id;
  lease->token_ = grant.token;
  lease->ttl_ = ttl;
  lease->on_lost_ = std::move(on_lost);
  const auto now = Clock::now();
  lease->expires_at_ = now + grant.expires_in - safety_margin(ttl);
  lease->next_renew_ = now + std::chrono::duration_cast<Clock::duration>(ttl * state_->options.renew_after);
  {
    std::lock_guard guard(state_->mutex);
    state_->leases.push_back(lease);
  }
  state_->changed.notify_all();
  return lease;
}

void LeaseKeeper::stop(Lease& lease) {
  State& s = *state_;
  // In a forked child no renewal runs (the thread is the parent's), and the
  // mutex may be a copy locked at the fork: nothing to stop, nothing to touch.
  if (s.process.forked()) return;
  std::unique_lock guard(s.mutex);
  lease.stopped_ = true;
  s.changed.wait(guard, [&] { return !lease.in_flight_; });
  s.leases.erase(std::remove_if(s.leases.begin(), s.leases.end(), [&](const auto& l) { return l.get() == &lease; }),
                 s.leases.end());
}

void LeaseKeeper::State::run() {
  std::unique_lock guard(mutex);
  while (!shutdown) {
    std::shared_ptr<Lease> due;
    Clock::time_point wake = Clock::time_point::max();
    for (const auto& lease : leases) {
      // A lease whose renewal is in flight is due only when it ends.
      const auto at = lease->in_flight_ ? lease->expires_at_ : std::min(lease->next_renew_, lease->expires_at_);
      if (at < wake) {
        wake = at;
        due = lease;
      }
    }
    const auto now = Clock::now();
    if (!due || wake > now) {
      if (due) changed.wait_until(guard, wake);
      else changed.wait(guard);
    } else if (now >= due->expires_at_) {  // the lease ended without a renewal (one may still be in flight)
      lost(guard, due);
    } else {
      due->in_flight_ = true;
      to_renew.push_back(due);
      changed.notify_all();
    }
  }
}

// The renewing thread: one renewal at a time, in the order they fell due.
void LeaseKeeper::State::renew_loop() {
  std::unique_lock guard(mutex);
  while (true) {
    changed.wait(guard, [&] { return shutdown || !to_renew.empty(); });
    if (shutdown) break;
    const std::shared_ptr<Lease> due = to_renew.front();
    to_renew.erase(to_renew.begin());
    renew(guard, due);
  }
  for (const auto& lease : to_renew) lease->in_flight_ = false;  // never sent
  to_renew.clear();
  changed.notify_all();
}

// Renews `due` without the mutex; a refusal ends the lease, which the
// scheduling thread then reports lost.
void LeaseKeeper::State::renew(std::unique_lock<std::mutex>& guard, const std::shared_ptr<Lease>& due) {
  bool renewed = false, failed = false;
  const auto now = Clock::now();
  if (!due->stopped_ && !due->lost()) {
    guard.unlock();
    try {
      renewed = engine.renew(due->ns_, due->id_, due->token_, due->ttl_);
    } catch (const std::exception&) {
      failed = true;  // connection trouble: retry until the lease ends
    }
    guard.lock();
  }
  due->in_flight_ = false;
  changed.notify_all();
  if (due->stopped_ || due->lost()) return;  // stop() removes it; a lost lease is off the list
  if (failed) {
    due->next_renew_ = now + options.retry_interval;
  } else if (renewed) {
    due->expires_at_ = now + due->ttl_ - safety_margin(due->ttl_);
    due->next_renew_ = now + std::chrono::duration_cast<Clock::duration>(due->ttl_ * options.renew_after);
    due->renewals_.fetch_add(1, std::memory_order_relaxed);
  } else {  // refused: expired or force-released
    due->expires_at_ = Clock::time_point::min();
  }
}

// Takes `due` off the list and tells its holder, without the mutex (the
// callback may call stop(), release, or destroy the keeper).
void LeaseKeeper::State::lost(std::unique_lock<std::mutex>& guard, const std::shared_ptr<Lease>& due) {
  leases.erase(std::find(leases.begin(), leases.end(), due));
  due->lost_.store(true, std::memory_order_release);  // a renewal in flight now changes nothing
  guard.unlock();
  if (const std::shared_ptr<Metrics> m = engine.metrics()) m->count_lease_lost();
  if (due->on_lost_) due->on_lost_(*due);
  guard.lock();
}

}  // namespace pathlock
