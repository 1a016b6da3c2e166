// Private view into the embedded engine, for its tests and benchmarks.
#pragma once

#include <pathlock/engine.hpp>

#include <cstddef>

namespace pathlock::memory {

struct MemoryEngineStats {
  std::size_t namespaces = 0;       // ever used, in the registry
  std::size_t with_state = 0;       // of those, not trimmed (index, locks, wheel allocated)
  std::size_t locks = 0;            // live locks, all namespaces
  std::size_t trims = 0;            // namespace states freed by the sweep so far, all namespaces
};

// Statistics of `engine`, which must come from make_memory_engine(). Takes
// every namespace's mutex in turn; for tests, not for hot paths.
MemoryEngineStats memory_engine_stats(LockEngine& engine);

}  // namespace pathlock::memory
