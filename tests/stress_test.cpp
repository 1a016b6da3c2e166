// Crash safety and a multi-process stress run against one real redis-server.
//
// Stress: several `pathlock-stress run` processes with several threads each
// take random overlapping locks; `pathlock-stress check` then proves from
// their logs that no two conflicting locks were ever held at once.
// Crash: a `pathlock shell` process holding locks is killed with SIGKILL; its
// locks stay refused until their lease ends, then free themselves, and the
// namespace holds no lock data afterwards.
#include "support/backends.hpp"
#include "support/process.hpp"
#include "support/redis_server.hpp"

#include <pathlock/engine.hpp>
#include <pathlock/factory.hpp>

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

using namespace pathlock;
using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;
using test::read_line;
using test::spawn;
using test::wait_exit;

TEST_CASE("checker: a log with two conflicting holds at once is a violation", "[stress]") {
  // The checker must be able to fail: a hand-written log where a
  // delete_folder and an upload inside it overlap in time.
  const test::ScratchDir scratch("checker");
  const std::string bad = scratch.path("bad_stress.log"), good = scratch.path("good_stress.log");
  std::ofstream(bad) << "hold\t1\tdelete_folder\ttarget=/p/A\t100\t200\t1:0\n"
                     << "hold\t2\tupload\ttarget=/p/A/x\t150\t250\t2:0\n"
                     << "hold\t3\tupload\ttarget=/p/B\t150\t250\t2:1\n";
  std::ofstream(good) << "hold\t1\tupload\ttarget=/p/A\t100\t200\t1:0\n"
                      << "hold\t2\tcreate\ttarget=/p/A\t150\t250\t2:0\n"
                      << "hold\t3\tdelete_folder\ttarget=/p/A\t250\t300\t2:1\n";
  CHECK(wait_exit(spawn({PATHLOCK_STRESS, "check", bad})) == 1);
  CHECK(wait_exit(spawn({PATHLOCK_STRESS, "check", good})) == 0);
}

TEST_CASE("checker: fences that go back or name two locks are violations", "[stress]") {
  // Fields after the 7 of a hold: sent_ns, lock id, holds. Lock b was asked
  // for (sent 300) after lock a answered (granted 200), so its fence must be
  // higher; c was asked for before a answered, so it may be lower.
  auto hold = [](int fence, const char* path, int sent, int from, int to, const char* id, int holds) {
    return fmt::format("hold\t{}\tupload\ttarget={}\t{}\t{}\t1:0\t{}\t{}\t{}\n", fence, path, from, to, sent, id,
                       holds);
  };
  const test::ScratchDir scratch("fences");
  const std::string ok = scratch.path("fence_ok.log"), back = scratch.path("fence_back.log"),
                    reused = scratch.path("fence_reused.log"), bad_line = scratch.path("fence_bad_line.log");
  std::ofstream(ok) << hold(5, "/p/a", 100, 200, 210, "a", 1) << hold(4, "/p/c", 150, 260, 270, "c", 1)
                    << hold(6, "/p/b", 300, 310, 320, "b", 1)
                    // a reentry keeps its old fence, however late
                    << hold(4, "/p/c", 400, 410, 420, "c", 2) << "maybe\tupload\ttarget=/p/d\t500\t900\t1000\t1:0\n";
  std::ofstream(back) << hold(5, "/p/a", 100, 200, 210, "a", 1) << hold(3, "/p/b", 300, 310, 320, "b", 1);
  std::ofstream(reused) << hold(5, "/p/a", 100, 200, 210, "a", 1) << hold(5, "/p/b", 300, 310, 320, "b", 2);
  std::ofstream(bad_line) << "maybe\tupload\ttarget=/p/d\t500\n";
  CHECK(wait_exit(spawn({PATHLOCK_STRESS, "check", ok})) == 0);
  CHECK(wait_exit(spawn({PATHLOCK_STRESS, "check", back})) == 1);
  CHECK(wait_exit(spawn({PATHLOCK_STRESS, "check", reused})) == 1);
  CHECK(wait_exit(spawn({PATHLOCK_STRESS, "check", bad_line})) == 1);  // no evidence either
  CHECK(wait_exit(spawn({PATHLOCK_STRESS, "check", scratch.path("missing.log")})) == 1);
}

TEST_CASE("several processes with several threads never hold conflicting locks", "[stress][redis]") {
  auto& server = test::shared_redis_server();
  const std::string ns = test::unique_namespace("stress");
  constexpr int kProcesses = 3;
  std::vector<pid_t> pids;
  std::vector<std::string> logs;
  const test::ScratchDir scratch("stress");
  INFO("logs in " << scratch.dir());
  for (int p = 0; p < kProcesses; ++p) {
    logs.push_back(scratch.path(fmt::format("stress-{}-{}.log", ns, p)));
    pids.push_back(spawn({PATHLOCK_STRESS, "run", "--backend", "redis", "--redis", server.url(), "--namespace", ns,
                          "--threads", "4", "--ops", "400", "--seed", std::to_string(p + 1), "--log", logs.back()}));
  }
  for (const pid_t pid : pids) CHECK(wait_exit(pid) == 0);
  std::vector<std::string> check{PATHLOCK_STRESS, "check"};
  check.insert(check.end(), logs.begin(), logs.end());
  CHECK(wait_exit(spawn(check)) == 0);
  std::size_t holds = 0;
  for (const auto& log : logs) {
    std::ifstream in(log);
    for (std::string line; std::getline(in, line);) ++holds;
  }
  CHECK(holds > 500);
  // Every lock was released: only the namespace's matrix binding and its
  // fence counter remain.
  CHECK(server.keys("pl:{" + ns + "}:*") ==
        std::vector<std::string>{"pl:{" + ns + "}:meta"});
}

TEST_CASE("locks of a killed process free themselves after their lease", "[crash][redis]") {
  auto& server = test::shared_redis_server();
  const std::string ns = test::unique_namespace("crash");
  int to_child[2], from_child[2];
  REQUIRE(pipe(to_child) == 0);
  REQUIRE(pipe(from_child) == 0);
  const pid_t shell = spawn({PATHLOCK_CLI, "shell", "--backend", "redis", "--redis", server.url(), "--namespace", ns},
                            to_child[0], from_child[1]);
  close(to_child[0]);
  close(from_child[1]);
  auto ask = [&](const std::string& line) {
    const std::string data = line + "\n";
    REQUIRE(write(to_child[1], data.data(), data.size()) == static_cast<ssize_t>(data.size()));
    return nlohmann::json::parse(read_line(from_child[0]));
  };
  // The leases start when the grants are made, which is after this instant:
  // the locks cannot be free before it + 2 s (lower bounds stay true however
  // slow a loaded machine is).
  const auto before_grants = SteadyClock::now();
  REQUIRE(ask("acquire victim delete_folder /p/A ttl=2000")["granted"] == true);
  REQUIRE(ask("acquire victim move_folder /p/B /p/C ttl=2000")["granted"] == true);
  REQUIRE(kill(shell, SIGKILL) == 0);
  CHECK(wait_exit(shell) == 128 + SIGKILL);
  close(to_child[1]);
  close(from_child[0]);

  EngineOptions opts;
  opts.backend = Backend::redis;
  opts.redis.url = server.url();
  auto engine = make_engine(opts);
  const auto refused = engine->acquire(LockRequest{ns, "survivor", "upload", {{"target", "/p/A/x"}}});
  REQUIRE_FALSE(refused.granted());  // the dead process's lock is still within its lease
  CHECK(refused.conflict.owner == "victim");
  // Each lock frees itself when its own lease ends; the second was granted a
  // little after the first, so each is polled for on its own.
  const auto poll_until_granted = [&](const char* op, const char* path) {
    AcquireResult r;
    for (int i = 0; i < 500 && !r.granted(); ++i) {
      std::this_thread::sleep_for(20ms);
      r = engine->acquire(LockRequest{ns, "survivor", op, {{"target", path}}});
    }
    return r;
  };
  const AcquireResult got = poll_until_granted("upload", "/p/A/x");
  REQUIRE(got.granted());  // freed by the lease, not by anyone releasing it
  CHECK(SteadyClock::now() - before_grants >= 1950ms);  // 50 ms for server vs local clock rounding
  const AcquireResult other = poll_until_granted("create", "/p/C");
  REQUIRE(other.granted());
  CHECK(SteadyClock::now() - before_grants >= 1950ms);
  REQUIRE(engine->release(ns, got.grant.id, got.grant.token));
  REQUIRE(engine->release(ns, other.grant.id, other.grant.token));
  CHECK(engine->list(ns).empty());
  CHECK(server.keys("pl:{" + ns + "}:*") ==
        std::vector<std::string>{"pl:{" + ns + "}:meta"});
}

// The soak mode, short (docs/benchmarks.md, "Soak"): 20 s of four worker
// processes with abandoned locks, waits and cancellations, one killed and
// replaced every ~1.5 s; the history checks clean and every kind of event
// happened. Hidden from the case list: its own CTest (stress_soak, label
// stress) with its own time limit.
TEST_CASE("soak: kills, abandoned locks, waits and cancellations, and no violation", "[.][soak]") {
  auto& server = test::shared_redis_server();
  const std::string ns = test::unique_namespace("soak");
  const test::ScratchDir scratch("soak");
  INFO("logs in " << scratch.dir());
  const std::string report = scratch.path("report.json"), table = scratch.path("table.txt");
  const int out = open(table.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(out >= 0);
  const pid_t soak = spawn({PATHLOCK_STRESS, "soak", "--backend", "redis", "--redis", server.url(), "--namespace", ns,
                            "--dir", scratch.path("workers"), "--duration", "20000", "--interval", "4000",
                            "--kill-every", "1500", "--ttl", "1000", "--abandon", "20", "--cancel", "10", "--report",
                            report},
                           -1, out);
  close(out);
  CHECK(wait_exit(soak, 100s) == 0);
  std::ifstream table_in(table);
  for (std::string line; std::getline(table_in, line);)
    if (line.find("VIOLATION") != std::string::npos) UNSCOPED_INFO(line);
  std::ifstream in(report);
  REQUIRE(in);
  const nlohmann::json r = nlohmann::json::parse(in);
  INFO(r.dump());
  CHECK(r["readable"] == true);
  CHECK(r["violations"] == 0);
  CHECK(r["fence_violations"] == 0);
  CHECK(r["failed_workers"] == 0);
  CHECK(r["holds"].get<long>() > 500);
  CHECK(r["abandoned"].get<long>() > 0);
  CHECK(r["cancelled"].get<long>() > 0);
  CHECK(r["waits"].get<long>() > 0);
  CHECK(r["kills"].get<long>() >= 5);
  CHECK(r["restarts"] == r["kills"]);
  CHECK(r["memory_start"].get<long>() > 0);
  CHECK(r["memory_after_leases"].get<long>() > 0);
  // One row per interval (5), with latency and memory figures.
  std::ifstream rows(table);
  int data_rows = 0;
  for (std::string line; std::getline(rows, line);) data_rows += line.rfind("| ", 0) == 0 && line.find("| end s") ? 1 : 0;
  CHECK(data_rows >= 5);
}
