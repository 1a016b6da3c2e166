// The plots of pathlock-bench: a gnuplot script, plot.gp, with the data of
// the run inlined (one datablock per sweep and series), written to the
// results folder and run there when gnuplot is installed (apt-get install
// gnuplot-nox) to make the PNGs; without gnuplot the script is left for
// later. A plot with no measured point is left out.
//
// Adding a plot: a plot() call in write_plot_commands() (plots.cpp) for the sweep
// and the column (2 p50, 3 p99, 4 ops/s, 5 Redis CPU per op), after the axis
// settings it needs.
#pragma once

#include <string>

#include "results.hpp"

namespace pathlock::bench {

// Writes out_dir/plot.gp and runs gnuplot on it; failures are reported on
// stderr and never fail the run.
void write_plots(const Results& r, const std::string& out_dir);

}  // namespace pathlock::bench
