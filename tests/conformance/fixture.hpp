// The fixture of the conformance suite: behaviour every backend shares,
// written once against LockEngine. `Fixture f;` at the top of a TEST_CASE
// runs the case once per row of the backend table (support/backends.hpp),
// with a fresh engine and a namespace of its own.
//
// Time. `Fixture f{test::manual_time};` runs a row that takes a clock
// (can.injectable_clock: the memory row) on a ManualClock: f.let_pass(d)
// advances it at once, and nothing expires unless the test says so. Rows on
// a server's clock keep real time: let_pass(d) sleeps d, which is the time
// passing that the test is about, never a way to wait for another thread
// (for that: test::until_waiting, f.until_queued, f.until). Leases that must
// survive a few steps are generous there (a second, not 80 ms), so a slow or
// sanitized build does not see them end early.
#pragma once

#include "support/backends.hpp"
#include "support/waiting_probe.hpp"
#include "until.hpp"

#include <pathlock/clock.hpp>

#include <pathlock/engine.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

namespace pathlock::test {

// Tag of the fixture on a manual clock (see above).
struct ManualTime {};
inline constexpr ManualTime manual_time{};

struct Fixture {
  BackendUnderTest backend = each_backend();
  std::shared_ptr<ManualClock> clock;  // set on a manual clock only
  std::unique_ptr<LockEngine> engine = clock ? backend.make_on_clock(nullptr, clock) : backend.make(nullptr);
  std::string ns = unique_namespace(backend.name);

  Fixture() = default;
  explicit Fixture(ManualTime)
      : clock(backend.can.injectable_clock ? std::make_shared<ManualClock>() : nullptr) {}

  // Lets `d` pass for the engine's leases and deadlines: advances the manual
  // clock, or (real time) sleeps.
  void let_pass(Millis d) {
    if (clock) clock->advance(d);
    else std::this_thread::sleep_for(d);
  }
  // The engine's time: the manual clock's, or the steady clock's.
  Clock::time_point now() const { return clock ? clock->now() : std::chrono::steady_clock::now(); }
  // Polls `done` until it returns true (true) or `timeout` of real time has
  // passed (false): waiting for a condition, e.g. a lease ended on a server.
  // The C++ tests' one wait (tools/dev/until.hpp), with its one default limit.
  template <class F>
  static bool until(F done, Millis timeout = devtools::kUntilLimit) {
    return devtools::until(done, timeout);
  }
  // Lets the lease of `g` end: `d` passes (see let_pass), then waits until
  // the engine no longer holds the lock. False if it is still held after 10 s.
  bool until_expired(const Grant& g, Millis d) {
    let_pass(d);
    return until([&] { return !engine->is_held(ns, g.id, g.token); });
  }

  LockRequest request(const std::string& owner, const std::string& op, std::vector<Target> targets,
                      Millis ttl = Millis{30000}, Millis wait = Millis{0}, bool fair = true) const {
    LockRequest r{ns, owner, op, std::move(targets), ttl, wait};
    r.fair = fair;
    return r;
  }
  LockRequest request_on(const std::string& owner, const std::string& op, const std::string& path,
                         Millis ttl = Millis{30000}) const {
    return request(owner, op, {{"target", path}}, ttl);
  }
  // A one-target request that may wait (the waiting tests' form).
  AcquireResult attempt(const std::string& owner, const std::string& op, const std::string& path,
                        Millis wait = Millis{0}, Millis ttl = Millis{30000}, bool fair = true) {
    return engine->acquire(request(owner, op, {{"target", path}}, ttl, wait, fair));
  }
  AcquireResult take(const std::string& owner, const std::string& op, std::vector<Target> targets,
                     Millis ttl = Millis{30000}) {
    return engine->acquire(request(owner, op, std::move(targets), ttl));
  }
  // A one-target request on `path` that does not wait.
  AcquireResult one(const std::string& owner, const std::string& op, const std::string& path,
                    Millis ttl = Millis{30000}) {
    return engine->acquire(request_on(owner, op, path, ttl));
  }
  AcquireResult two(const std::string& owner, const std::string& op, const std::string& src, const std::string& dst) {
    return take(owner, op, {{"src", src}, {"dst", dst}});
  }
  // One-target requests of `owner` asked in turn, each checked against the
  // answer it must get (a grant stays held): a stretch of the matrix as a table.
  struct Ask {
    std::string op, path;
    bool granted;
  };
  void expect(const std::string& owner, const std::vector<Ask>& asks) {
    for (const Ask& a : asks) {
      INFO(owner << " asks " << a.op << " " << a.path);
      CHECK(one(owner, a.op, a.path).granted() == a.granted);
    }
  }
  std::size_t held() { return engine->list(ns).size(); }
  // True if nothing is held at or around `path` (a delete_folder probe gets in).
  bool free(const std::string& path) {
    const auto r = one("probe", "delete_folder", path);
    if (r.granted()) engine->release(ns, r.grant.id, r.grant.token);
    return r.granted();
  }
  // Starts `owner`'s fair request for `op` on `path` (waiting up to `wait`)
  // on a thread of its own and returns once it holds its place in line (a
  // `probe_op` on `path` is refused by it); the future gives its answer.
  std::future<AcquireResult> queued(const std::string& owner, const std::string& op, const std::string& path,
                                    const std::string& probe_op, Millis wait = Millis{10000}) {
    auto answer = std::async(std::launch::async, [=, this] { return attempt(owner, op, path, wait); });
    until_queued(owner, probe_op, path);
    return answer;
  }
  // Waits until `owner`'s request is queued: a fair wait=0 probe that
  // conflicts with it is refused by it.
  void until_queued(const std::string& owner, const std::string& probe_op, const std::string& path) {
    for (int i = 0; i < 500; ++i) {
      const auto probe = one("probe", probe_op, path);
      if (probe.granted()) REQUIRE(engine->release(ns, probe.grant.id, probe.grant.token));
      if (!probe.granted() && probe.conflict.queued && probe.conflict.owner == owner) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    FAIL("the waiter never appeared in the queue");
  }
};

}  // namespace pathlock::test
