// Limits per namespace (docs/operations.md#limits-per-namespace): the most
// live locks, places in line and locks per owner an operator allows a
// namespace, enforced in the same call as the grant, on every backend. A
// request over a limit is refused with AcquireOutcome::over_limit, which
// names the limit and the count, and takes nothing.
//
// The default limits are the backend's, shared by every namespace on it: a
// case that sets them puts them back (DefaultLimitsSet) before it ends.
#include "conformance/fixture.hpp"

#include <pathlock/metrics.hpp>

#include <chrono>
#include <future>

using namespace std::chrono_literals;

namespace pathlock {
namespace {

using test::Fixture;

// Sets the default limits for the life of the object, then none again.
struct DefaultLimitsSet {
  LockEngine& engine;
  DefaultLimitsSet(LockEngine& e, const Limits& l) : engine(e) { engine.set_default_limits(l); }
  ~DefaultLimitsSet() { engine.set_default_limits(Limits{}); }
};

void refused_by(const AcquireResult& r, LimitKind kind, std::uint64_t max, std::uint64_t count) {
  INFO("outcome " << static_cast<int>(r.outcome));
  REQUIRE(r.over_limit());
  CHECK(r.limit.limit == kind);
  CHECK(r.limit.max == max);
  CHECK(r.limit.count == count);
  CHECK(r.conflict.id.empty());
  CHECK(r.grant.id.empty());
}

std::string path_of(int i) { return "/t/f" + std::to_string(i); }

TEST_CASE("tenant limits: a namespace's limit on locks refuses the next new lock and takes nothing",
          "[engine][tenant-limits]") {
  Fixture f;
  f.engine->set_limits(f.ns, Limits{3, std::nullopt, std::nullopt});
  std::vector<Grant> held;
  for (int i = 0; i < 3; ++i) held.push_back(test::granted(*f.engine, f.request_on("alice", "upload", path_of(i))));
  const AcquireResult over = f.one("bob", "upload", "/t/more");
  refused_by(over, LimitKind::locks, 3, 3);
  CHECK(f.held() == 3);
  CHECK(f.engine->list(f.ns, "/t/more").empty());  // nothing of the refused request is held
  // What creates no lock is not limited: a reentry, an idempotent retry.
  LockRequest again = f.request_on("alice", "upload", path_of(0));
  CHECK(f.engine->acquire(again.reenter(held[0])).granted());
  // The limit on new locks is judged first: a request that also conflicts
  // is told of the limit (it could not be granted once the conflict ended).
  refused_by(f.one("carol", "delete_folder", "/t"), LimitKind::locks, 3, 3);
  // Another namespace is not limited by this one's.
  Fixture other;
  for (int i = 0; i < 4; ++i) CHECK(other.one("alice", "upload", path_of(i)).granted());
  // A lock that goes makes room for one.
  REQUIRE(f.engine->release(f.ns, held[1].id, held[1].token));
  CHECK(f.one("bob", "upload", "/t/more").granted());
  refused_by(f.one("bob", "upload", "/t/more2"), LimitKind::locks, 3, 3);
}

TEST_CASE("tenant limits: the limit on one owner's locks refuses that owner only", "[engine][tenant-limits]") {
  Fixture f;
  f.engine->set_limits(f.ns, Limits{std::nullopt, std::nullopt, 2});
  const Grant a1 = test::granted(*f.engine, f.request_on("alice", "upload", path_of(1)));
  test::granted(*f.engine, f.request_on("alice", "upload", path_of(2)));
  refused_by(f.one("alice", "upload", path_of(3)), LimitKind::owner_locks, 2, 2);
  CHECK(f.one("bob", "upload", path_of(3)).granted());
  CHECK(f.one("bob", "upload", path_of(4)).granted());
  refused_by(f.one("bob", "upload", path_of(5)), LimitKind::owner_locks, 2, 2);
  REQUIRE(f.engine->release(f.ns, a1.id, a1.token));
  CHECK(f.one("alice", "upload", path_of(3)).granted());
  const LimitsStatus s = f.engine->limits(f.ns);
  CHECK(s.locks == 4);
  CHECK(s.owner_locks == 2);
  CHECK(s.owner == "alice");  // alice and bob have two each: the first by name
}

TEST_CASE("tenant limits: the limit on places in line refuses a new waiter at once", "[engine][tenant-limits]") {
  Fixture f;
  if (!f.backend.can.waiting) return;
  f.engine->set_limits(f.ns, Limits{std::nullopt, 1, std::nullopt});
  // bob waits for the folder alice uploads into; an upload beside alice's
  // meets bob's place in line only.
  const Grant blocker = test::granted(*f.engine, f.request_on("alice", "upload", "/p/a"));
  auto first = f.queued("bob", "delete_folder", "/p", "upload", 20s);
  // A second fair waiter would be a second place: refused now, not after its wait.
  const auto t0 = std::chrono::steady_clock::now();
  const AcquireResult second = f.attempt("carol", "delete_folder", "/p", 20s);
  CHECK(std::chrono::steady_clock::now() - t0 < 10s);
  refused_by(second, LimitKind::places, 1, 1);
  CHECK(f.engine->waiters(f.ns).size() == 1);
  CHECK(f.engine->limits(f.ns).places == 1);
  // An unfair waiter takes no place: not limited (it waits, and times out).
  CHECK(f.attempt("dave", "delete_folder", "/p", 300ms, 30s, false).conflicted());
  REQUIRE(f.engine->release(f.ns, blocker.id, blocker.token));
  CHECK(first.get().granted());
  CHECK(f.engine->waiters(f.ns).empty());
}

TEST_CASE("tenant limits: a waiting request refused by a limit is answered at once", "[engine][tenant-limits]") {
  Fixture f;
  if (!f.backend.can.waiting) return;
  f.engine->set_limits(f.ns, Limits{1, std::nullopt, std::nullopt});
  test::granted(*f.engine, f.request_on("alice", "upload", path_of(1)));
  const auto t0 = std::chrono::steady_clock::now();
  refused_by(f.attempt("bob", "upload", path_of(2), 20s), LimitKind::locks, 1, 1);
  CHECK(std::chrono::steady_clock::now() - t0 < 10s);
  CHECK(f.engine->waiters(f.ns).empty());
}

TEST_CASE("tenant limits: the default applies to namespaces without limits of their own",
          "[engine][tenant-limits]") {
  Fixture f;
  Fixture own;  // another engine of the same backend row
  DefaultLimitsSet defaults(*f.engine, Limits{2, std::nullopt, std::nullopt});
  own.engine->set_limits(own.ns, Limits{});  // limits of its own: none
  for (int i = 0; i < 2; ++i) test::granted(*f.engine, f.request_on("alice", "upload", path_of(i)));
  refused_by(f.one("alice", "upload", path_of(2)), LimitKind::locks, 2, 2);
  for (int i = 0; i < 3; ++i) CHECK(own.one("alice", "upload", path_of(i)).granted());
  LimitsStatus s = f.engine->limits(f.ns);
  CHECK(s.defaults == Limits{2, std::nullopt, std::nullopt});
  CHECK_FALSE(s.overrides);
  CHECK(s.effective == s.defaults);
  CHECK(s.locks == 2);
  CHECK(s.owner_locks == 2);
  CHECK(s.owner == "alice");
  // Its own limits replace the default whole; taken away, the default is back.
  f.engine->set_limits(f.ns, Limits{std::nullopt, std::nullopt, 5});
  CHECK(f.one("alice", "upload", path_of(2)).granted());
  s = f.engine->limits(f.ns);
  REQUIRE(s.overrides);
  CHECK(*s.overrides == Limits{std::nullopt, std::nullopt, 5});
  CHECK(s.effective == *s.overrides);
  f.engine->set_limits(f.ns, std::nullopt);
  refused_by(f.one("alice", "upload", path_of(3)), LimitKind::locks, 2, 3);
  // A limit lowered below the use refuses new locks and drops none.
  f.engine->set_limits(f.ns, Limits{0, std::nullopt, std::nullopt});
  refused_by(f.one("bob", "upload", path_of(4)), LimitKind::locks, 0, 3);
  CHECK(f.held() == 3);
}

TEST_CASE("tenant limits: a lock whose lease ended no longer counts", "[engine][tenant-limits]") {
  Fixture f{test::manual_time};
  f.engine->set_limits(f.ns, Limits{1, std::nullopt, 1});
  const AcquireResult brief = f.one("alice", "upload", path_of(1), 300ms);
  REQUIRE(brief.granted());
  refused_by(f.one("alice", "upload", path_of(2)), LimitKind::locks, 1, 1);
  REQUIRE(f.until_expired(brief.grant, 400ms));
  CHECK(f.one("alice", "upload", path_of(2)).granted());
  // The ended lock left alice's count when the call reaped it: one lock now.
  f.engine->set_limits(f.ns, Limits{std::nullopt, std::nullopt, 1});
  refused_by(f.one("alice", "upload", path_of(3)), LimitKind::owner_locks, 1, 1);
  CHECK(f.engine->limits(f.ns).owner_locks == 1);
}

TEST_CASE("tenant limits: refusals are counted by limit", "[engine][tenant-limits]") {
  Fixture f;
  auto metrics = f.engine->metrics();
  if (!metrics) return;
  f.engine->set_limits(f.ns, Limits{1, std::nullopt, std::nullopt});
  test::granted(*f.engine, f.request_on("alice", "upload", path_of(1)));
  for (int i = 0; i < 2; ++i) REQUIRE(f.one("alice", "upload", path_of(2)).over_limit());
  const MetricsSnapshot s = metrics->snapshot();
  CHECK(s.limit_refusals[static_cast<std::size_t>(LimitKind::locks)] == 2);
  CHECK(s.limit_refusals[static_cast<std::size_t>(LimitKind::places)] == 0);
  CHECK(s.acquired("upload", Outcome::refused) == 2);
  CHECK(metrics->prometheus().find("pathlock_limit_refusals_total{limit=\"locks\"} 2") != std::string::npos);
}

TEST_CASE("tenant limits: bad limits and names are InvalidRequest and change nothing", "[engine][tenant-limits]") {
  Fixture f;
  CHECK_THROWS_AS(f.engine->set_limits(f.ns, Limits{kMaxLimit + 1, std::nullopt, std::nullopt}), InvalidRequest);
  CHECK_THROWS_AS(f.engine->set_default_limits(Limits{std::nullopt, kMaxLimit + 1, std::nullopt}), InvalidRequest);
  CHECK_THROWS_AS(f.engine->set_limits("bad ns", Limits{}), InvalidRequest);
  CHECK_THROWS_AS(f.engine->limits("bad ns"), InvalidRequest);
  const LimitsStatus s = f.engine->limits(f.ns);
  CHECK_FALSE(s.overrides);
  CHECK(s.effective == Limits{});
  CHECK(s.locks == 0);
  CHECK(s.owner.empty());
}

}  // namespace
}  // namespace pathlock
