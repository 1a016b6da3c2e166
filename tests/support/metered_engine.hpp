// An embedded engine counting into `metrics`: the engine the console tests
// put a ConsoleServer over.
#pragma once

#include <pathlock/memory.hpp>
#include <pathlock/metrics.hpp>

#include <memory>

namespace pathlock::test {

inline std::unique_ptr<LockEngine> metered_memory_engine(std::shared_ptr<Metrics> metrics) {
  MemoryOptions o;
  o.observe.metrics = std::move(metrics);
  return make_memory_engine(o);
}

}  // namespace pathlock::test
