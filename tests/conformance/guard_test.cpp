// LockGuard (RAII) and LeaseKeeper (renewal and loss detection).
#include "conformance/fixture.hpp"

#include <pathlock/guard.hpp>
#include <pathlock/keeper.hpp>

#include <catch2/catch.hpp>

#include <atomic>
#include <future>
#include <memory>
#include <optional>
#include <thread>

using namespace pathlock;
using namespace std::chrono_literals;

namespace {

using test::Fixture;

}  // namespace

TEST_CASE("a guard releases its lock when it goes out of scope", "[guard]") {
  Fixture f;
  {
    LockGuard guard(*f.engine, f.request_on("a", "upload", "/p/A"));
    REQUIRE(guard.owns_lock());
    CHECK(guard.grant().fence > 0);
    CHECK_FALSE(f.free("/p/A"));
  }
  CHECK(f.free("/p/A"));
}

TEST_CASE("a refused guard owns nothing and reports the conflict", "[guard]") {
  Fixture f;
  LockGuard holder(*f.engine, f.request_on("a", "delete_folder", "/p/A"));
  LockGuard refused(*f.engine, f.request_on("b", "upload", "/p/A/x"));
  CHECK_FALSE(refused.owns_lock());
  CHECK_FALSE(static_cast<bool>(refused));
  CHECK(refused.conflict().owner == "a");
  CHECK_FALSE(refused.release());
  CHECK_FALSE(refused.renew());
}

TEST_CASE("guards move - only the last owner releases", "[guard]") {
  Fixture f;
  LockGuard outer;
  CHECK_FALSE(outer.owns_lock());
  {
    LockGuard inner(*f.engine, f.request_on("a", "upload", "/p/A"));
    LockGuard moved(std::move(inner));
    CHECK_FALSE(inner.owns_lock());  // NOLINT(bugprone-use-after-move): moved-from state is specified
    CHECK(moved.owns_lock());
    outer = std::move(moved);
  }
  CHECK(outer.owns_lock());
  CHECK_FALSE(f.free("/p/A"));
  CHECK(outer.renew(5000ms));
  CHECK(outer.release());
  CHECK_FALSE(outer.owns_lock());
  CHECK_FALSE(outer.release());
  CHECK(f.free("/p/A"));
  // Assigning over a guard that owns a lock releases that lock.
  LockGuard g1(*f.engine, f.request_on("a", "upload", "/p/B"));
  g1 = LockGuard(*f.engine, f.request_on("a", "upload", "/p/C"));
  CHECK(f.free("/p/B"));
  CHECK_FALSE(f.free("/p/C"));
}

// The keeper renews on the steady clock, so these run in real time on every
// row, with leases long enough for a slow or sanitized build (a renewal is
// late only if it comes two thirds of a lease after the last one), waiting
// for conditions rather than for fixed times.

TEST_CASE("the keeper keeps a short lease alive while the work runs", "[keeper]") {
  Fixture f;
  LeaseKeeper keeper(*f.engine);
  const Millis lease = 600ms;
  {
    LockGuard guard(*f.engine, f.request_on("a", "upload", "/p/A", lease), &keeper);
    REQUIRE(guard.owns_lock());
    std::this_thread::sleep_for(lease * 5 / 2);  // the work: outlasts its lease
    CHECK_FALSE(guard.lost());
    CHECK_FALSE(f.free("/p/A"));  // not expired: renewed
  }
  CHECK(f.free("/p/A"));
  CHECK(f.engine->list(f.ns).empty());
}

TEST_CASE("the keeper tells the holder when a renewal is refused", "[keeper]") {
  Fixture f;
  LeaseKeeper keeper(*f.engine);
  std::atomic<int> calls{0};
  LockGuard guard(*f.engine, f.request_on("a", "upload", "/p/A", 300ms), &keeper, [&](const Lease&) { ++calls; });
  REQUIRE(guard.owns_lock());
  REQUIRE(f.engine->force_release(f.ns, guard.grant().id));
  CHECK(Fixture::until([&] { return guard.lost(); }));
  // The keeper sets lost() first, then calls the callback (keeper.hpp), on
  // its own thread: the call is waited for, not assumed done.
  CHECK(Fixture::until([&] { return calls.load() == 1; }));
  CHECK_FALSE(guard.renew());  // the lock is gone
  CHECK(calls.load() == 1);    // told once
}

TEST_CASE("a lease whose renewal comes too late is reported lost", "[keeper]") {
  Fixture f;
  KeeperOptions late;
  late.renew_after = 3.0;  // renew only after the lease has ended: a stalled keeper
  LeaseKeeper keeper(*f.engine, late);
  std::atomic<bool> told{false};
  LockGuard guard(*f.engine, f.request_on("a", "upload", "/p/A", 100ms), &keeper, [&](const Lease& l) {
    told = l.lost();
  });
  CHECK(Fixture::until([&] { return guard.lost(); }));
  CHECK(told);
}

TEST_CASE("stop() means no renewal afterwards", "[keeper]") {
  Fixture f;
  LeaseKeeper keeper(*f.engine);
  const Millis lease = 600ms;
  const auto got = f.engine->acquire(f.request_on("a", "upload", "/p/A", lease));
  REQUIRE(got.granted());
  auto lease_kept = keeper.keep(f.ns, got.grant, lease);
  CHECK(Fixture::until([&] { return lease_kept->renewals() >= 2; }));
  keeper.stop(*lease_kept);
  const auto after = lease_kept->renewals();
  // Kept on, it would be renewed every 200 ms and never come free.
  CHECK(Fixture::until([&] { return f.free("/p/A"); }));  // expired on its own once no longer kept
  CHECK(lease_kept->renewals() == after);
  CHECK_FALSE(lease_kept->lost());
}

TEST_CASE("a lost-lease callback may destroy its keeper and release its guard", "[keeper]") {
  Fixture f;
  auto keeper = std::make_unique<LeaseKeeper>(*f.engine);
  std::promise<void> called;
  std::optional<LockGuard> guard;
  guard.emplace(*f.engine, f.request_on("a", "upload", "/p/A", 5000ms), keeper.get(), [&](const Lease&) {
    guard->release();  // false: the lock is gone; and no wait for the keeper
    keeper.reset();    // on the keeper's own thread: no join of itself
    called.set_value();
  });
  REQUIRE(guard->owns_lock());
  REQUIRE(f.engine->force_release(f.ns, guard->grant().id));
  auto done = called.get_future();
  REQUIRE(done.wait_for(30s) == std::future_status::ready);
  CHECK_FALSE(keeper);
  CHECK_FALSE(guard->owns_lock());
}
