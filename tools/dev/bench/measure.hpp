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
//
// Alternating windows (measure_alternating): several groups of workers
// (e.g. one subject with 1M held and with none) are each warmed up, then
// run in turns of short slices until each has had its window; a group's
// throughput is its recorded steps / the sum of its slices. A change of the
// machine's load during the point falls on every group alike, which one
// window per group, minutes apart, cannot promise. Given a reader of the
// Redis server's CPU counter, measure_alternating reads it around every run
// of a group (its warm-up and each of its slices) and charges each group only
// the growth during its own runs: per-step Redis CPU of two subjects on one
// server, taken from the same stretch of time.
#pragma once

#include <cmath>
#include <cstddef>
#include <functional>
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

// Slices of measure_alternating().
constexpr double kSliceSeconds = 0.2;

// Reads a Redis server's CPU counter (used_cpu_user + used_cpu_sys, seconds).
using CpuSeconds = std::function<double()>;

// Rethrows the first exception a worker threw; throws Interrupted on Ctrl-C.
Measurement measure(std::vector<std::unique_ptr<Worker>>& workers, const Window& window);

// One Measurement per group, in the order given: each group warmed up for
// window.warmup_s, then round after round every group runs for `slice`
// seconds in turn, until each has run window.measure_s (rounded to whole
// slices, at least one). Only one group runs at a time; steps continue
// across slices (a worker's step numbers k never restart). With `cpu`, each
// group's server_cpu_us is the counter's growth over that group's own runs
// (warm-up and slices) / the steps it ran in them, as measure_point's is over
// one window, warm-up included. Throws like measure().
std::vector<Measurement> measure_alternating(std::vector<std::vector<std::unique_ptr<Worker>>>& groups,
                                             const Window& window, double slice = kSliceSeconds,
                                             const CpuSeconds& cpu = {});

}  // namespace pathlock::bench
