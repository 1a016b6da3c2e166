#include "support/waiting_probe.hpp"

#include "core/waiting.hpp"

#include <condition_variable>
#include <map>
#include <mutex>
#include <utility>

namespace pathlock::test {

namespace {

class Probe final : public core::WaitObserver {
 public:
  Probe() { core::set_wait_observer(this); }

  void waiting(const LockRequest& request) noexcept override {
    try {
      {
        std::lock_guard guard(mutex_);
        ++counts_[{request.ns, request.owner}];
      }
      changed_.notify_all();
    } catch (...) {  // out of memory: the count is missed, and a test waiting for it fails
    }
  }

  void woken(const LockRequest& request) noexcept override {
    try {
      std::lock_guard guard(mutex_);
      ++woken_[{request.ns, request.owner}];
    } catch (...) {  // out of memory: the count is missed, and a test reading it fails
    }
  }

  int times_woken(const std::string& ns, const std::string& owner) {
    std::lock_guard guard(mutex_);
    return count_in(woken_, ns, owner);
  }

  void granted(const LockRequest& request) noexcept override {
    std::function<void()> action;
    {
      std::lock_guard guard(mutex_);
      const auto it = on_granted_.find({request.ns, request.owner});
      if (it == on_granted_.end()) return;
      action = std::move(it->second);
      on_granted_.erase(it);
    }
    action();
  }

  void when_granted(const std::string& ns, const std::string& owner, std::function<void()> action) {
    std::lock_guard guard(mutex_);
    on_granted_[{ns, owner}] = std::move(action);
  }

  int times(const std::string& ns, const std::string& owner) {
    std::lock_guard guard(mutex_);
    return count(ns, owner);
  }

  bool until(const std::string& ns, const std::string& owner, int times, std::chrono::milliseconds timeout) {
    std::unique_lock guard(mutex_);
    return changed_.wait_for(guard, timeout, [&] { return count(ns, owner) >= times; });
  }

 private:
  using Counts = std::map<std::pair<std::string, std::string>, int>;
  static int count_in(const Counts& counts, const std::string& ns, const std::string& owner) {
    const auto it = counts.find({ns, owner});
    return it == counts.end() ? 0 : it->second;
  }
  int count(const std::string& ns, const std::string& owner) const { return count_in(counts_, ns, owner); }

  std::mutex mutex_;
  std::condition_variable changed_;
  Counts counts_;
  Counts woken_;  // sleeps cut short by a wake-up
  std::map<std::pair<std::string, std::string>, std::function<void()>> on_granted_;
};

// Registered before main() and never destroyed: no waiting thread outlives it.
Probe& probe() {
  static Probe* const instance = new Probe;  // NOLINT(cppcoreguidelines-owning-memory): lives as long as the process
  return *instance;
}
[[maybe_unused]] const bool registered = (probe(), true);

}  // namespace

int times_waited(const std::string& ns, const std::string& owner) { return probe().times(ns, owner); }

int times_woken(const std::string& ns, const std::string& owner) { return probe().times_woken(ns, owner); }

void when_granted(const std::string& ns, const std::string& owner, std::function<void()> action) {
  probe().when_granted(ns, owner, std::move(action));
}

bool until_waiting(const std::string& ns, const std::string& owner, int times, std::chrono::milliseconds timeout) {
  return probe().until(ns, owner, times, timeout);
}

}  // namespace pathlock::test
