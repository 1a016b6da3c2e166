// Fault injection: a multi-process stress run while the Redis server fails.
//
// Several `pathlock-stress run` processes take random overlapping locks on
// one namespace of a private redis-server that keeps every acknowledged
// write (`appendonly yes`, `appendfsync always`), while this test, in
// rounds:
//   - kills every ordinary connection (CLIENT KILL TYPE normal): pooled
//     connections die idle or mid-call;
//   - stalls the server beyond the clients' command timeout (DEBUG SLEEP):
//     calls time out with an unknown outcome and run later;
//   - SIGKILLs the server and restarts it on the same port from its AOF:
//     calls fail to connect, then meet a server still loading.
// The stress processes count the errors, back off and log what they know
// (tools/dev/stress/stress.cpp). Afterwards:
//   - `pathlock-stress check` finds no two conflicting locks held at once
//     and fences strictly increasing in grant order across the whole
//     history (restarts included), and a lock taken after the run gets a
//     fence above every logged one;
//   - once every lease and place in line has ended, calls reap the
//     namespace down to the keys a drained namespace keeps
//     (support/namespace_keys.hpp).
// It prints the number of operations and faults.
#include "support/backends.hpp"
#include "support/namespace_keys.hpp"
#include "support/process.hpp"
#include "support/redis_server.hpp"

#include <pathlock/engine.hpp>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <thread>

using namespace pathlock;
using namespace std::chrono_literals;
using test::spawn;
using test::wait_exit;

namespace {

constexpr int kProcesses = 3;
constexpr int kThreads = 3;
constexpr int kTtlMs = 1500;            // short leases: locks lost with a reply end soon
constexpr int kCommandTimeoutMs = 300;  // a stall of 1 s is well beyond it
constexpr int kRounds = 2;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Sums "<N> <label>" over the summary lines the stress processes printed.
long total(const std::vector<std::string>& outputs, const std::string& label) {
  long sum = 0;
  const std::regex number("([0-9]+) " + label);
  for (const std::string& out : outputs)
    for (auto it = std::sregex_iterator(out.begin(), out.end(), number); it != std::sregex_iterator(); ++it)
      sum += std::stol((*it)[1]);
  return sum;
}

}  // namespace

TEST_CASE("stress survives connection kills, stalls and server restarts without breaking a lock",
          "[fault][redis]") {
  test::RedisServer server({"--appendonly", "yes", "--appendfsync", "always", "--enable-debug-command", "local"});
  const std::string ns = test::unique_namespace("fault");
  const int duration_ms = kRounds * 4500 + 500;

  std::vector<std::string> logs, outs;
  const test::ScratchDir scratch("fault");
  INFO("logs in " << scratch.dir());
  std::vector<test::ChildGuard> children(kProcesses);
  for (int p = 0; p < kProcesses; ++p) {
    logs.push_back(scratch.path(fmt::format("fault-{}-{}.log", ns, p)));
    outs.push_back(scratch.path(fmt::format("fault-{}-{}.out", ns, p)));
    const int out_fd = ::open(outs.back().c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(out_fd >= 0);
    children[static_cast<std::size_t>(p)].pid =
        spawn({PATHLOCK_STRESS, "run", "--backend", "redis", "--redis", server.url(), "--namespace", ns, "--threads",
               std::to_string(kThreads), "--duration", std::to_string(duration_ms), "--ttl", std::to_string(kTtlMs),
               "--command-timeout", std::to_string(kCommandTimeoutMs), "--max-backend-errors", "1000000", "--seed",
               std::to_string(p + 1), "--log", logs.back()},
              -1, out_fd);
    ::close(out_fd);
  }

  // Faults start once every process has connected (its connections are
  // named pathlock-<pid>).
  const auto connected = [&] {
    const std::string clients = server.command({"CLIENT", "LIST", "TYPE", "normal"}).str;
    for (const test::ChildGuard& child : children)
      if (clients.find(fmt::format("name=pathlock-{} ", child.pid)) == std::string::npos) return false;
    return true;
  };
  REQUIRE(devtools::until(connected, 10s));
  // ... and got going: each process's threads have called the library.
  const auto fcalls = [&] { return test::command_calls(server, "fcall"); };
  devtools::wait_for("fault test", "the stress processes to call the library",
                     [&] { return fcalls() >= kProcesses * kThreads; });
  // After a fault, the next one waits until the processes call again: as
  // many more calls as they have threads (the count starts at 0 on a
  // restarted server).
  const auto called_again = [&](long long since) {
    return devtools::until([&] { return fcalls() >= since + kProcesses * kThreads; }, 4s);
  };

  long clients_killed = 0, kill_rounds = 0, stalls = 0, restarts = 0;
  for (int round = 0; round < kRounds; ++round) {
    const long long before_kill = fcalls();
    const test::RedisReply killed = server.command({"CLIENT", "KILL", "TYPE", "normal"});
    REQUIRE(killed.type == test::RedisReply::Type::integer);
    clients_killed += killed.integer;
    ++kill_rounds;
    REQUIRE(called_again(before_kill));

    const long long before_stall = fcalls();
    const test::RedisReply slept = server.command({"DEBUG", "SLEEP", "1"});  // returns when the stall ends
    INFO(slept.str);
    REQUIRE_FALSE(slept.is_error());
    ++stalls;
    REQUIRE(called_again(before_stall));

    server.kill_hard();
    std::this_thread::sleep_for(300ms);  // the outage itself (a fault's length), not a wait for a state
    server.restart();
    ++restarts;
    REQUIRE(called_again(0));
  }

  for (test::ChildGuard& child : children) {
    const pid_t pid = child.pid;
    child.pid = -1;
    CHECK(wait_exit(pid) == 0);
  }
  // From here no client sends anything, and the server is not stalled: any
  // call still on the way has run. Every lease (kTtlMs) and every place in
  // line (2 s reservation) ends within this wait.
  const auto quiet_since = std::chrono::steady_clock::now();

  std::vector<std::string> outputs;
  for (const std::string& out : outs) outputs.push_back(slurp(out));
  for (const std::string& out : outputs) INFO(out);

  std::vector<std::string> check{PATHLOCK_STRESS, "check"};
  check.insert(check.end(), logs.begin(), logs.end());
  CHECK(wait_exit(spawn(check)) == 0);

  std::uint64_t highest_fence = 0;
  long holds = 0, maybe = 0;
  for (const std::string& log : logs) {
    std::ifstream in(log);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("maybe\t", 0) == 0) {
        ++maybe;
        continue;
      }
      ++holds;
      const std::size_t tab = line.find('\t');
      highest_fence = std::max<std::uint64_t>(highest_fence, std::stoull(line.substr(tab + 1)));
    }
  }
  const long attempts = total(outputs, "attempts"), errors = total(outputs, "backend errors");
  std::cout << fmt::format(
      "fault test: {} processes x {} threads, {} lock attempts ({} grants, {} refusals, {} renews), "
      "{} backend errors, {} acquires with unknown outcome; faults: {} CLIENT KILL rounds ({} connections), "
      "{} DEBUG SLEEP 1 s stalls, {} SIGKILL restarts\n",
      kProcesses, kThreads, attempts, total(outputs, "grants"), total(outputs, "refusals"), total(outputs, "renews"),
      errors, maybe, kill_rounds, clients_killed, stalls, restarts);
  CHECK(holds > 100);         // the run did work ...
  CHECK(errors > 0);          // ... and the faults reached it
  CHECK(clients_killed > 0);

  std::this_thread::sleep_until(quiet_since + std::chrono::milliseconds(std::max(kTtlMs, 2000) + 500));
  auto engine = test::redis_engine(server.url());
  // Each call reaps a bounded number of expired entries; a few calls drain
  // whatever the run left.
  int reaping_calls = 0;
  while (reaping_calls < 20 && !test::keys_left_after_drain(server, ns).empty()) {
    CHECK(engine->list(ns).empty());
    test::reap_by_a_write(*engine, ns);
    ++reaping_calls;
  }
  INFO("reaping calls: " << reaping_calls);
  CHECK(test::keys_left_after_drain(server, ns).empty());

  // The fence counter survived every restart: a new lock outranks them all.
  const AcquireResult after = engine->acquire(LockRequest{ns, "after", "delete_folder", {{"target", "/p"}}});
  REQUIRE(after.granted());
  CHECK(after.grant.fence > highest_fence);
  CHECK(engine->release(ns, after.grant.id, after.grant.token));
  CHECK(test::keys_left_after_drain(server, ns).empty());
  CHECK_FALSE(test::tagged_keys(server, ns).empty());  // the check looked at the right keys
}
