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
    Shared s(workers_.size(), measure_s, min_steps);
    std::vector<std::thread> threads;
    for (std::size_t w = 0; w < workers_.size(); ++w) threads.emplace_back([this, &s, w] { work(w, s); });
    s.phase.store(kWarm);
    sleep_for(s, warm_s);
    Clock::time_point start = Clock::now();
    if (measure_s > 0) {
      int expected = kWarm;
      s.phase.compare_exchange_strong(expected, kMeasure);
      start = Clock::now();
      sleep_for(s, measure_s);
    }
    s.phase.store(kStop);
    for (std::thread& t : threads) t.join();
    if (s.error) std::rethrow_exception(s.error);
    check_interrupted();
    if (measure_s > 0) {
      Clock::time_point end = start;
      for (const Clock::time_point& e : s.ended) end = std::max(end, e);
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
  enum Phase : int { kWait, kWarm, kMeasure, kStop };

  // What the threads of one run() share.
  struct Shared {
    Shared(std::size_t workers, double measure, std::size_t min) : ended(workers), measure_s(measure), min_steps(min) {}
    std::atomic<int> phase{kWait};
    std::vector<Clock::time_point> ended;  // when each thread stopped
    std::exception_ptr error;              // the first exception a worker threw
    std::mutex error_mutex;
    const double measure_s;
    const std::size_t min_steps;
  };

  // Worker w's thread: steps until the run stops; an exception stops the run.
  void work(std::size_t w, Shared& s) {
    try {
      steps(w, s);
    } catch (...) {
      std::lock_guard g(s.error_mutex);
      if (!s.error) s.error = std::current_exception();
      s.phase.store(kStop);
    }
    s.ended[w] = Clock::now();
  }

  // Worker w's steps, each timed from the end of the one before; recorded
  // outside the warm-up.
  void steps(std::size_t w, Shared& s) {
    Worker& worker = *workers_[w];
    Latencies& lat = lat_[w];
    std::size_t& k = steps_[w];
    while (s.phase.load() == kWait) std::this_thread::yield();
    Clock::time_point t0 = Clock::now();
    for (;;) {
      const int ph = s.phase.load(std::memory_order_relaxed);
      if (ph == kStop && (s.measure_s == 0 || lat.size() >= s.min_steps)) break;
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
  }

  // Sleeps `seconds`, or less when interrupted or the run stopped.
  static void sleep_for(const Shared& s, double seconds) {
    const auto until = Clock::now() + std::chrono::duration<double>(seconds);
    while (Clock::now() < until && !interrupted() && s.phase.load() != kStop)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }

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
