// The timed loop; see measure.hpp. Threads start together (phase kWait ->
// kWarm), the window opens with one atomic switch to kMeasure and closes
// with kStop; each thread keeps its own latencies (no sharing on the hot
// path) and they are merged at the end.
#include "measure.hpp"

#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

#include "util.hpp"

namespace pathlock::bench {

Measurement measure(std::vector<std::unique_ptr<Worker>>& workers, const Window& window) {
  enum Phase : int { kWait, kWarm, kMeasure, kStop };
  std::atomic<int> phase{kWait};
  const std::size_t n = workers.size();
  std::vector<Latencies> lat(n);
  std::vector<std::size_t> unexpected(n, 0);
  std::vector<Clock::time_point> ended(n);
  std::vector<std::size_t> done(n, 0);  // steps including warm-up
  std::exception_ptr error;
  std::mutex error_mutex;

  auto body = [&](std::size_t w) {
    try {
      Worker& worker = *workers[w];
      while (phase.load() == kWait) std::this_thread::yield();
      std::size_t k = 0;
      Clock::time_point t0 = Clock::now();
      for (;;) {
        const int ph = phase.load(std::memory_order_relaxed);
        if (ph == kStop && lat[w].size() >= window.min_pairs) break;
        if (interrupted()) break;
        const bool expected = worker.step(k++);
        const Clock::time_point t1 = Clock::now();
        if (ph != kWarm) {
          if (expected)
            lat[w].add(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
          else
            ++unexpected[w];
        }
        t0 = t1;
      }
      ended[w] = Clock::now();
      done[w] = k;
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
  sleep_for(window.warmup_s);
  int expected = kWarm;
  phase.compare_exchange_strong(expected, kMeasure);
  const Clock::time_point start = Clock::now();
  sleep_for(window.measure_s);
  phase.store(kStop);
  for (std::thread& t : threads) t.join();
  if (error) std::rethrow_exception(error);
  check_interrupted();

  Measurement m;
  Latencies all;
  Clock::time_point end = start;
  for (std::size_t w = 0; w < n; ++w) {
    all.merge(lat[w]);
    m.unexpected += unexpected[w];
    m.all_ops += done[w];
    end = std::max(end, ended[w]);
  }
  m.ops = all.size();
  m.seconds = std::chrono::duration<double>(end - start).count();
  m.throughput = m.seconds > 0 ? static_cast<double>(m.ops) / m.seconds : 0;
  m.p50_us = all.percentile_us(50);
  m.p99_us = all.percentile_us(99);
  m.max_us = all.percentile_us(100);
  return m;
}

}  // namespace pathlock::bench
