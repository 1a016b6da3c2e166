// pathlock/memory.hpp: the embedded (in-process) backend.
//
// One process, no server: the locks live in this process's memory and end
// with it. Use it in a single service instance and in tests; use the Redis
// backend (pathlock/redis.hpp) when several processes share locks.
// Thread safety: the engine may be called from any number of threads.
#pragma once

#include <pathlock/clock.hpp>
#include <pathlock/engine.hpp>
#include <pathlock/metrics.hpp>

#include <memory>

namespace pathlock {

struct MemoryOptions {
  const MatrixTable* matrix = nullptr;  // nullptr: default_matrix(); must outlive the engine
  std::shared_ptr<const Clock> clock;   // nullptr: steady_clock()
  ObserveOptions observe{};             // metrics, observer, logs (pathlock/metrics.hpp)
};

// Creates an embedded engine. Throws InvalidRequest for bad observe options
// (a Metrics of another matrix, a threshold that is not positive).
std::unique_ptr<LockEngine> make_memory_engine(const MemoryOptions& options = {});

}  // namespace pathlock
