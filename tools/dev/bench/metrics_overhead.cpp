// pathlock-metrics-bench: what counting costs (docs/operations.md#metrics).
//   pathlock-metrics-bench [--seconds S] [--redis URL] [--memory-only]
//
// Two engines of one backend, one counting (ObserveOptions::count = true)
// and one not, measured in alternating 0.2 s slices in one run, so drift of
// the machine (other processes, frequency) falls on both alike. Each slice
// runs acquire + release pairs on one thread; no waits, no refusals, the
// hot path. Reports:
//   embedded  pairs/s with metrics on and off, and on/off (goal >= 0.95);
//   redis     client CPU per pair (this thread's CPU time: hiredis runs in
//             the calling thread) on and off, and on/off - 1 (goal within
//             5%); the server is redis-server started here unless --redis.
// Prints the numbers only: no pass/fail exit status (a benchmark, not a test).
#include <pathlock/memory.hpp>
#include <pathlock/redis.hpp>

#include "redis_devtools/redis_server.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <string>

namespace {

using namespace pathlock;
using Wall = std::chrono::steady_clock;

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

struct Tally {
  std::uint64_t pairs = 0;
  double wall = 0, cpu = 0;
};

// One slice of `slice` seconds of pairs on `engine`.
void slice(LockEngine& engine, const std::string& ns, double seconds, std::uint64_t& counter, Tally& t) {
  const auto begin = Wall::now();
  const double cpu0 = thread_cpu_seconds();
  const auto end = begin + std::chrono::duration_cast<Wall::duration>(std::chrono::duration<double>(seconds));
  LockRequest req{ns, "bench", "upload", {{"target", ""}}, Millis{30000}};
  std::uint64_t n = 0;
  do {
    for (int i = 0; i < 16; ++i, ++n) {
      req.targets[0].path = fmt::format("/bench/d{}/f{}", counter % 64, counter % 4096);
      ++counter;
      const AcquireResult r = engine.acquire(req);
      if (!r.granted() || !engine.release(ns, r.grant.id, r.grant.token)) {
        fmt::print(stderr, "pathlock-metrics-bench: a pair failed\n");
        std::exit(1);
      }
    }
  } while (Wall::now() < end);
  t.pairs += n;
  t.wall += std::chrono::duration<double>(Wall::now() - begin).count();
  t.cpu += thread_cpu_seconds() - cpu0;
}

// Alternates on and off for `seconds` in total; returns {on, off}.
std::pair<Tally, Tally> alternate(LockEngine& on, LockEngine& off, double seconds) {
  Tally t_on, t_off;
  std::uint64_t counter = 0;
  slice(on, "warm-on", 0.1, counter, t_on);  // warm-up, discarded
  slice(off, "warm-off", 0.1, counter, t_off);
  t_on = t_off = Tally{};
  const int slices = std::max(2, static_cast<int>(seconds / 0.2));
  for (int i = 0; i < slices; ++i) {
    // Alternate who goes first, so neither always follows the other.
    if (i % 2 == 0) {
      slice(on, "on", 0.1, counter, t_on);
      slice(off, "off", 0.1, counter, t_off);
    } else {
      slice(off, "off", 0.1, counter, t_off);
      slice(on, "on", 0.1, counter, t_on);
    }
  }
  return {t_on, t_off};
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 6;
  std::string url;
  bool memory_only = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--seconds" && i + 1 < argc) {
      char* end = nullptr;
      seconds = std::strtod(argv[++i], &end);
      if (*end || !(seconds > 0)) {
        fmt::print(stderr, "--seconds needs a positive number\n");
        return 2;
      }
    } else if (a == "--redis" && i + 1 < argc) {
      url = argv[++i];
    } else if (a == "--memory-only") {
      memory_only = true;
    } else {
      fmt::print(stderr, "usage: pathlock-metrics-bench [--seconds S] [--redis URL] [--memory-only]\n");
      return 2;
    }
  }
  try {
    {
      ObserveOptions counting, silent;
      silent.count = false;
      auto on = make_memory_engine(MemoryOptions{nullptr, nullptr, counting});
      auto off = make_memory_engine(MemoryOptions{nullptr, nullptr, silent});
      const auto [t_on, t_off] = alternate(*on, *off, seconds);
      const double r_on = static_cast<double>(t_on.pairs) / t_on.wall, r_off = static_cast<double>(t_off.pairs) / t_off.wall;
      fmt::print("embedded: metrics on {:.0f} pairs/s, off {:.0f} pairs/s, on/off {:.3f} (goal >= 0.95)\n", r_on, r_off,
                 r_on / r_off);
    }
    if (memory_only) return 0;
    std::unique_ptr<devtools::RedisServer> server;
    if (url.empty()) {
      server = std::make_unique<devtools::RedisServer>();
      url = server->url();
    }
    RedisOptions counting, silent;
    counting.url = silent.url = url;
    silent.observe.count = false;
    auto on = make_redis_engine(counting);
    auto off = make_redis_engine(silent);
    const auto [t_on, t_off] = alternate(*on, *off, seconds);
    const double c_on = t_on.cpu / static_cast<double>(t_on.pairs) * 1e6;
    const double c_off = t_off.cpu / static_cast<double>(t_off.pairs) * 1e6;
    fmt::print("redis: client CPU per pair metrics on {:.2f} us, off {:.2f} us, on/off - 1 = {:+.1f}% (goal within 5%); "
               "pairs/s on {:.0f}, off {:.0f}\n",
               c_on, c_off, (c_on / c_off - 1) * 100, static_cast<double>(t_on.pairs) / t_on.wall,
               static_cast<double>(t_off.pairs) / t_off.wall);
  } catch (const std::exception& e) {
    fmt::print(stderr, "pathlock-metrics-bench: {}\n", e.what());
    return 1;
  }
  return 0;
}
