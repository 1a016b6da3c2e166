// The embedded backend: LockEngine over a per-namespace path index.
// Structure, data layout, invariants, waiting and locking: src/memory/README.md.
#include "memory/memory_engine.hpp"

#include "memory/convert.hpp"
#include "memory/expiry_wheel.hpp"
#include "memory/hold_report.hpp"
#include "memory/limits.hpp"
#include "memory/lock_table.hpp"
#include "memory/namespace_registry.hpp"
#include "memory/namespace_state.hpp"
#include "memory/path_index.hpp"
#include "memory/reads.hpp"

#include "core/backend_engine.hpp"
#include "core/limits.hpp"
#include "core/observe.hpp"
#include "core/process.hpp"
#include "core/request.hpp"
#include "core/waiting.hpp"

#include <pathlock/memory.hpp>
#include <pathlock/path.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <mutex>
#include <utility>

namespace pathlock::memory {

class MemoryEngine final : public core::BackendEngine {
 public:
  MemoryEngine(const MatrixTable& matrix, std::shared_ptr<const Clock> clock, const ObserveOptions& observe)
      : BackendEngine(matrix, observe), clock_(std::move(clock)) {}

 private:
  AcquireResult do_acquire(const LockRequest& request, core::ResolvedRequest& req, std::stop_token stop) override {
    check_process();
    registry_.note_call();
    Attempts attempts(*this, registry_.get(request.ns), req, request);
    return core::wait_for_grant(request, *clock_, attempts, &instruments_, req.op, std::move(stop));
  }

  // A conversion waits as an acquire does (uncounted: metrics count acquires).
  AcquireResult do_convert(const ConvertRequest& request, core::ResolvedRequest& req, std::stop_token stop) override {
    check_process();
    registry_.note_call();
    const LockRequest as = core::as_lock_request(request);
    Attempts attempts(*this, registry_.get(request.ns), req, as, &request);
    return core::wait_for_grant(as, *clock_, attempts, nullptr, req.op, std::move(stop));
  }

  bool do_release(std::string_view ns_name, std::string_view id, std::string_view token) override {
    check_process();
    std::optional<HoldReport> hold;
    const bool ok =
        with_lock(ns_name, id, &token, [&](Namespace& ns, NamespaceState& st, Lock& lock, Clock::time_point now) {
          const bool last = --lock.holds == 0;
          hold = hold_report(lock, now, last, instruments_.long_hold());
          if (last) {
            remove(st, lock);
            ns.notify();
          }
        });
    report(instruments_, ns_name, hold);
    return ok;
  }

  bool do_renew(std::string_view ns_name, std::string_view id, std::string_view token,
                std::optional<Millis> ttl) override {
    check_process();
    std::optional<HoldReport> hold;
    const bool ok =
        with_lock(ns_name, id, &token, [&](Namespace&, NamespaceState& st, Lock& lock, Clock::time_point now) {
          if (ttl) lock.ttl = *ttl;
          extend(st, lock, now + lock.ttl);
          hold = hold_report(lock, now, false, instruments_.long_hold());
        });
    report(instruments_, ns_name, hold);
    return ok;
  }

  bool do_is_held(std::string_view ns_name, std::string_view id, std::string_view token) override {
    check_process();
    return with_lock(ns_name, id, &token, [](Namespace&, NamespaceState&, Lock&, Clock::time_point) {});
  }

  BlockersPage do_blockers(std::string_view ns_name, const core::ResolvedRequest& req, std::size_t limit) override {
    check_process();
    return read_state<BlockersPage>(ns_name, [&](NamespaceState& st, Clock::time_point now) {
      return find_blockers(matrix_, st, req, limit, now);
    });
  }

  BlockersPage do_conversion_blockers(const ConvertRequest& request, const core::ResolvedRequest& req,
                                      std::size_t limit) override {
    check_process();
    return read_state<BlockersPage>(request.ns, [&](NamespaceState& st, Clock::time_point now) {
      return find_blockers(matrix_, st, req, limit, now, st.locks.find(request.id), request.fair);
    });
  }

  std::vector<WaiterInfo> do_waiters(std::string_view ns_name, const std::string& prefix, std::size_t limit) override {
    check_process();
    return read_state<std::vector<WaiterInfo>>(ns_name, [&](NamespaceState& st, Clock::time_point now) {
      return list_waiters(matrix_, st, prefix, limit, now);
    });
  }

  bool do_force_release(std::string_view ns_name, std::string_view id) override {
    check_process();
    std::optional<HoldReport> hold;
    const bool ok =
        with_lock(ns_name, id, nullptr, [&](Namespace& ns, NamespaceState& st, Lock& lock, Clock::time_point now) {
          hold = hold_report(lock, now, true, instruments_.long_hold());
          remove(st, lock);
          ns.notify();
        });
    report(instruments_, ns_name, hold);
    return ok;
  }

  std::vector<LockInfo> do_list(std::string_view ns_name, const std::string& prefix) override {
    check_process();
    return read_state<std::vector<LockInfo>>(ns_name, [&](NamespaceState& st, Clock::time_point now) {
      return list_locks(matrix_, st, prefix, now);
    });
  }

  ListPage do_list_page(std::string_view ns_name, const core::PageQuery& page, std::size_t limit,
                        std::string_view after) override {
    return core::page_of(do_list(ns_name, page.prefix), limit, after);
  }

  void do_set_default_limits(const Limits& limits) override { defaults_.set(limits); }

  void do_set_limits(std::string_view ns_name, const std::optional<Limits>& limits) override {
    Namespace& ns = registry_.get(ns_name);
    std::lock_guard guard(ns.mutex);
    ns.limits = limits;
  }

  LimitsStatus do_limits(std::string_view ns_name) override {
    Namespace* ns = registry_.find(ns_name);
    if (!ns) return limits_status(defaults_.get(), std::nullopt, nullptr, clock_->now());
    std::lock_guard guard(ns->mutex);
    const Clock::time_point now = clock_->now();
    return limits_status(defaults_.get(), ns->limits, reap(*ns, now), now);
  }

 public:
  MemoryEngineStats stats() {
    MemoryEngineStats out;
    std::vector<Namespace*> all;
    registry_.for_each([&](Namespace& n) { all.push_back(&n); });
    out.namespaces = all.size();
    for (Namespace* ns : all) {
      std::lock_guard guard(ns->mutex);
      out.trims += ns->trims;
      if (!ns->state) continue;
      ++out.with_state;
      out.locks += ns->state->locks.live();
    }
    return out;
  }

 private:
  // The embedded backend's side of the waiting policy (core/waiting.hpp),
  // for an acquire, or for a conversion (`convert`: then `request` is the
  // conversion as a LockRequest, and a grant is never given back).
  class Attempts final : public core::WaitingAttempts {
   public:
    Attempts(MemoryEngine& engine, Namespace& ns, core::ResolvedRequest& req, const LockRequest& request,
             const ConvertRequest* convert = nullptr)
        : engine_(engine), ns_(ns), req_(req), request_(request), convert_(convert) {}

    AcquireResult attempt(Millis reserve) override {
      std::lock_guard guard(ns_.mutex);
      ns_.acquired_since_visit = true;
      const Clock::time_point now = engine_.clock_->now();
      NamespaceState& st = ns_.use(now);
      engine_.reap(ns_, now);
      AcquireResult result;
      const Lock* holder = nullptr;
      const bool granted = convert_ ? try_convert(engine_.matrix_, ns_, st, req_, *convert_, me_, now, result, holder)
                                    : engine_.try_acquire(ns_, st, req_, request_, me_, now, result);
      seen_ = ns_.generation;
      if (!granted && reserve > Millis{0} && result.conflicted()) {
        if (me_) me_->deadline = now + reserve;
        else if (auto refused = place_refusal(engine_.limits_of(ns_), st, now)) result = std::move(*refused);
        else {
          me_ = enqueue(ns_, st, req_, holder ? holder->owner : request_.owner, now, now + reserve);
          if (convert_) me_->converts = convert_->id;
        }
      } else if (me_) {
        dequeue(ns_, st, *me_);
        me_ = nullptr;
      }
      return result;
    }
    // Attempts record the generation under the mutex: nothing is missed.
    bool listen() override { return false; }
    void sleep_until(Clock::time_point until) override {
      std::unique_lock guard(ns_.mutex);
      ns_.changed.wait_for(guard, until - engine_.clock_->now(),
                           [&] { return ns_.generation != seen_ || interrupted_; });
    }
    // Under the mutex, so a sleeper between its check and its wait cannot
    // miss it; every sleeper of the namespace wakes and looks again.
    void interrupt() noexcept override {
      std::lock_guard guard(ns_.mutex);
      interrupted_ = true;
      ns_.changed.notify_all();
    }
    // (Never called for a conversion: keeps_grant_on_stop.)
    void give_back(const Grant& grant) noexcept override { core::release_quietly(engine_, request_.ns, grant); }
    bool keeps_grant_on_stop() const noexcept override { return convert_ != nullptr; }
    void leave() noexcept override {
      if (!me_) return;
      std::lock_guard guard(ns_.mutex);
      dequeue(ns_, *ns_.state, *me_);  // a waiter keeps the state alive
      me_ = nullptr;
    }

   private:
    MemoryEngine& engine_;
    Namespace& ns_;
    core::ResolvedRequest& req_;
    const LockRequest& request_;
    const ConvertRequest* convert_;  // set for a conversion
    Waiter* me_ = nullptr;    // the request's place in line, if it has one
    std::uint64_t seen_ = 0;  // ns_.generation at the last attempt
    bool interrupted_ = false;  // under ns_.mutex; see interrupt()
  };

  // An embedded engine's locks live in this process: a forked child has a
  // copy that nobody else sees, so a grant there would be a lock nobody holds.
  void check_process() const {
    if (process_.forked())
      throw BackendError(
          "this embedded engine was created in another process (before a fork); its locks are not shared with this "
          "one: create the engine in the process that uses it (docs/design.md#fork)");
  }

  // Reads namespace `ns_name` after reaping: f(state, now) under its mutex
  // when it has state; nothing (a default result) when it has none.
  template <class R, class F>
  R read_state(std::string_view ns_name, F&& f) {
    registry_.note_call();
    Namespace* ns = registry_.find(ns_name);
    if (!ns) return R{};
    std::lock_guard guard(ns->mutex);
    const Clock::time_point now = clock_->now();
    NamespaceState* st = reap(*ns, now);
    if (!st) return R{};
    return f(*st, now);
  }

  // Finds the live lock `id` (and `token`, when given) of namespace `ns_name`
  // after reaping, and applies f to it. False if there is none.
  template <class F>
  bool with_lock(std::string_view ns_name, std::string_view id, const std::string_view* token, F&& f) {
    core::check_namespace(ns_name);
    registry_.note_call();
    Namespace* ns = registry_.find(ns_name);
    if (!ns) return false;
    std::lock_guard guard(ns->mutex);
    const Clock::time_point now = clock_->now();
    NamespaceState* st = reap(*ns, now);
    Lock* lock = st ? st->locks.find(id) : nullptr;
    if (!lock || (token && lock->token != *token)) return false;
    f(*ns, *st, *lock, now);
    return true;
  }

  // One attempt: grants (true) or fills result.conflict (false). On a grant
  // the paths of `req` are moved into the lock.
  bool try_acquire(Namespace& ns, NamespaceState& st, core::ResolvedRequest& req, const LockRequest& request,
                   const Waiter* me, Clock::time_point now, AcquireResult& result) {
    if (req.reentry) return reenter(st, req, request, now, result);
    if (idempotent(st, req, request, now, result)) return true;
    // Limits on new locks first, whatever the conflicts (as the Redis library).
    if (auto refused = grant_refusal(limits_of(ns), st, request.owner)) {
      result = std::move(*refused);
      return false;
    }
    thread_local std::vector<PathProbe> probes;
    probes.assign(req.targets.size(), PathProbe{});
    if (held_refusal(matrix_, st, req, now, result.conflict, probes.data())) return false;
    if (request.fair)
      for (const core::ResolvedTarget& t : req.targets)
        if (find_older_waiter(matrix_, st, t, me, now, result.conflict)) return false;

    Lock& lock = st.locks.take(ns.next_fence++);
    lock.owner = request.owner;
    count_owner(st, lock.owner, 1);
    lock.op = req.op;
    lock.ttl = request.ttl;
    lock.expires_at = now + request.ttl;
    lock.granted_at = now;
    lock.hold_logged = false;
    st.expiry.arm(lock);
    if (!request.idempotency_key.empty()) {
      lock.idempotency_key = request.idempotency_key;
      st.idempotent.emplace(lock.idempotency_key, &lock);
    }
    link_targets(st, lock, req, probes.data());
    result.outcome = AcquireOutcome::granted;
    result.grant = grant_of(lock, now);
    return true;
  }

  // Idempotent retry: the live lock of the request's key, if any, comes back
  // unchanged (its lease extended): true, with `result` set.
  bool idempotent(NamespaceState& st, const core::ResolvedRequest& req, const LockRequest& request,
                  Clock::time_point now, AcquireResult& result) {
    if (request.idempotency_key.empty()) return false;
    const auto it = st.idempotent.find(request.idempotency_key);
    if (it == st.idempotent.end()) return false;
    Lock& lock = *it->second;
    if (lock.owner != request.owner || !same_targets(lock, req))
      throw InvalidRequest("idempotency_key is in use by another request (another owner, operation or targets)");
    extend(st, lock, std::max(lock.expires_at, now + request.ttl));
    result.outcome = AcquireOutcome::granted;
    result.grant = grant_of(lock, now);
    return true;
  }

  // Reentry by proof: the live lock reenter_id with token reenter_token gets
  // one more hold; without one the request is refused with not_holder, and
  // nothing about any lock is told.
  bool reenter(NamespaceState& st, const core::ResolvedRequest& req, const LockRequest& request,
               Clock::time_point now, AcquireResult& result) {
    Lock* lock = st.locks.find(request.reenter_id);
    if (!lock || lock->token != request.reenter_token) {
      result.outcome = AcquireOutcome::not_holder;
      return false;
    }
    if (!same_targets(*lock, req))
      throw InvalidRequest(fmt::format("reentry of lock {}: the request must repeat its operation '{}' and its targets",
                                       lock->id, matrix_.ops[static_cast<std::size_t>(lock->op)].name));
    ++lock->holds;
    extend(st, *lock, std::max(lock->expires_at, now + request.ttl));
    lock->ttl = request.ttl;
    result.outcome = AcquireOutcome::granted;
    result.grant = grant_of(*lock, now);
    return true;
  }

  static void extend(NamespaceState& st, Lock& lock, Clock::time_point at) {
    if (at != lock.expires_at) st.expiry.rearm(lock, at);
  }

  static void remove(NamespaceState& st, Lock& lock) {
    count_owner(st, lock.owner, -1);
    if (!lock.idempotency_key.empty()) st.idempotent.erase(lock.idempotency_key);
    for (Entry& e : lock.entries) st.index.unlink(e, kHeld);
    st.expiry.disarm(lock);
    st.locks.give_back(lock);
  }

  // Removes the locks whose lease ended; returns the state (null if none).
  static NamespaceState* reap(Namespace& ns, Clock::time_point now) {
    NamespaceState* st = ns.state.get();
    if (!st) return nullptr;
    bool removed = false;
    st->expiry.reap(now, [&](ExpiryHook& hook) {
      remove(*st, static_cast<Lock&>(hook));
      removed = true;
    });
    if (removed) ns.notify();
    return st;
  }

  // The limits in force in `ns` (its mutex held).
  Limits limits_of(const Namespace& ns) const { return ns.limits ? *ns.limits : defaults_.get(); }

  const std::shared_ptr<const Clock> clock_;
  DefaultLimits defaults_;
  NamespaceRegistry<Namespace> registry_;
  core::ProcessStamp process_;
};

MemoryEngineStats memory_engine_stats(LockEngine& engine) { return dynamic_cast<MemoryEngine&>(engine).stats(); }

}  // namespace pathlock::memory

namespace pathlock {

std::unique_ptr<LockEngine> make_memory_engine(const MemoryOptions& options) {
  return std::make_unique<memory::MemoryEngine>(options.matrix ? *options.matrix : default_matrix(),
                                                options.clock ? options.clock : steady_clock(), options.observe);
}

}  // namespace pathlock
