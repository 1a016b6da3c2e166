// The goals of pathlock-bench: PASS / MISS / SKIP verdicts with the figures
// behind them, evaluated from the points of one run only. Every goal is a
// ratio between two subjects (or two points of one subject) measured in the
// same run on the same machine, never an absolute time, so a slow or busy
// machine moves both sides. They never change the exit status.
//
// The goals, at the reference point (10k held, depth 5, 1 client) unless
// they say otherwise:
//   cpu        pathlock-redis Redis CPU per pair <= 5x the bare pair's (stretch: <= 4x)
//   latency    pathlock-redis pair p50 <= 2x the bare pair's
//   clients    with 32 clients, pathlock-redis pairs/s >= 40% of bare's
//   flat       pathlock-redis p50 within 1.25x from 0 to 1M held (the largest
//              held/0 p50 ratio of the held counts measured against 0 held)
//   scan       pathlock-redis pairs/s >= 100x the scan baseline's at 100k held
//   per-level  pathlock-redis p50 below per-level's at every depth >= 3
//   embedded   pathlock-memory pairs/s with 1M held >= 0.8x those with 0 held
// A ratio between two subjects comes from the sweep "alternating" (both
// measured in turns of short slices on the one server, sweeps.hpp), and
// `flat` from each held count's p50 against 0 held in alternating slices
// (Point::zero_held); a run without those points falls back to the separate
// points, measured one after the other, and says so in the text.
// A smaller run (--quick, --max-held) evaluates each at the nearest point it
// measured (the most held, the most clients up to 32) and says so in the text;
// a goal whose points are missing is SKIP.
//
// Adding a goal: one more function in goals.cpp, called from evaluate_goals(),
// and its line above and in docs/benchmarks.md.
#pragma once

#include <string>
#include <vector>

#include "results.hpp"

namespace pathlock::bench {

struct Goal {
  std::string verdict;  // "PASS", "MISS" or "SKIP"
  std::string text;     // what is required, and the measured figures
};

std::vector<Goal> evaluate_goals(const Results& r);

}  // namespace pathlock::bench
