// The engine factory: the one place that knows the concrete backends.
#include <pathlock/engine.hpp>

#include "memory/memory_engine.hpp"
#include "redis/redis_engine.hpp"

#include <fmt/format.h>

namespace pathlock {

Backend parse_backend(std::string_view name) {
  if (name == "memory") return Backend::memory;
  if (name == "redis") return Backend::redis;
  throw InvalidRequest(fmt::format("unknown backend '{}' (use memory or redis)", name));
}

std::unique_ptr<LockEngine> make_engine(const EngineOptions& options) {
  const MatrixTable& matrix = options.matrix ? *options.matrix : default_matrix();
  switch (options.backend) {
    case Backend::memory: return memory::make_memory_engine(matrix);
    case Backend::redis: return redis::make_redis_engine(matrix, options);
  }
  throw InvalidRequest("unknown backend");
}

}  // namespace pathlock
