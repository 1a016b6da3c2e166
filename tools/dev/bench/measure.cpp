// The timed loop; see measure.hpp. A Runner keeps what one group of workers
// recorded across the runs it is given (measure(): one run; alternating
// windows: a warm-up, then one run per slice). In a run, threads start
// together (phase kWait -> kWarm), the window opens with one atomic switch
// to kMeasure and closes with kStop; each thread keeps its own latencies
// (no sharing on the hot path) and they are merged at the end.
#include "measure.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <mutex>
#include <thread>

#include "util.hpp"

namespace pathlock::bench {
namespace {

class Runner {
 public:
  explicit Runner(std::vector<std::unique_ptr<Worker>>& workers)
      : workers_(workers), lat_(workers.size()), unexpected_(workers.size(), 0), steps_(workers.size(), 0) {}

  // Runs every worker on its own thread: `warm_s` seconds not recorded, then
  // `measure_s` seconds recorded (none when 0), after which a thread goes on
  // until it has `min_steps` recorded steps in all.
  void run(double warm_s, double measure_s, std::size_t min_steps) {
    enum Phase : int { kWait, kWarm, kMeasure, kStop };
    std::atomic<int> phase{kWait};
    const std::size_t n = workers_.size();
    std::vector<Clock::time_point> ended(n);
    std::exception_ptr error;
    std::mutex error_mutex;

    auto body = [&](std::size_t w) {
      try {
        Worker& worker = *workers_[w];
        Latencies& lat = lat_[w];
        std::size_t& k = steps_[w];
        while (phase.load() == kWait) std::this_thread::yield();
        Clock::time_point t0 = Clock::now();
        for (;;) {
          const int ph = phase.load(std::memory_order_relaxed);
          if (ph == kStop && (measure_s == 0 || lat.size() >= min_steps)) break;
          if (interrupted()) break;
          const bool expected = worker.step(k++);
          const Clock::time_point t1 = Clock::now();
          if (ph != kWarm) {
            if (expected)
              lat.add(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
            else
              ++unexpected_[w];
          }
          t0 = t1;
        }
        ended[w] = Clock::now();
      } catch (...) {
        std::lock_guard g(error_mutex);
        if (!error) error = std::current_exception();
        phase.store(kStop);
        ended[w] = Clock::now();
      }
    };
    std::vector<std::thread> threads;
    for (std::size_t w = 0; w < n; ++w) threads.emplace_back(body, w);

    auto sleep_for = [&](double s) {
      const auto until = Clock::now() + std::chrono::duration<double>(s);
      while (Clock::now() < until && !interrupted() && phase.load() != kStop)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    };
    phase.store(kWarm);
    sleep_for(warm_s);
    Clock::time_point start = Clock::now();
    if (measure_s > 0) {
      int expected = kWarm;
      phase.compare_exchange_strong(expected, kMeasure);
      start = Clock::now();
      sleep_for(measure_s);
    }
    phase.store(kStop);
    for (std::thread& t : threads) t.join();
    if (error) std::rethrow_exception(error);
    check_interrupted();
    if (measure_s > 0) {
      Clock::time_point end = start;
      for (const Clock::time_point& e : ended) end = std::max(end, e);
      seconds_ += std::chrono::duration<double>(end - start).count();
    }
  }

  // Adds `seconds` of server CPU spent during this group's runs.
  void add_cpu(double seconds) { cpu_s_ = (std::isnan(cpu_s_) ? 0 : cpu_s_) + seconds; }

  Measurement result() {
    Measurement m;
    Latencies all;
    for (std::size_t w = 0; w < workers_.size(); ++w) {
      all.merge(lat_[w]);
      m.unexpected += unexpected_[w];
      m.all_ops += steps_[w];
    }
    m.ops = all.size();
    m.seconds = seconds_;
    m.throughput = m.seconds > 0 ? static_cast<double>(m.ops) / m.seconds : 0;
    m.p50_us = all.percentile_us(50);
    m.p99_us = all.percentile_us(99);
    m.max_us = all.percentile_us(100);
    if (!std::isnan(cpu_s_) && m.all_ops) m.server_cpu_us = cpu_s_ * 1e6 / static_cast<double>(m.all_ops);
    return m;
  }

 private:
  std::vector<std::unique_ptr<Worker>>& workers_;
  std::vector<Latencies> lat_;
  std::vector<std::size_t> unexpected_;
  std::vector<std::size_t> steps_;  // steps run, warm-up included: the next k
  double seconds_ = 0;              // recorded time, all runs
  double cpu_s_ = NAN;              // server CPU during the runs (add_cpu), when read
};

}  // namespace

Measurement measure(std::vector<std::unique_ptr<Worker>>& workers, const Window& window) {
  Runner runner(workers);
  runner.run(window.warmup_s, window.measure_s, window.min_pairs);
  return runner.result();
}

std::vector<Measurement> measure_alternating(std::vector<std::vector<std::unique_ptr<Worker>>>& groups,
                                             const Window& window, double slice, const CpuSeconds& cpu) {
  std::vector<Runner> runners;
  runners.reserve(groups.size());
  for (auto& g : groups) runners.emplace_back(g);
  // One run of r, charged the server CPU it used when `cpu` is given.
  auto run = [&](Runner& r, double warm_s, double measure_s, std::size_t min_steps) {
    const double before = cpu ? cpu() : 0;
    r.run(warm_s, measure_s, min_steps);
    if (cpu) r.add_cpu(cpu() - before);
  };
  for (Runner& r : runners) run(r, window.warmup_s, 0, 0);
  const int rounds = std::max(1, static_cast<int>(window.measure_s / slice + 0.5));
  for (int round = 0; round < rounds; ++round)
    for (Runner& r : runners) run(r, 0, slice, round + 1 == rounds ? window.min_pairs : 0);
  std::vector<Measurement> out;
  for (Runner& r : runners) out.push_back(r.result());
  return out;
}

}  // namespace pathlock::bench
