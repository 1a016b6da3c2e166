// The waiting policy; see waiting.hpp.
#include "core/waiting.hpp"

#include "core/request.hpp"  // log_escape

#include <pathlock/path.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <optional>

namespace pathlock::core {

void release_quietly(LockEngine& engine, std::string_view ns, const Grant& grant) noexcept {
  try {
    engine.release(ns, grant.id, grant.token);
  } catch (...) {
  }
}

namespace {

std::atomic<WaitObserver*> wait_observer{nullptr};  // the test hook; see waiting.hpp

// What the counting side of an acquire needs from its attempts: set by the
// policy loop, read once the call ends.
std::size_t refusal_kind(const Conflict& c) {
  return c.queued ? kRefusalQueued : static_cast<std::size_t>(c.relation);
}

// Work in progress is counted while it happens, not when the call ends: the
// first refusal of a waiting call at once (the heat map shows a request
// stuck now), and the call as waiting (pathlock_waiting_requests and the
// oldest wait's age) from its first refusal to its answer.
struct Trace {
  const Instruments* in = nullptr;
  const LockRequest* request = nullptr;
  int op = -1;
  Clock::time_point start{};
  std::optional<Conflict> first;  // the first refusal, when there was one before the answer
  bool long_logged = false;
  std::optional<std::chrono::steady_clock::time_point> waiting_since;  // counted as waiting since

  Trace() = default;
  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;
  ~Trace() {
    if (waiting_since)
      if (Metrics* m = in->metrics()) m->wait_ended(op, *waiting_since);
  }

  void count_first(const Conflict& c) {
    first = c;
    if (Metrics* m = in->metrics()) m->count_refusal(op, in->matrix().op_index(c.op), refusal_kind(c));
  }

  void refused(const Conflict& c, Clock::time_point now) {
    if (!first) {
      count_first(c);
      if (Metrics* m = in->metrics()) {
        waiting_since = std::chrono::steady_clock::now();
        m->wait_began(op, *waiting_since);
      }
    }
    if (long_logged || now - start < in->long_wait()) return;
    long_logged = true;
    const auto waited = std::chrono::duration_cast<Millis>(now - start).count();
    if (Metrics* m = in->metrics()) m->count_long_wait();
    try {
      in->log(LogLevel::warning,
              fmt::format("{} by '{}' on {} in namespace '{}' has waited {} ms (long_wait {} ms): {} by {} '{}' on {} "
                          "({}{})",
                          request->op, log_escape(request->owner), log_escape(c.requested_path), request->ns, waited,
                          in->long_wait().count(), c.queued ? "waiting" : "held", c.op, log_escape(c.owner),
                          log_escape(c.path),
                          relation_name(c.relation), c.queued ? ", queued" : ""),
              {{"event", "long_wait"},
               {"ns", request->ns},
               {"op", request->op},
               {"owner", request->owner},
               {"path", c.requested_path},
               {"waited_ms", std::to_string(waited)},
               {"holder_id", c.id},
               {"holder_op", c.op},
               {"holder_owner", c.owner},
               {"holder_path", c.path},
               {"relation", std::string(relation_name(c.relation))},
               {"queued", c.queued ? "true" : "false"}});
    } catch (...) {
    }
  }
};

AcquireResult cancelled_result(std::optional<Conflict> last) {
  AcquireResult out;
  out.outcome = AcquireOutcome::cancelled;
  if (last) out.conflict = std::move(*last);
  return out;
}

// A granted attempt of a stoppable call: the grant goes back when the stop
// came first (before the call could return it).
bool stopped_after_grant(const LockRequest& request, WaitingAttempts& backend, AcquireResult& out,
                         const std::stop_token& stop) {
  if (!out.granted() || !stop.stop_possible() || backend.keeps_grant_on_stop()) return false;
  if (WaitObserver* observer = wait_observer.load(std::memory_order_acquire)) observer->granted(request);
  if (!stop.stop_requested()) return false;
  backend.give_back(out.grant);
  out = cancelled_result(std::nullopt);
  return true;
}

// The loop of a waiting request: attempt, listen, sleep, until granted,
// refused at the deadline, or stopped.
AcquireResult wait_loop(const LockRequest& request, const Clock& clock, WaitingAttempts& backend, Trace* trace,
                        const std::stop_token& stop) {
  const Clock::time_point deadline = clock.now() + request.wait;
  if (trace) trace->start = deadline - request.wait;
  const bool in_line = request.fair;
  bool listening = false;
  std::optional<Conflict> last;
  while (true) {
    if (stop.stop_requested()) {
      if (in_line) backend.leave();
      return cancelled_result(std::move(last));
    }
    const Millis left = std::chrono::ceil<Millis>(deadline - clock.now());
    const bool final_attempt = left <= Millis{0};  // a refusal now is the answer
    // The reservation outlasts the deadline (reservation()), so the last
    // attempt still finds its own place and is judged as the oldest of its
    // peers, not as a newcomer.
    const Millis reserve = in_line ? reservation(left) : Millis{0};
    AcquireResult out = backend.attempt(reserve);
    if (out.conflicted() && trace) trace->refused(out.conflict, clock.now());
    if (stopped_after_grant(request, backend, out, stop)) return out;
    // A limit is no lock that ends: the request is answered at once.
    if (!out.conflicted() || final_attempt) return out;
    last = out.conflict;
    if (!listening) {
      listening = true;
      if (backend.listen()) continue;
    }
    if (WaitObserver* observer = wait_observer.load(std::memory_order_acquire)) observer->waiting(request);
    if (stop.stop_requested()) continue;  // leave at the top of the loop
    const Clock::time_point now = clock.now();
    const Clock::time_point until = std::min({deadline, now + kRecheck, now + out.conflict.expires_in + kWakeMargin});
    backend.sleep_until(until);
    if (WaitObserver* observer = wait_observer.load(std::memory_order_acquire); observer && clock.now() < until)
      observer->woken(request);
  }
}

AcquireResult policy(const LockRequest& request, const Clock& clock, WaitingAttempts& backend, Trace* trace,
                     const std::stop_token& stop) {
  if (stop.stop_requested()) return cancelled_result(std::nullopt);
  // No wait: the one attempt is the last, with no place in line (the loop
  // would decide the same after reading the clock twice). A reentry never
  // waits: its lock is there or it is not.
  if (request.wait <= Millis{0} || !request.reenter_id.empty()) {
    AcquireResult out = backend.attempt(Millis{0});
    stopped_after_grant(request, backend, out, stop);
    return out;
  }
  // A stop from another thread cuts the current (or next) sleep short.
  std::optional<std::stop_callback<std::function<void()>>> on_stop;
  if (stop.stop_possible()) on_stop.emplace(stop, [&backend] { backend.interrupt(); });
  try {
    return wait_loop(request, clock, backend, trace, stop);
  } catch (...) {
    if (request.fair) backend.leave();
    throw;
  }
}

// One attempt without waiting, counted: the hot path, no clock read. One
// named result returned from one place, so it is built in place (NRVO): a
// move of AcquireResult (nine strings) here cost the embedded backend about
// 5% of its pairs/s (pathlock-metrics-bench).
AcquireResult counted_attempt(WaitingAttempts& backend, Metrics& m, const MatrixTable& matrix, int op) {
  struct OnThrow {  // an exception counts as an error
    Metrics& m;
    int op;
    bool armed = true;
    ~OnThrow() {
      if (armed) m.count_acquire(op, Outcome::error);
    }
  } on_throw{m, op};
  AcquireResult out = backend.attempt(Millis{0});
  on_throw.armed = false;
  m.count_acquire(op, out.granted() ? Outcome::granted : Outcome::refused);
  // (A reentry without a live lock to prove, not_holder, names no lock; nor
  // does a refusal by a limit.)
  if (out.conflicted()) m.count_refusal(op, matrix.op_index(out.conflict.op), refusal_kind(out.conflict));
  if (out.over_limit()) m.count_limit_refusal(out.limit.limit);
  return out;
}

// Any acquire, counted and observed, with the long-wait log.
AcquireResult traced(const LockRequest& request, const Clock& clock, WaitingAttempts& backend,
                     const Instruments& instruments, int op, const std::stop_token& stop) {
  Metrics* m = instruments.metrics();
  Trace trace;
  trace.in = &instruments;
  trace.request = &request;
  trace.op = op;
  const bool waits = request.wait > Millis{0};
  ObservedCall call;
  call.ns = request.ns;
  call.op = request.op;
  call.owner = request.owner;
  struct OnThrow {  // an exception: counted as an error and observed
    Metrics* m;
    int op;
    const Instruments& in;
    ObservedCall& call;
    Trace& trace;
    bool armed = true;
    ~OnThrow() {
      if (!armed) return;
      if (m) m->count_acquire(op, Outcome::error);
      call.outcome = Outcome::error;
      if (trace.first) call.refused_by = &*trace.first;
      in.observe(call);
    }
  } on_throw{m, op, instruments, call, trace};
  AcquireResult out = policy(request, clock, backend, &trace, stop);
  on_throw.armed = false;
  if (out.conflicted() && !trace.first) trace.count_first(out.conflict);
  if (m && out.over_limit()) m->count_limit_refusal(out.limit.limit);
  call.outcome = out.granted()     ? (trace.first ? Outcome::waited_then_granted : Outcome::granted)
                 : out.cancelled() ? Outcome::cancelled
                 : (waits && !out.over_limit()) ? Outcome::timed_out
                                                : Outcome::refused;
  if (waits && trace.first) {
    const auto waited = clock.now() - trace.start;
    call.waited = std::chrono::duration_cast<Millis>(waited);
    if (m) m->observe_wait(op, waited);
  }
  if (m) m->count_acquire(op, call.outcome);
  if (out.granted()) call.id = out.grant.id;
  if (trace.first) call.refused_by = &*trace.first;
  instruments.observe(call);
  return out;
}

}  // namespace

bool wake_concerns(const std::vector<std::string>& payloads, const ResolvedRequest& req) {
  for (const std::string& payload : payloads) {
    if (payload.empty()) return true;
    for (std::size_t at = 0; at <= payload.size();) {
      const std::size_t end = std::min(payload.find('\n', at), payload.size());
      for (const ResolvedTarget& t : req.targets)
        if (paths_overlap(std::string_view(payload).substr(at, end - at), t.path)) return true;
      at = end + 1;
    }
  }
  return false;
}

void set_wait_observer(WaitObserver* observer) noexcept { wait_observer.store(observer, std::memory_order_release); }

// Only prvalue returns: each path's result is built in the caller's object.
AcquireResult wait_for_grant(const LockRequest& request, const Clock& clock, WaitingAttempts& backend,
                             const Instruments* instruments, int op, std::stop_token stop) {
  if (!instruments) return policy(request, clock, backend, nullptr, stop);
  Metrics* m = instruments->metrics();
  if (request.wait <= Millis{0} && !instruments->has_observer() && !stop.stop_possible())
    return m ? counted_attempt(backend, *m, instruments->matrix(), op) : backend.attempt(Millis{0});
  return traced(request, clock, backend, *instruments, op, stop);
}

}  // namespace pathlock::core
