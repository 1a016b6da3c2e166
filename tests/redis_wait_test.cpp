// Waiting and fairness on the Redis backend, against real redis-servers:
// what tests/waiting_test.cpp (run on every backend) cannot see from the API.
//
//   * a waiter whose process is SIGKILLed keeps its place in line only for
//     its reservation lease, then is reaped and leaves no key behind;
//   * a live waiter keeps its place beyond one reservation lease (refreshes);
//   * waiting is woken by SPUBLISH, not by polling: few function calls during a
//     quiet wait, and a release wakes a waiter within milliseconds;
//   * every way of leaving the line (granted, deadline, error) removes the
//     place, so an emptied namespace holds only meta;
//   * degraded set-ups: a subscription killed by the server is reopened; an
//     ACL user without channel rights still waits (timer only) and releases;
//   * the extended acquire ARGV and the leave function, called directly as
//     docs/lua-protocol.md says.
// Tests that count commands, kill connections or change configuration use a
// private RedisServer so nothing else runs on it.
#include "support/backends.hpp"
#include "support/process.hpp"
#include "support/namespace_keys.hpp"
#include "support/redis_server.hpp"
#include "support/waiting_probe.hpp"

#include <pathlock/engine.hpp>

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <random>
#include <thread>

using namespace pathlock;
using namespace std::chrono_literals;
using namespace pathlock::test;  // servers, engines and key helpers of support/
using SteadyClock = std::chrono::steady_clock;

namespace {

Millis since(SteadyClock::time_point t) { return std::chrono::duration_cast<Millis>(SteadyClock::now() - t); }

AcquireResult take(LockEngine& engine, const std::string& ns, const std::string& owner, const std::string& op,
                   const std::string& path, Millis wait = 0ms, bool fair = true, Millis ttl = 30000ms) {
  LockRequest r{ns, owner, op, {{"target", path}}, ttl, wait};
  r.fair = fair;
  return engine.acquire(r);
}

// A lock the test holds: take() without waiting, which must be granted.
AcquireResult hold(LockEngine& engine, const std::string& ns, const std::string& owner, const std::string& op,
                   const std::string& path) {
  AcquireResult r = take(engine, ns, owner, op, path);
  REQUIRE(r.granted());
  return r;
}

// Waits until a fair wait=0 probe `probe_op` on `path` is refused by
// `owner`'s place in line.
void until_queued(LockEngine& engine, const std::string& ns, const std::string& owner, const std::string& probe_op,
                  const std::string& path) {
  for (int i = 0; i < 1000; ++i) {
    const auto probe = take(engine, ns, "probe", probe_op, path);
    if (probe.granted()) REQUIRE(engine.release(ns, probe.grant.id, probe.grant.token));
    if (!probe.granted() && probe.conflict.queued && probe.conflict.owner == owner) return;
    std::this_thread::sleep_for(2ms);
  }
  FAIL("the waiter never appeared in the queue");
}

// Releases the lock granted as `last`, the last one of `ns`, and checks
// that the namespace has drained: only meta is left.
void release_last(LockEngine& engine, const RedisServer& server, const std::string& ns, const AcquireResult& last) {
  REQUIRE(engine.release(ns, last.grant.id, last.grant.token));
  CHECK(ns_keys(server, ns) == kOnlyMeta);
}

}  // namespace

TEST_CASE("a killed waiter holds its place only until its reservation lease ends", "[redis][wait][crash]") {
  const RedisServer& server = shared_redis_server();
  auto engine = redis_engine(server.url());
  const std::string ns = test::unique_namespace("deadwaiter");
  // An upload below /p/A is held for the whole test: the victim's
  // delete_folder /p/A can only wait.
  const auto upload = hold(*engine, ns, "u", "upload", "/p/A/f");

  // Close-on-exec: the shell must inherit only its own ends (as 0 and 1).
  int to_child[2], from_child[2];
  REQUIRE(pipe2(to_child, O_CLOEXEC) == 0);
  REQUIRE(pipe2(from_child, O_CLOEXEC) == 0);
  ChildGuard guard;
  const pid_t shell = guard.pid = spawn(
      {PATHLOCK_CLI, "shell", "--backend", "redis", "--redis", server.url(), "--namespace", ns}, to_child[0],
      from_child[1]);
  close(to_child[0]);
  close(from_child[1]);
  const std::string line = "acquire victim delete_folder /p/A wait=5000\n";
  REQUIRE(write(to_child[1], line.data(), line.size()) == static_cast<ssize_t>(line.size()));
  until_queued(*engine, ns, "victim", "create", "/p/A");
  // Wait until it refreshes its reservation: a probe then finds more of the
  // reservation left than the probe before it did.
  bool refreshed = false;
  Millis left = take(*engine, ns, "probe", "create", "/p/A").conflict.expires_in;
  for (int i = 0; i < 1000 && !refreshed; ++i) {
    std::this_thread::sleep_for(5ms);
    const auto probe = take(*engine, ns, "probe", "create", "/p/A");
    refreshed = !probe.granted() && probe.conflict.owner == "victim" && probe.conflict.expires_in > left;
    left = probe.conflict.expires_in;
  }
  REQUIRE(refreshed);
  REQUIRE(kill(shell, SIGKILL) == 0);
  const auto killed_at = SteadyClock::now();
  int status = 0;
  REQUIRE(waitpid(shell, &status, 0) == shell);
  guard.pid = -1;
  CHECK(WIFSIGNALED(status));
  close(to_child[1]);
  close(from_child[0]);  // the shell never answered: it was still waiting

  // At first the dead waiter's place still refuses a fair newcomer...
  const auto first = take(*engine, ns, "newcomer", "create", "/p/A");
  REQUIRE_FALSE(first.granted());
  CHECK(first.conflict.queued);
  CHECK(first.conflict.owner == "victim");
  CHECK(first.conflict.op == "delete_folder");
  CHECK(first.conflict.path == "/p/A");
  CHECK(first.conflict.expires_in <= 2000ms);  // a reservation, never the whole wait
  CHECK(ns_keys(server, ns).size() > 2);
  // ...and once its reservation lease ends, nothing of it is left.
  AcquireResult got;
  while (!got.granted() && since(killed_at) < 5000ms) {
    std::this_thread::sleep_for(25ms);
    got = take(*engine, ns, "newcomer", "create", "/p/A");
    if (!got.granted()) CHECK(got.conflict.owner == "victim");
  }
  REQUIRE(got.granted());
  const Millis freed_after = since(killed_at);
  CHECK(freed_after >= 1000ms);  // it had just refreshed a 2 s reservation
  CHECK(freed_after < 2600ms);   // and no longer: not the 5 s it wanted to wait
  REQUIRE(engine->release(ns, got.grant.id, got.grant.token));
  release_last(*engine, server, ns, upload);
}

TEST_CASE("a live waiter keeps its place beyond one reservation lease", "[redis][wait][fair]") {
  // Each attempt refreshes the 2 s reservation. Were it not refreshed, the
  // first waiter's place would lapse at 2 s and it would rejoin at the back,
  // behind a younger waiter: the probe at 2.3 s would then name the younger.
  const RedisServer& server = shared_redis_server();
  auto engine = redis_engine(server.url());
  const std::string ns = test::unique_namespace("longwait");
  const auto upload = hold(*engine, ns, "u", "upload", "/p/A/f");
  const auto start = SteadyClock::now();
  auto older = std::async(std::launch::async, [&] { return take(*engine, ns, "d", "delete_folder", "/p/A", 2800ms); });
  until_queued(*engine, ns, "d", "create", "/p/A");
  std::this_thread::sleep_for(500ms - since(start));
  auto younger =
      std::async(std::launch::async, [&] { return take(*engine, ns, "r", "rename_folder", "/p/A", 2300ms); });
  devtools::until([&] { return server.command({"ZCARD", prefix_of(ns) + "wq"}).integer >= 2; });
  REQUIRE(server.command({"ZCARD", prefix_of(ns) + "wq"}).integer == 2);
  std::this_thread::sleep_for(2300ms - since(start));  // past the older one's first reservation
  const auto probe = take(*engine, ns, "c", "create", "/p/A");
  REQUIRE_FALSE(probe.granted());
  CHECK(probe.conflict.queued);
  CHECK(probe.conflict.owner == "d");  // still first in line
  CHECK(probe.conflict.expires_in <= 2000ms);
  const auto timed_out = older.get();
  CHECK_FALSE(timed_out.granted());
  CHECK(timed_out.conflict.id == upload.grant.id);
  CHECK_FALSE(younger.get().granted());
  // The deadlines' last attempts left the line.
  const auto after = take(*engine, ns, "c", "create", "/p/A");
  CHECK(after.granted());
}

TEST_CASE("a quiet wait costs a few attempts, and a release wakes the waiter at once", "[redis][wait]") {
  RedisServer server;  // private: its command counts are this test's alone
  auto engine = redis_engine(server.url());
  const std::string ns = "quiet";
  const auto held = hold(*engine, ns, "h", "delete_folder", "/p/A");
  REQUIRE_FALSE(server.command({"CONFIG", "RESETSTAT"}).is_error());
  const auto start = SteadyClock::now();
  const auto refused = take(*engine, ns, "w", "upload", "/p/A/x", 1000ms);
  CHECK_FALSE(refused.granted());
  CHECK(since(start) >= 1000ms);
  const long long attempts = test::command_calls(server, "fcall");
  INFO("acquire script calls during a 1 s wait: " << attempts);
  CHECK(attempts >= 2);   // it did look again
  CHECK(attempts <= 12);  // about one per 200 ms re-check; 1 ms polling would be ~1000
  CHECK(test::command_calls(server, "ssubscribe") == 1);

  // Wake-up latency: release at a random moment of a long wait, uniformly
  // spread over one re-check period. With PUBLISH the waiter is granted
  // within a few ms; re-checking every 200 ms alone would take 100 ms on
  // average (a median under 25 ms of 7 rounds would then be a 1-in-100 fluke).
  std::mt19937 rng(42);
  std::vector<long long> latencies;
  AcquireResult blocker = held;
  for (int round = 0; round < 7; ++round) {
    std::atomic<std::int64_t> granted_at{0};
    const int waits_before = test::times_waited(ns, "w");
    auto waiter = std::async(std::launch::async, [&] {
      auto r = take(*engine, ns, "w", "upload", "/p/A/x", 5000ms);
      granted_at = SteadyClock::now().time_since_epoch().count();
      return r;
    });
    // Once it is refused and asleep, release at a moment spread uniformly
    // over its re-check period (the sleep is the experiment, not a wait for it).
    REQUIRE(test::until_waiting(ns, "w", waits_before + 1));
    std::this_thread::sleep_for(Millis{rng() % 200});
    REQUIRE(engine->release(ns, blocker.grant.id, blocker.grant.token));
    const auto released_at = SteadyClock::now().time_since_epoch().count();
    const auto got = waiter.get();
    REQUIRE(got.granted());
    latencies.push_back(std::max<std::int64_t>(0, granted_at - released_at) / 1000000);
    REQUIRE(engine->release(ns, got.grant.id, got.grant.token));
    blocker = take(*engine, ns, "h", "delete_folder", "/p/A");
    REQUIRE(blocker.granted());
  }
  std::sort(latencies.begin(), latencies.end());
  INFO("wake-up latencies (ms): " << fmt::format("{}", fmt::join(latencies, ", ")));
  CHECK(latencies[3] < 25);
  release_last(*engine, server, ns, blocker);
}

TEST_CASE("a wake-up about another path does not cost the waiter an attempt", "[redis][wait]") {
  RedisServer server;
  auto engine = redis_engine(server.url());
  const std::string ns = "filter";
  const auto held = hold(*engine, ns, "h", "upload", "/p/A/f");
  const int waits_before = test::times_waited(ns, "w");
  auto waiter = std::async(std::launch::async, [&] { return take(*engine, ns, "w", "delete_folder", "/p/A", 700ms); });
  until_queued(*engine, ns, "w", "create", "/p/A");
  REQUIRE(test::until_waiting(ns, "w", waits_before + 1));  // asleep and subscribed: its first calls are done
  REQUIRE_FALSE(server.command({"CONFIG", "RESETSTAT"}).is_error());
  // 200 acquire + release pairs on /q: 200 wake-ups the waiter must ignore.
  for (int i = 0; i < 200; ++i) {
    const auto g = hold(*engine, ns, "other", "upload", "/q/f");
    REQUIRE(engine->release(ns, g.grant.id, g.grant.token));
  }
  CHECK(test::command_calls(server, "spublish") >= 200);
  CHECK_FALSE(waiter.get().granted());
  // 400 calls by this thread, plus the waiter's few re-checks.
  const long long scripts = test::command_calls(server, "fcall");
  INFO("script calls: " << scripts);
  CHECK(scripts <= 400 + 10);
  release_last(*engine, server, ns, held);
}

TEST_CASE("waiters leave no data behind: granted, timed out, fair or not", "[redis][wait][keys]") {
  const RedisServer& server = shared_redis_server();
  auto engine = redis_engine(server.url());
  const std::string ns = test::unique_namespace("waitclean");
  const std::vector<std::string> ops{"create", "upload", "delete_folder", "rename_folder", "delete_file"};
  const std::vector<std::string> paths{"/p", "/p/A", "/p/A/C", "/p/A/C/D", "/p/B", "/q"};
  std::atomic<int> granted{0}, timed_out{0}, queued_refusals{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 5; ++t)
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t + 1));
      for (int i = 0; i < 40; ++i) try {
          const auto r = take(*engine, ns, "t" + std::to_string(t), ops[rng() % ops.size()],
                              paths[rng() % paths.size()], Millis{rng() % 60}, rng() % 4 != 0,
                              Millis{5 + rng() % 40});
          if (!r.granted()) {
            ++timed_out;
            if (r.conflict.queued) ++queued_refusals;
            continue;
          }
          ++granted;
          std::this_thread::sleep_for(Millis{rng() % 8});
          if (rng() % 5) engine->release(ns, r.grant.id, r.grant.token);  // else: left to expire
        } catch (const std::exception&) {
          ++errors;
        }
    });
  for (auto& th : threads) th.join();
  CHECK(errors == 0);
  CHECK(granted > 20);
  CHECK(timed_out > 0);
  INFO("granted " << granted << ", refused " << timed_out << " (" << queued_refusals << " by a waiter)");
  // The unreleased leases (<= 45 ms) end, and any call reaps them.
  const auto deadline = SteadyClock::now() + 10s;
  while (ns_keys(server, ns) != kOnlyMeta && SteadyClock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
    test::reap_by_a_write(*engine, ns);
  }
  CHECK(ns_keys(server, ns) == kOnlyMeta);
}

TEST_CASE("a waiter whose attempt fails leaves the line", "[redis][wait][config]") {
  RedisServer server;
  auto engine = redis_engine(server.url());
  const std::string ns = "failing";
  const auto upload = hold(*engine, ns, "u", "upload", "/p/A/f");
  auto deleter =
      std::async(std::launch::async, [&] { return take(*engine, ns, "d", "delete_folder", "/p/A", 5000ms); });
  until_queued(*engine, ns, "d", "create", "/p/A");
  REQUIRE(server.command({"HLEN", prefix_of(ns) + "wrec"}).integer == 1);
  // Out of memory: the next refresh of the reservation (a write that adds
  // nothing new, but the script's first) is refused; the error ends the wait
  // and the leave script, which starts with a deletion, still runs.
  REQUIRE_FALSE(server.command({"CONFIG", "SET", "maxmemory", "1"}).is_error());
  CHECK_THROWS_WITH(deleter.get(), Catch::Contains("OOM"));
  CHECK(server.keys(prefix_of(ns) + "w*").empty());
  REQUIRE_FALSE(server.command({"CONFIG", "SET", "maxmemory", "0"}).is_error());
  CHECK(take(*engine, ns, "c", "create", "/p/A").granted());  // nobody in line any more
  for (const LockInfo& l : engine->list(ns)) CHECK(engine->force_release(ns, l.id));
  CHECK(ns_keys(server, ns) == kOnlyMeta);
}

TEST_CASE("a subscription closed by the server is opened again", "[redis][wait][connection]") {
  RedisServer server;
  auto engine = redis_engine(server.url());
  const std::string ns = "resub";
  const std::string channel = prefix_of(ns) + "wake";
  const auto numsub = [&] { return server.command({"PUBSUB", "SHARDNUMSUB", channel}).elements.at(1).integer; };
  const auto held = hold(*engine, ns, "h", "delete_folder", "/p/A");
  auto waiter = std::async(std::launch::async, [&] { return take(*engine, ns, "w", "upload", "/p/A/x", 5000ms); });
  devtools::until([&] { return numsub() == 1; });
  REQUIRE(numsub() == 1);
  REQUIRE(server.command({"CLIENT", "KILL", "TYPE", "pubsub"}).integer == 1);
  devtools::until([&] { return numsub() == 1; });
  CHECK(numsub() == 1);  // subscribed again
  REQUIRE(engine->release(ns, held.grant.id, held.grant.token));
  const auto got = waiter.get();
  REQUIRE(got.granted());
  CHECK(numsub() == 0);  // the wait is over: the dedicated connection is closed
  REQUIRE(engine->release(ns, got.grant.id, got.grant.token));
}

TEST_CASE("a user without channel rights still waits (on the timer) and releases", "[redis][wait][config]") {
  RedisServer server;
  // Redis 7 creates users with resetchannels: no PUBLISH, no SUBSCRIBE.
  REQUIRE_FALSE(server.command({"ACL", "SETUSER", "locker", "on", ">pw", "~*", "+@all"}).is_error());
  const std::string hostport = server.url().substr(std::string("redis://").size());
  auto engine = redis_engine("redis://locker:pw@" + hostport);
  const std::string ns = "noperm";
  const auto held = hold(*engine, ns, "h", "upload", "/p/A/f");
  AcquireResult got;
  const std::string err = test::capture_stderr([&] {
    const int waits_before = test::times_waited(ns, "w");
    auto waiter =
        std::async(std::launch::async, [&] { return take(*engine, ns, "w", "delete_folder", "/p/A", 10000ms); });
    until_queued(*engine, ns, "w", "create", "/p/A");
    // With nothing to wake it, it looks again on the timer: asleep twice.
    CHECK(test::until_waiting(ns, "w", waits_before + 2));
    CHECK(engine->release(ns, held.grant.id, held.grant.token));  // its PUBLISH is refused, not the release
    const auto released_at = SteadyClock::now();
    got = waiter.get();
    CHECK(since(released_at) < 5000ms);  // a 200 ms re-check found it, not the last attempt at 10 s
  });
  REQUIRE(got.granted());
  CHECK_THAT(err, Catch::Contains("SUBSCRIBE") && Catch::Contains("&pl:*"));
  CHECK(engine->release(ns, got.grant.id, got.grant.token));
}

TEST_CASE("the line can be driven by calling the library's functions directly", "[redis][wait][lua]") {
  const RedisServer& server = shared_redis_server();
  const MatrixTable& m = default_matrix();
  const std::string ns = test::unique_namespace("lualine");
  FunctionCaller eval(server.url(), m, ns);
  const auto subscriber = [&] {
    auto s = std::make_unique<test::RedisConnection>(server.url());
    REQUIRE(s->command({"SSUBSCRIBE", prefix_of(ns) + "wake"}).elements.size() == 3);
    return s;
  };
  auto r = eval("acquire", {"holder", "upload", "30000", "id1", "tok1", "", "", "", "/a/f"});
  REQUIRE(r.elements.at(0).str == "granted");
  // A waiter: fair, with a place in line "wA" and a 5 s reservation.
  r = eval("acquire", {"svc", "delete_folder", "30000", "id2", "tok2", "", "", "", "/a", "1", "wA", "5000"});
  REQUIRE(r.elements.size() == 11);
  CHECK(r.elements[0].str == "refused");
  CHECK(r.elements[1].str == "id1");
  CHECK(r.elements[10].integer == 0);
  CHECK(server.command({"ZSCORE", prefix_of(ns) + "wq", "wA"}).str == "1");
  // delete_folder is code 12; the matrix's tag in this namespace is 1, so its
  // global code is 1 * 100 + 12 (docs/lua-protocol.md, layout 3).
  CHECK(server.command({"HGET", prefix_of(ns) + "idx", "wh/a"}).str == "112:1");
  CHECK(server.command({"HGET", prefix_of(ns) + "idx", "wb/"}).str == "112:1");
  // A fair newcomer (the 5-argument form is fair) is refused by the waiter.
  r = eval("acquire", {"new", "create", "30000", "id3", "tok3", "", "", "", "/a"});
  REQUIRE(r.elements.size() == 11);
  CHECK(r.elements[0].str == "refused");
  CHECK(r.elements[1].str == "wA");
  CHECK(r.elements[2].str == "delete_folder");
  CHECK(r.elements[5].str == "svc");
  CHECK(r.elements[6].integer <= 5000);
  CHECK(r.elements[9].str == "same");
  CHECK(r.elements[10].integer == 1);
  // fair = 0 overtakes; its release publishes its path.
  r = eval("acquire", {"new", "create", "30000", "id3", "tok3", "", "", "", "/a", "0", "", "0"});
  REQUIRE(r.elements.at(0).str == "granted");
  {
    auto s = subscriber();
    CHECK(eval("release", {"id3", "tok3"}).elements.at(0).str == "released");
    // The message is already in the subscriber's socket: read it.
    const test::RedisReply msg = s->command({"PING"});  // in subscribe mode PING is answered after the pending message
    CHECK(msg.elements.size() == 3);
    CHECK(msg.elements.at(0).str == "smessage");
    CHECK(msg.elements.at(2).str == "/a");
  }
  // The last attempt (reserve_ms 0) leaves the line when refused.
  r = eval("acquire", {"svc", "delete_folder", "30000", "id2", "tok2", "", "", "", "/a", "1", "wA", "0"});
  CHECK(r.elements.at(0).str == "refused");
  CHECK(server.command({"HEXISTS", prefix_of(ns) + "wrec", "wA"}).integer == 0);
  // Join again, then leave with the leave script.
  eval("acquire", {"svc", "delete_folder", "30000", "id2", "tok2", "", "", "", "/a", "1", "wB", "5000"});
  CHECK(server.command({"HEXISTS", prefix_of(ns) + "wrec", "wB"}).integer == 1);
  // The same place cannot be claimed by another request.
  CHECK(eval("acquire", {"other", "delete_folder", "30000", "id2", "tok2", "", "", "", "/a", "1", "wB", "5000"})
            .elements.at(0).str == "invalid");
  r = eval("leave", {"wB"});
  CHECK(r.elements.at(0).str == "left");
  CHECK(r.elements.at(1).integer == 1);
  CHECK(eval("leave", {"wB"}).elements.at(1).integer == 0);
  for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{
           {"svc", "upload", "100", "i", "t", "", "", "", "/b", "2", "", "0"},         // fair must be 1 or 0
           {"svc", "upload", "100", "i", "t", "", "", "", "/b", "0", "wC", "100"},     // an unfair request takes no place
           {"svc", "upload", "100", "i", "t", "", "", "", "/b", "1", "w/C", "100"},    // bad waiter id
           {"svc", "upload", "100", "i", "t", "", "", "", "/b", "1", "wC", "-1"},      // bad reserve
           {"svc", "upload", "100", "i", "t", "", "", "", "/b", "1", "wC", "1.5"},     // bad reserve
           {"svc", "upload", "100", "i", "t", "", "", "", "/b", "1", "wC"}}) {          // all three or none
    INFO(fmt::format("{}", fmt::join(bad, " ")));
    CHECK(eval("acquire", bad).elements.at(0).str == "invalid");
  }
  // A place whose reservation ended (its client died) is reaped by any
  // call, even one that never looks at the line, like list.
  eval("acquire", {"svc", "delete_folder", "30000", "id2", "tok2", "", "", "", "/a", "1", "wD", "30"});
  CHECK(server.command({"HEXISTS", prefix_of(ns) + "wrec", "wD"}).integer == 1);
  std::this_thread::sleep_for(50ms);
  CHECK(eval("list", {"/nowhere", "10", ""}).elements.at(0).str == "locks");
  CHECK(server.keys(prefix_of(ns) + "w*").empty());
  // Just the upload's counts are left: b/ b/a h/a/f.
  CHECK(server.command({"HLEN", prefix_of(ns) + "idx"}).integer == 3);
  CHECK(eval("release", {"id1", "tok1"}).elements.at(0).str == "released");
  CHECK(ns_keys(server, ns) == kOnlyMeta);
}
