// What the parts of pathlock-stress share: stress.cpp (run, starve, main),
// check.cpp (the history checker) and soak.cpp (long runs under faults).
#pragma once

#include "common/options.hpp"

#include <pathlock/engine.hpp>
#include <pathlock/matrix.hpp>

#include <memory>

#include <cstdint>
#include <string>
#include <vector>

namespace pathlock::stress {

// CLOCK_MONOTONIC in ns: one clock for every process on the machine.
std::int64_t monotonic_ns();

// What `check` found in a set of logs.
struct CheckResult {
  bool readable = false;  // false: a log could not be read or had a malformed line (said on stderr)
  long holds = 0, maybe = 0, processes = 0, overlapping_pairs = 0, violations = 0, fence_violations = 0;
  bool clean() const { return readable && violations == 0 && fence_violations == 0; }
};

// Checks the logs (check.cpp); prints the first few violations.
CheckResult check_logs(const std::vector<std::string>& files, const std::vector<std::string>& matrix_files);

// make_engine, retried for up to 10 s while the backend is unreachable (a
// fault-injection run may start while the server restarts).
std::unique_ptr<LockEngine> connect_engine(const options::Parsed& opt, std::size_t pool_size,
                                           const MatrixTable* matrix = nullptr);

int check(const options::Parsed& opt);  // pathlock-stress check
int starve(const options::Parsed& opt);  // pathlock-stress starve
extern const options::Options kStarveOptions;
int soak(const options::Parsed& opt);   // pathlock-stress soak
extern const options::Options kSoakOptions;

}  // namespace pathlock::stress
