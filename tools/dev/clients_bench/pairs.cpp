// pathlock-pairs: the C++ engine's line of tools/dev/clients_bench.py.
// --callers threads share one Redis engine (its pool as large as the
// callers); caller c runs --pairs acquire + release pairs, one after the
// other, of `upload` on /bench/c<c>/<i % 1000>/f, the workload every
// client's bench program runs. Prints one JSON line: pairs/s (all pairs
// over the wall time from the first pair to the last), p50 and p99 of one
// pair in microseconds.
//
// Usage: pathlock-pairs --redis URL [--pairs N] [--callers N] [--namespace NS]
// Exit status: 0 done, 1 a pair was refused or failed, 2 bad usage.
#include <pathlock/pathlock.hpp>

#include "common/options.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr const char* kUsage = "usage: pathlock-pairs --redis URL [--pairs N] [--callers N] [--namespace NS]\n";

namespace options = pathlock::options;
const options::Options kOptions = options::Options{}
                                      .required("redis")
                                      .number("pairs", 1, 100000000)
                                      .number("callers", 1, 1024)
                                      .value("namespace");

using Clock = std::chrono::steady_clock;

// One caller's pairs; their durations in microseconds go to `out`. False
// when a pair was refused or not released.
bool run_caller(pathlock::LockEngine& engine, const std::string& ns, long long caller, long long pairs,
                std::vector<double>& out) {
  const std::string prefix = "/bench/c" + std::to_string(caller) + "/";
  for (long long i = 0; i < pairs; ++i) {
    const auto start = Clock::now();
    const pathlock::LockRequest r{ns, "bench", "upload", {{"target", prefix + std::to_string(i % 1000) + "/f"}}};
    const pathlock::AcquireResult g = engine.acquire(r);
    if (!g || !engine.release(ns, g.grant.id, g.grant.token)) return false;
    out.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  return true;
}

// Runs `callers` threads of `pairs` pairs each; the durations of all pairs
// and the wall time in seconds. Throws when a caller failed.
std::pair<std::vector<double>, double> run_all(pathlock::LockEngine& engine, const std::string& ns, long long callers,
                                               long long pairs) {
  std::vector<std::vector<double>> times(static_cast<std::size_t>(callers));
  std::atomic<bool> failed{false};
  std::vector<std::thread> threads;
  const auto start = Clock::now();
  for (long long c = 0; c < callers; ++c) {
    threads.emplace_back([&, c] {
      try {
        if (!run_caller(engine, ns, c, pairs, times[static_cast<std::size_t>(c)])) failed = true;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "pathlock-pairs: caller %lld: %s\n", c, e.what());
        failed = true;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  if (failed) throw std::runtime_error("a pair was refused, not released or failed");
  std::vector<double> all;
  for (const std::vector<double>& t : times) all.insert(all.end(), t.begin(), t.end());
  return {std::move(all), wall};
}

}  // namespace

int main(int argc, char** argv) {
  const std::optional<options::Parsed> p = kOptions.parse_main(argc, argv, 1, kUsage);
  if (!p) return options::kExitUsage;
  const std::string ns = p->get("namespace", "bench-cpp");
  const long long pairs = p->number_or("pairs", 5000), callers = p->number_or("callers", 1);
  try {
    pathlock::EngineOptions options;
    options.backend = pathlock::Backend::redis;
    options.redis.url = p->get("redis");
    options.redis.pool_size = static_cast<std::size_t>(callers);
    const auto engine = pathlock::make_engine(options);
    run_all(*engine, ns + "-warm", callers, std::min(pairs, 1000LL));  // connections, library, caches
    auto [times, wall] = run_all(*engine, ns, callers, pairs);
    std::sort(times.begin(), times.end());
    std::printf("{\"client\": \"c++\", \"callers\": %lld, \"pairs\": %zu, \"pairs_per_s\": %.1f, \"p50_us\": %.1f, "
                "\"p99_us\": %.1f}\n",
                callers, times.size(), static_cast<double>(times.size()) / wall, times[times.size() / 2],
                times[times.size() * 99 / 100]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pathlock-pairs: %s\n", e.what());
    return 1;
  }
  return 0;
}
