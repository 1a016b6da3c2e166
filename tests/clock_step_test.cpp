// Clock steps on the server (issue 47, point 3): the test's own redis-server
// and PostgreSQL run under Debian's libfaketime (support/clock_step.hpp),
// and the test steps their wall clock forward and back, as an NTP step
// would, by more than a lease, while locks are held, kept and waited for.
// Leases end on the server's clock (Redis: TIME in the function;
// PostgreSQL: clock_timestamp()), so a step moves every lease end by the
// step. What the scenarios show, on both backends:
//   - forward (+60 s, 3 s leases): the leases end at the step. A's keeper
//     reports A's lease lost at its next renewal (within a third of the TTL
//     of the step), B, waiting, gets the lock with a higher fence, and a
//     storage write with A's grant is refused (the hold check at once, the
//     fence check once B wrote). Between B's grant and A's report both
//     believe they hold: only the fence protects storage then (measured and
//     shown with the checker, below).
//   - back (-15 s): A's lease (no keeper) lasts 15 s longer in real time,
//     no more; nobody else is granted a conflicting lock meanwhile; a grant
//     just after the step gets a higher fence than every earlier one.
//   - forward then back (+60 s, then 0, as NTP correcting a wrong step):
//     fences rise over the whole run; a kept lease extended by the step back
//     returns to one TTL at its next renewal.
//   - forward, the namespace idle for longer than the Redis expiry margin,
//     then back: PostgreSQL's fences still rise (one sequence, stored);
//     Redis's too, though the namespace's keys, its last fence with them,
//     expired on the stepped clock: the library's fence floor
//     (docs/design.md#clock-steps).
// Every hold is logged (support/history.hpp) and checked by
// `pathlock-stress check`: no two conflicting holds overlap, fences never go
// back. A hold is logged until its holder stopped trusting it and no later
// than the end of the lease it can vouch for: a forward step ends the
// server's lease at the step, so a lease that a step ended is logged until
// the step (what the server granted), and what its holder believed (until
// the keeper's report) is checked separately.
// Times are CLOCK_MONOTONIC (test::monotonic_ns()), which no step moves.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <iostream>
#include <map>
#include <pathlock/engine.hpp>
#include <pathlock/keeper.hpp>
#include <regex>
#include <thread>

#include "support/backends.hpp"
#include "support/clock_step.hpp"
#include "support/history.hpp"
#include "support/partition.hpp"  // Moment, until, find_lock, ms_to_ns: nothing of the network
#include "support/process.hpp"
#include "support/redis_server.hpp"
#include "support/waiting_probe.hpp"

#ifdef PATHLOCK_TEST_WITH_POSTGRES
#include <pathlock/postgres.hpp>

#include "support/postgres_server.hpp"
#endif

using namespace pathlock;
using namespace std::chrono_literals;
using namespace pathlock::test;

namespace {

constexpr Millis kTtl = 3000ms;               // every lease of the scenarios
constexpr Millis kCommandTimeout = 1000ms;    // every engine's
constexpr std::chrono::seconds kForward{60};  // a step forward
constexpr std::chrono::seconds kBack{15};     // a step back (more than a lease, and than Redis's 10 s expiry margin)
constexpr std::int64_t kRedisExpiryMarginMs = 10000;  // PL_EXPIRY_MARGIN (docs/lua-protocol.md#expiry)

// One server under a SteppedClock, and what the scenarios ask of it.
class ClockLab {
 public:
  virtual ~ClockLab() = default;
  virtual const char* name() const = 0;
  // A fresh engine on the server (command timeout kCommandTimeout).
  virtual std::unique_ptr<LockEngine> engine() = 0;
  // The server's wall clock now (ms since the epoch), as its lock functions
  // read it.
  virtual std::int64_t server_ms() = 0;
  // True once the server keeps nothing of `ns` that could carry its last
  // fence (Redis: no key left). PostgreSQL keeps its fences in a sequence.
  virtual bool namespace_expired(const std::string& ns) = 0;

  // Steps the servers' clock to real + `offset` and returns once the server
  // reads it (within 500 ms of the expected time: a step of seconds is
  // unmistakable); returns CLOCK_MONOTONIC just before the step.
  std::int64_t step_to(std::chrono::seconds offset) {
    const std::int64_t before = monotonic_ns();
    clock.set_offset(offset);
    const std::int64_t off_by = server_ms() - clock.expected_server_ms();
    INFO(name() << ": the server's clock, stepped to real " << fmt::format("{:+}", offset.count()) << " s, is off by "
                << off_by << " ms");
    REQUIRE(std::llabs(off_by) < 500);
    return before;
  }

  SteppedClock clock;
};

class RedisClockLab : public ClockLab {
 public:
  const char* name() const override { return "Redis"; }
  std::unique_ptr<LockEngine> engine() override { return redis_engine(server.url(), nullptr, 4, kCommandTimeout); }
  std::int64_t server_ms() override {
    const RedisReply t = server.command({"TIME"});
    REQUIRE(t.elements.size() == 2);
    return std::stoll(t.elements[0].str) * 1000 + std::stoll(t.elements[1].str) / 1000;
  }
  bool namespace_expired(const std::string& ns) override { return ns_keys(server, ns).empty(); }

  RedisServer server{{}, "", clock.redis_environment()};
};

#ifdef PATHLOCK_TEST_WITH_POSTGRES
class PostgresClockLab : public ClockLab {
 public:
  const char* name() const override { return "PostgreSQL"; }
  std::unique_ptr<LockEngine> engine() override {
    PostgresOptions options;
    options.url = server.url();
    options.command_timeout = kCommandTimeout;
    return make_postgres_engine(options);
  }
  // clock_timestamp(), after checking that now() (the transaction's start)
  // agrees with it: both come from the stepped clock.
  std::int64_t server_ms() override {
    const std::string out = server.sql(
        "SELECT floor(extract(epoch FROM now()) * 1000)::bigint || ' ' || "
        "floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint");
    const std::size_t space = out.find(' ');
    REQUIRE(space != std::string::npos);
    const std::int64_t now = std::stoll(out.substr(0, space)), wall = std::stoll(out.substr(space + 1));
    REQUIRE(std::llabs(wall - now) < 500);
    return wall;
  }
  bool namespace_expired(const std::string&) override { return true; }

  PostgresServer server{{}, clock.postgres_environment()};
};
#endif

// One acquire on a thread of its own: what it returned or threw, and when
// it was sent and answered. Joined when destroyed.
struct Attempt {
  Attempt(LockEngine& engine, LockRequest req) : request(std::move(req)) {
    thread = std::thread([this, &engine] {
      sent = monotonic_ns();
      try {
        result = engine.acquire(request);
      } catch (const std::exception& e) {
        error = e.what();
      }
      answered = monotonic_ns();
    });
  }
  ~Attempt() { join(); }
  void join() {
    if (thread.joinable()) thread.join();
  }

  LockRequest request;
  AcquireResult result;
  std::string error;
  std::int64_t sent = 0, answered = 0;
  std::thread thread;
};

// The storage side of docs/guard.md: the highest fence it accepted per
// path (a lower one is refused), and the hold asked just before committing.
class FencedStore {
 public:
  bool write(LockEngine& engine, const std::string& ns, const Grant& grant, const std::string& path) {
    if (!fence_passes(grant, path)) return false;
    if (!engine.is_held(ns, grant.id, grant.token)) return false;
    fences_[path] = grant.fence;
    return true;
  }
  // The fence check alone (the one that makes a stale write impossible).
  bool fence_passes(const Grant& grant, const std::string& path) const {
    const auto it = fences_.find(path);
    return it == fences_.end() || grant.fence >= it->second;
  }

 private:
  std::map<std::string, std::uint64_t> fences_;
};

// What `pathlock-stress check` said of a history.
struct Verdict {
  int status = -1;
  std::string text;
  long violations = -1, fence_violations = -1;
};

Verdict check(const History& history) {
  Verdict v;
  v.status = history.check(v.text);
  std::smatch m;
  if (std::regex_search(v.text, m, std::regex(R"((\d+) violations, (\d+) fence violations)"))) {
    v.violations = std::stol(m[1]);
    v.fence_violations = std::stol(m[2]);
  }
  return v;
}

// `pathlock-stress check` finds no violation in `history`.
void check_clean(const History& history) {
  const Verdict v = check(history);
  INFO(v.text);
  CHECK(v.status == 0);
  CHECK(v.violations == 0);
  CHECK(v.fence_violations == 0);
}

// The end of the lease a holder can vouch for after its acquire was
// answered at `answered` (no keeper): the granting call ran on the server
// after it was sent, at most the command timeout before its answer.
std::int64_t vouched_end(std::int64_t answered) { return answered + ms_to_ns(kTtl - kCommandTimeout); }

double ms_between(std::int64_t from, std::int64_t to) { return static_cast<double>(to - from) / 1e6; }

LockRequest delete_folder(const std::string& ns, const std::string& owner, const std::string& path,
                          Millis wait = 0ms, bool fair = true) {
  LockRequest r{ns, owner, "delete_folder", {{"target", path}}, kTtl, wait};
  r.fair = fair;
  return r;
}

// A's lock and its grant's times.
struct Held {
  LockRequest request;
  AcquireResult got;
  std::int64_t sent = 0, from = 0;
};

Held hold(LockEngine& engine, LockRequest request) {
  Held h{std::move(request), {}, monotonic_ns(), 0};
  h.got = engine.acquire(h.request);
  h.from = monotonic_ns();
  REQUIRE(h.got.granted());
  return h;
}

}  // namespace

// ---------------------------------------------------------------------------
// a. A forward step by more than a lease while A holds (kept) and B waits.

namespace {

void forward_step(ClockLab& lab) {
  const std::string ns = unique_namespace("clock-fwd");
  const auto a = lab.engine(), b = lab.engine();
  LeaseKeeper keeper(*a);
  const ScratchDir scratch{"clock"};
  History granted{scratch, "granted.log"}, believed{scratch, "believed.log"};
  INFO(lab.name() << ": histories in " << scratch.dir());

  const Held ha = hold(*a, delete_folder(ns, "A", "/p/A"));
  const Grant& ga = ha.got.grant;
  Moment lost;
  const auto lease = keeper.keep(ns, ga, kTtl, [&](const Lease&) { lost.mark(); });
  REQUIRE(until([&] { return lease->renewals() >= 1; }));  // kept while the clock is right
  FencedStore store;
  REQUIRE(store.write(*a, ns, ga, "/p/A/f"));
  Attempt waiter(*b, delete_folder(ns, "B", "/p/A", 20000ms));
  REQUIRE(until_waiting(ns, "B"));

  const std::int64_t step_at = lab.step_to(kForward);
  CHECK_FALSE(store.write(*a, ns, ga, "/p/A/f"));  // refused at once: the server ended the lease (hold check)
  REQUIRE(lost.wait(10s));
  waiter.join();
  INFO("B: " << waiter.error);
  REQUIRE(waiter.result.granted());
  const Grant& gb = waiter.result.grant;
  CHECK(gb.fence > ga.fence);
  CHECK(lost.at - step_at < ms_to_ns(kTtl / 3 + 1000ms));  // the next renewal (a third of the TTL) is refused
  CHECK(store.write(*b, ns, gb, "/p/A/f"));
  CHECK_FALSE(store.fence_passes(ga, "/p/A/f"));  // now the fence alone refuses A
  CHECK_FALSE(a->renew(ns, ga.id, ga.token, 60000ms));  // a late renewal revives nothing
  const std::int64_t released_b = monotonic_ns();
  CHECK(b->release(ns, gb.id, gb.token));

  const std::int64_t b_to = std::min(released_b, vouched_end(waiter.answered));
  granted.hold(ha.request, ga, ha.sent, ha.from, step_at);  // the server's lease of A ended at the step
  granted.hold(waiter.request, gb, waiter.sent, waiter.answered, b_to);
  const Verdict v = check(granted);
  INFO(v.text);
  CHECK(v.status == 0);
  CHECK(v.violations == 0);
  CHECK(v.fence_violations == 0);

  // What A believed: its lease until the keeper's report. When B was
  // granted before that, the checker sees two holders (the window in which
  // only the fence keeps storage safe); when after, none.
  believed.hold(ha.request, ga, ha.sent, ha.from, lost.at);
  believed.hold(waiter.request, gb, waiter.sent, waiter.answered, b_to);
  const Verdict belief = check(believed);
  INFO(belief.text);
  CHECK(belief.violations == (waiter.answered < lost.at ? 1 : 0));
  CHECK(belief.fence_violations == 0);
  std::cout << fmt::format(
      "clock, {}: step +{} s with {} ms leases: A's keeper reported the loss {:.0f} ms after the step, B was "
      "granted {:.0f} ms after the step (fence +{} us over A's); A and B both believed they held for {:.0f} ms\n",
      lab.name(), kForward.count(), kTtl.count(), ms_between(step_at, lost.at), ms_between(step_at, waiter.answered),
      gb.fence - ga.fence, std::max(0.0, ms_between(waiter.answered, lost.at)));
}

}  // namespace

TEST_CASE(
    "clock: a forward step ends a kept lease, the keeper reports it lost and the waiter gets a higher fence (Redis)",
    "[clock][redis]") {
  RedisClockLab lab;
  forward_step(lab);
}

#ifdef PATHLOCK_TEST_WITH_POSTGRES
TEST_CASE(
    "clock: a forward step ends a kept lease, the keeper reports it lost and the waiter gets a higher fence "
    "(PostgreSQL)",
    "[clock][postgres]") {
  PostgresClockLab lab;
  forward_step(lab);
}
#endif

// ---------------------------------------------------------------------------
// b. A step back by more than a lease while A holds (no keeper) and B waits.

namespace {

void backward_step(ClockLab& lab) {
  const std::string ns = unique_namespace("clock-back");
  const auto a = lab.engine(), b = lab.engine(), c = lab.engine();
  const ScratchDir scratch{"clock"};
  History history{scratch, "history.log"};
  INFO(lab.name() << ": history in " << scratch.dir());

  const Held ha = hold(*a, delete_folder(ns, "A", "/p/A"));
  const Grant& ga = ha.got.grant;
  Attempt waiter(*b, delete_folder(ns, "B", "/p/A", Millis(kTtl + kBack + 10s)));
  REQUIRE(until_waiting(ns, "B"));

  lab.step_to(-kBack);
  // A grant just after the step: its fence is still above every earlier one.
  const Held hc = hold(*c, delete_folder(ns, "C", "/q/C"));
  CHECK(hc.got.grant.fence > ga.fence);
  const std::int64_t released_c = monotonic_ns();
  CHECK(c->release(ns, hc.got.grant.id, hc.got.grant.token));
  const std::vector<LockInfo> listed = a->list(ns);
  REQUIRE(find_lock(listed, ga.id));
  const Millis left = find_lock(listed, ga.id)->expires_in;
  CHECK(left <= kTtl + kBack);  // the step added at most itself

  // Past the end of A's lease on A's own clock, the server still holds it:
  // nobody else is granted it.
  REQUIRE(until([&] { return monotonic_ns() > ha.sent + ms_to_ns(kTtl + 1000ms); }, 10s));
  CHECK(a->is_held(ns, ga.id, ga.token));
  const AcquireResult probe = c->acquire(delete_folder(ns, "D", "/p/A", 0ms, false));
  CHECK(probe.conflicted());
  CHECK(probe.conflict.id == ga.id);

  waiter.join();
  INFO("B: " << waiter.error);
  REQUIRE(waiter.result.granted());
  const Grant& gb = waiter.result.grant;
  const double held_ms = ms_between(ha.sent, waiter.answered);  // A's lock lasted at most this long
  CHECK(held_ms <= static_cast<double>((kTtl + kBack + 1000ms).count()));
  CHECK(gb.fence > hc.got.grant.fence);
  const std::int64_t released_b = monotonic_ns();
  CHECK(b->release(ns, gb.id, gb.token));

  history.hold(ha.request, ga, ha.sent, ha.from, vouched_end(ha.from));
  history.hold(hc.request, hc.got.grant, hc.sent, hc.from, std::min(released_c, vouched_end(hc.from)));
  history.hold(waiter.request, gb, waiter.sent, waiter.answered, std::min(released_b, vouched_end(waiter.answered)));
  check_clean(history);
  std::cout << fmt::format(
      "clock, {}: step -{} s with {} ms leases: A's lease had {} ms left after the step, A's lock lasted {:.0f} ms "
      "of real time (lease + step = {} ms); fences after the step: C +{} us, B +{} us over A's\n",
      lab.name(), kBack.count(), kTtl.count(), left.count(), held_ms, (kTtl + kBack).count(),
      hc.got.grant.fence - ga.fence, gb.fence - ga.fence);
}

}  // namespace

TEST_CASE("clock: a step back extends a lease by no more than the step, with no second holder (Redis)",
          "[clock][redis]") {
  RedisClockLab lab;
  backward_step(lab);
}

#ifdef PATHLOCK_TEST_WITH_POSTGRES
TEST_CASE("clock: a step back extends a lease by no more than the step, with no second holder (PostgreSQL)",
          "[clock][postgres]") {
  PostgresClockLab lab;
  backward_step(lab);
}
#endif

// ---------------------------------------------------------------------------
// c. Forward, then back (NTP correcting a wrong step), while locks are held,
// kept and waited for.

namespace {

// The clock stepped back by kForward while `lease` keeps `grant`: what the
// lease had left just after the step, and after its next renewal (which
// counts from the corrected clock).
std::pair<Millis, Millis> step_back_while_kept(ClockLab& lab, LockEngine& observer, const std::string& ns,
                                              const Grant& grant, const Lease& lease) {
  lab.step_to(0s);  // back by kForward
  const std::uint64_t renewed = lease.renewals();
  const std::vector<LockInfo> after_step = observer.list(ns);
  REQUIRE(find_lock(after_step, grant.id));
  const Millis left_after_step = find_lock(after_step, grant.id)->expires_in;
  REQUIRE(until([&] { return lease.renewals() > renewed; }));
  const std::vector<LockInfo> after_renewal = observer.list(ns);
  REQUIRE(find_lock(after_renewal, grant.id));
  const Millis left_after_renewal = find_lock(after_renewal, grant.id)->expires_in;
  CHECK(left_after_renewal <= kTtl);
  return {left_after_step, left_after_renewal};
}

void forward_then_back(ClockLab& lab) {
  const std::string ns = unique_namespace("clock-fwd-back");
  const auto a = lab.engine(), b = lab.engine(), c = lab.engine();
  LeaseKeeper keeper_a(*a), keeper_b(*b);
  const ScratchDir scratch{"clock"};
  History history{scratch, "history.log"};
  INFO(lab.name() << ": history in " << scratch.dir());

  const Held ha = hold(*a, delete_folder(ns, "A", "/p/A"));
  const Grant& ga = ha.got.grant;
  Moment lost_a;
  const auto lease_a = keeper_a.keep(ns, ga, kTtl, [&](const Lease&) { lost_a.mark(); });
  REQUIRE(until([&] { return lease_a->renewals() >= 1; }));
  Attempt waiter_b(*b, delete_folder(ns, "B", "/p/A", 20000ms));
  REQUIRE(until_waiting(ns, "B"));

  const std::int64_t forward_at = lab.step_to(kForward);
  REQUIRE(lost_a.wait(10s));
  waiter_b.join();
  INFO("B: " << waiter_b.error);
  REQUIRE(waiter_b.result.granted());
  const Grant& gb = waiter_b.result.grant;
  Moment lost_b;
  const auto lease_b = keeper_b.keep(ns, gb, kTtl, [&](const Lease&) { lost_b.mark(); });
  REQUIRE(until([&] { return lease_b->renewals() >= 1; }));  // renewed on the clock that is ahead

  const auto [left_after_step, left_after_renewal] = step_back_while_kept(lab, *c, ns, gb, *lease_b);
  CHECK(lost_b.at == 0);

  Attempt waiter_c(*c, delete_folder(ns, "C", "/p/A", 10000ms));
  REQUIRE(until_waiting(ns, "C"));
  keeper_b.stop(*lease_b);
  const std::int64_t released_b = monotonic_ns();
  CHECK(b->release(ns, gb.id, gb.token));
  waiter_c.join();
  INFO("C: " << waiter_c.error);
  REQUIRE(waiter_c.result.granted());
  const Grant& gc = waiter_c.result.grant;
  const Held hd = hold(*a, delete_folder(ns, "D", "/q/D"));
  const Grant& gd = hd.got.grant;
  CHECK(ga.fence < gb.fence);
  CHECK(gb.fence < gc.fence);
  CHECK(gc.fence < gd.fence);
  const std::int64_t released_c = monotonic_ns();
  CHECK(c->release(ns, gc.id, gc.token));
  const std::int64_t released_d = monotonic_ns();
  CHECK(a->release(ns, gd.id, gd.token));

  history.hold(ha.request, ga, ha.sent, ha.from, forward_at);
  history.hold(waiter_b.request, gb, waiter_b.sent, waiter_b.answered, released_b);  // kept, never lost
  history.hold(waiter_c.request, gc, waiter_c.sent, waiter_c.answered,
               std::min(released_c, vouched_end(waiter_c.answered)));
  history.hold(hd.request, gd, hd.sent, hd.from, std::min(released_d, vouched_end(hd.from)));
  check_clean(history);
  std::cout << fmt::format(
      "clock, {}: step +{} s then back: A's loss reported {:.0f} ms after the forward step; B's kept lease had {} ms "
      "left after the step back, {} ms after its next renewal; fences B-A +{} us, C-B +{} us, D-C +{} us\n",
      lab.name(), kForward.count(), ms_between(forward_at, lost_a.at), left_after_step.count(),
      left_after_renewal.count(), gb.fence - ga.fence, gc.fence - gb.fence, gd.fence - gc.fence);
}

}  // namespace

TEST_CASE("clock: forward then back while locks are held, kept and waited for: fences keep rising (Redis)",
          "[clock][redis]") {
  RedisClockLab lab;
  forward_then_back(lab);
}

#ifdef PATHLOCK_TEST_WITH_POSTGRES
TEST_CASE("clock: forward then back while locks are held, kept and waited for: fences keep rising (PostgreSQL)",
          "[clock][postgres]") {
  PostgresClockLab lab;
  forward_then_back(lab);
}
#endif

// ---------------------------------------------------------------------------
// c'. Forward, the namespace idle for longer than Redis's expiry margin
// (every key of it expires on the clock that is ahead, its last fence with
// them), then back.

namespace {

void forward_idle_back(ClockLab& lab) {
  const std::string ns = unique_namespace("clock-idle");
  const auto a = lab.engine(), b = lab.engine();
  const ScratchDir scratch{"clock"};
  History history{scratch, "history.log"};
  INFO(lab.name() << ": history in " << scratch.dir());

  lab.step_to(kForward);
  const Held ha = hold(*a, delete_folder(ns, "A", "/p/A"));
  const Grant& ga = ha.got.grant;
  FencedStore store;
  CHECK(store.write(*a, ns, ga, "/p/A/f"));
  const std::int64_t released_a = monotonic_ns();
  CHECK(a->release(ns, ga.id, ga.token));
  // Redis: the keys expire at the latest end set (lease end, fence time) +
  // the margin, rounded up to a second; wait on the server's clock past it.
  const std::int64_t fence_ms = static_cast<std::int64_t>(ga.fence / 1000);
  const std::int64_t idle_until = fence_ms + kTtl.count() + kRedisExpiryMarginMs + 1500;
  REQUIRE(idle_until - lab.server_ms() < 20000);
  // Polled on the server's own clock: a wait of as many ms on this process's
  // monotonic clock can end with the server's (ms, truncated) reading
  // exactly idle_until, or short of it if the wall clock is being slewed.
  REQUIRE(until([&] { return lab.server_ms() > idle_until; }, 30s));
  REQUIRE(until([&] { return lab.namespace_expired(ns); }, 5s));

  lab.step_to(0s);  // back by kForward, with nothing of the namespace left on Redis
  const Held hb = hold(*b, delete_folder(ns, "B", "/p/A"));
  const Grant& gb = hb.got.grant;
  CHECK(gb.fence > ga.fence);
  CHECK(store.write(*b, ns, gb, "/p/A/f"));  // a lower fence would lock B out of its own storage
  const std::int64_t released_b = monotonic_ns();
  CHECK(b->release(ns, gb.id, gb.token));

  history.hold(ha.request, ga, ha.sent, ha.from, std::min(released_a, vouched_end(ha.from)));
  history.hold(hb.request, gb, hb.sent, hb.from, std::min(released_b, vouched_end(hb.from)));
  check_clean(history);
  std::cout << fmt::format(
      "clock, {}: step +{} s, namespace idle {:.1f} s, step back: B's fence {} A's by {} us\n", lab.name(),
      kForward.count(), ms_between(released_a, hb.sent) / 1000,
      gb.fence > ga.fence ? "above" : "BELOW",
      gb.fence > ga.fence ? gb.fence - ga.fence : ga.fence - gb.fence);
}

}  // namespace

// On Redis the namespace's fence lives in its keys, which expire with the
// namespace (docs/lua-protocol.md#expiry): after a step back by more than
// the time since the keys' expiry, the clock part of the next fence is below
// the last one. The library's fence floor (the highest fence it issued,
// kept by the server's Lua state) holds it up. (Failed before the floor:
// the next fence was 45.5 s below the last, in three runs.)
TEST_CASE("clock: forward, idle past the expiry margin, then back: fences keep rising (Redis)",
          "[clock][redis]") {
  RedisClockLab lab;
  forward_idle_back(lab);
}

#ifdef PATHLOCK_TEST_WITH_POSTGRES
TEST_CASE("clock: forward, idle past the expiry margin, then back: fences keep rising (PostgreSQL)",
          "[clock][postgres]") {
  PostgresClockLab lab;
  forward_idle_back(lab);
}
#endif
