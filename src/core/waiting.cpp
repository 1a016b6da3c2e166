// The waiting policy; see waiting.hpp.
#include "core/waiting.hpp"

#include <algorithm>
#include <atomic>

namespace pathlock::core {

namespace {
std::atomic<WaitObserver*> wait_observer{nullptr};  // the test hook; see waiting.hpp
}  // namespace

void set_wait_observer(WaitObserver* observer) noexcept { wait_observer.store(observer, std::memory_order_release); }

AcquireResult wait_for_grant(const LockRequest& request, const Clock& clock, WaitingAttempts& backend) {
  // No wait: the one attempt is the last, with no place in line (the loop
  // below would decide the same after reading the clock twice). A reentry
  // never waits: its lock is there or it is not.
  if (request.wait <= Millis{0} || !request.reenter_id.empty()) return backend.attempt(Millis{0});
  const Clock::time_point deadline = clock.now() + request.wait;
  const bool in_line = request.fair;
  bool listening = false;
  try {
    while (true) {
      const Millis left = std::chrono::ceil<Millis>(deadline - clock.now());
      const bool last = left <= Millis{0};  // a refusal now is the answer
      // The reservation outlasts the deadline by one re-check period, so the
      // last attempt (made at the deadline) still finds its own place and is
      // judged as the oldest of its peers, not as a newcomer.
      const Millis reserve = last || !in_line ? Millis{0} : std::min(left + kRecheck, kMaxReservation);
      AcquireResult out = backend.attempt(reserve);
      if (out.granted || out.not_holder || last) return out;
      if (!listening) {
        listening = true;
        if (backend.listen()) continue;
      }
      if (WaitObserver* observer = wait_observer.load(std::memory_order_acquire)) observer->waiting(request);
      const Clock::time_point now = clock.now();
      backend.sleep_until(std::min({deadline, now + kRecheck, now + out.conflict.expires_in + Millis{1}}));
    }
  } catch (...) {
    if (in_line) backend.leave();
    throw;
  }
}

}  // namespace pathlock::core
