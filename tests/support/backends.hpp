// The backends under test: one table, one row per backend. Every test in
// tests/conformance/ runs once per row (each_backend()); adding a backend to
// the suite is adding a row in backends.cpp.
#pragma once

#include <pathlock/clock.hpp>
#include <pathlock/engine.hpp>
#include <pathlock/factory.hpp>
#include <pathlock/metrics.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace pathlock::test {

struct BackendCapabilities {
  bool waiting = true;       // LockRequest::wait > 0 is supported
  bool in_process = false;   // no round trips: tests may afford many more calls
  bool shared = false;       // two engines of this row share their locks (a server)
  // make_on_clock exists: the row's leases and waiting deadlines can run on a
  // clock the test moves (a ManualClock), so lease tests advance it instead of
  // sleeping. The Redis rows measure time on the server's clock: real time.
  bool injectable_clock = false;
};

struct BackendUnderTest {
  std::string name;
  // A fresh engine for `matrix` (nullptr: the default matrix).
  std::function<std::unique_ptr<LockEngine>(const MatrixTable* matrix)> make;
  BackendCapabilities can;
  // The same, with these ObserveOptions (metrics, observer, logs).
  std::function<std::unique_ptr<LockEngine>(const MatrixTable* matrix, const ObserveOptions& observe)> make_observed;
  // Rows with can.injectable_clock: a fresh engine for `matrix` on `clock`.
  std::function<std::unique_ptr<LockEngine>(const MatrixTable* matrix, std::shared_ptr<const Clock> clock)>
      make_on_clock;
};

// The rows this run tests, in a fixed order: those named in the environment
// variable PATHLOCK_TEST_BACKENDS (comma-separated: memory, redis, cluster,
// sentinel, tls, postgres), by default memory and redis. CTest runs the conformance suite
// once more per server topology (tests/CMakeLists.txt), so that a cluster
// or a sentinel deployment starts once, not once per test case.
const std::vector<BackendUnderTest>& backends_under_test();

// Inside a Catch2 TEST_CASE: runs the test case once per row (a GENERATE
// over the table) and returns the current row. Call it once per test case.
BackendUnderTest each_backend();

// The row named `name`, chosen or not; fails the test if there is none.
const BackendUnderTest& backend_named(const std::string& name);

// A fresh engine of backend `name` for `matrix` (nullptr: default matrix).
std::unique_ptr<LockEngine> make_test_engine(const std::string& name, const MatrixTable* matrix = nullptr);

// A namespace name no other test uses (backends may share one server).
std::string unique_namespace(const std::string& hint = "t");

// engine.acquire(request), which must be granted (a failed REQUIRE if not): its grant.
Grant granted(LockEngine& engine, const LockRequest& request);

// A request of `owner` for `op` on one target of role "target" at `path`,
// with a 30 s lease, waiting up to `wait`.
LockRequest one_target_request(const std::string& ns, const std::string& owner, const std::string& op,
                               const std::string& path, Millis wait = Millis{0});

}  // namespace pathlock::test
