// pathlock_fork_probe: one fresh process that forks in the middle of an
// engine's first call (tests/fork_test.cpp runs it many times; docs/design.md#fork).
//
//   pathlock_fork_probe --backend redis|postgres --url URL [--ca FILE]
//                       --race call|make|exit --spin N
//
// A second thread waits at a sync point (a flag it spins on); the main
// thread raises the flag, spins N iterations, and forks. With `--race call`
// the engine exists before and the thread's first call (an acquire and its
// release) races the fork; with `--race make` the thread makes the engine
// too, so the library's first use in the process races it. With `--race
// exit` the thread makes an engine, locks, and ends; the main thread waits
// until it is ending, spins N and forks, so the fork races the end of a
// thread that used the libraries (OpenSSL frees a thread's state under a
// process-wide lock then). Sweeping N over many fresh processes lands the
// fork at every moment of that first call, or of that end.
//
// The child then works on its own: the engine made before the fork (call)
// or one it makes (make) must grant a real lock, show it held, and release
// it, within 20 s. A child still running then is hung: its threads' stacks
// are printed (gdb) and it is killed. Exit status: 0 all well, 1 the child
// failed, 2 the parent's thread failed, 3 the child hung, 64 bad usage.
#include <pathlock/engine.hpp>
#ifdef PATHLOCK_PROBE_WITH_POSTGRES
#include <pathlock/postgres.hpp>
#endif
#include <pathlock/redis.hpp>

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

using namespace pathlock;

namespace {

struct Args {
  std::string backend, url, ca, race;
  long spin = 0;
};

std::optional<Args> parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i], value = argv[i + 1];
    if (key == "--backend") a.backend = value;
    else if (key == "--url") a.url = value;
    else if (key == "--ca") a.ca = value;
    else if (key == "--race") a.race = value;
    else if (key == "--spin") a.spin = std::atol(value.c_str());
    else return std::nullopt;
  }
  if (argc % 2 == 0 || (a.backend != "redis" && a.backend != "postgres") || a.url.empty() ||
      (a.race != "call" && a.race != "make" && a.race != "exit") || a.spin < 0)
    return std::nullopt;
  return a;
}

std::unique_ptr<LockEngine> make(const Args& a) {
#ifdef PATHLOCK_PROBE_WITH_POSTGRES
  if (a.backend == "postgres") {
    PostgresOptions options;
    options.url = a.url;
    return make_postgres_engine(options);
  }
#else
  if (a.backend == "postgres") throw std::runtime_error("built without the PostgreSQL backend");
#endif
  RedisOptions options{.url = a.url};
  options.tls.ca_file = a.ca;
  return make_redis_engine(options);
}

// One lock taken, checked and released on `path`: true when all went as it must.
bool take_check_release(LockEngine& engine, const std::string& path) {
  const AcquireResult r = engine.acquire(LockRequest{"fork-probe", "probe", "upload", {{"target", path}}});
  if (!r.granted()) return false;
  const bool held = engine.is_held("fork-probe", r.grant.id, r.grant.token);
  return engine.release("fork-probe", r.grant.id, r.grant.token) && held;
}

// Busy for about n loop turns; the compiler may not drop the loop.
void spin(long n) {
  std::atomic<long> turns{0};
  while (turns.load(std::memory_order_relaxed) < n) turns.fetch_add(1, std::memory_order_relaxed);
}

// One lock on /probe/<pid>/<who>, through `before` or an engine made here
// (--race make); false, with the reason on stderr, when anything failed.
bool lock_once(const Args& a, LockEngine* before, const char* who) {
  try {
    std::unique_ptr<LockEngine> own = before ? nullptr : make(a);
    return take_check_release(before ? *before : *own, fmt::format("/probe/{}/{}", ::getpid(), who));
  } catch (const std::exception& e) {
    fmt::print(stderr, "fork probe {}: {}\n", who, e.what());
    return false;
  }
}

[[noreturn]] void child(const Args& a, LockEngine* before) {
  const int status = lock_once(a, before, "child") ? 0 : 1;
  std::fflush(stderr);
  ::_exit(status);  // no destructors of the parent's objects here
}

// Waits up to 20 s for the child; a hung one is shown (gdb) and killed.
int wait_for(pid_t pid) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      fmt::print(stderr, "fork probe: child {} hung; its threads:\n", pid);
      std::fflush(stderr);
      const std::string gdb = fmt::format("gdb -nx -q -batch -p {} -ex 'thread apply all bt' 1>&2", pid);
      [[maybe_unused]] const int rc = std::system(gdb.c_str());
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return 3;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling a child's exit, not a sync point
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::optional<Args> args = parse(argc, argv);
  if (!args) {
    fmt::print(stderr, "usage: pathlock_fork_probe --backend redis|postgres --url URL [--ca FILE] "
                       "--race call|make|exit --spin N\n");
    return 64;
  }
  const Args& a = *args;
  std::unique_ptr<LockEngine> before = a.race == "call" ? make(a) : nullptr;
  std::atomic<bool> go{false}, ending{false};
  std::atomic<int> parent_result{-1};
  std::thread first([&] {
    while (!go.load(std::memory_order_acquire)) {
    }
    parent_result = lock_once(a, before.get(), "parent") ? 0 : 2;
    ending.store(true, std::memory_order_release);  // the thread's end follows
  });
  go.store(true, std::memory_order_release);
  if (a.race == "exit")
    while (!ending.load(std::memory_order_acquire)) {
    }
  spin(a.spin);
  const pid_t pid = ::fork();
  if (pid == 0) child(a, before.get());
  const int child_result = pid < 0 ? 1 : wait_for(pid);
  first.join();
  if (child_result != 0) return child_result;
  return parent_result.load();
}
