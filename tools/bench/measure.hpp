// The timed loop of pathlock-bench: runs one Worker per thread, first a
// warm-up (not recorded), then a measurement window, and records the
// latency of every step (one acquire+release pair, or one refused acquire).
//
// Latency of a step = time from the end of the previous step to the end of
// this one on the same thread, so nothing between steps goes unmeasured.
// Throughput = steps recorded in the window / the window as it really ran
// (until the last thread finished its last step), all threads together.
// A thread keeps going past the window until it has `min_pairs` steps, so
// a slow subject (the scan at 1M held) still gives a percentile.
#pragma once

#include <cmath>
#include <cstddef>
#include <memory>
#include <vector>

#include "subject.hpp"

namespace pathlock::bench {

struct Measurement {
  std::size_t ops = 0;         // recorded steps with the expected outcome
  std::size_t unexpected = 0;  // recorded steps with another outcome (should be 0)
  double seconds = 0;          // measurement window as it really ran
  double throughput = 0;       // expected steps per second, all clients together
  double p50_us = NAN, p99_us = NAN, max_us = NAN;
  std::size_t all_ops = 0;     // every step, warm-up included (for per-step server CPU)
  double server_cpu_us = NAN;  // Redis CPU (user + sys) per step, when measured
};

struct Window {
  double warmup_s = 0.5;
  double measure_s = 3.0;
  std::size_t min_pairs = 5;  // per worker, even if the window has passed
};

// Rethrows the first exception a worker threw; throws Interrupted on Ctrl-C.
Measurement measure(std::vector<std::unique_ptr<Worker>>& workers, const Window& window);

}  // namespace pathlock::bench
