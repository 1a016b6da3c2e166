// pathlock/factory.hpp: choosing a backend by name, at run time.
//
// Code that always uses one backend calls make_memory_engine() or
// make_redis_engine() or make_postgres_engine() directly. make_engine() serves programs whose backend
// is configuration (a command line, a config file): it is the one place that
// names every backend.
#pragma once

#include <pathlock/engine.hpp>
#include <pathlock/memory.hpp>
#include <pathlock/postgres.hpp>
#include <pathlock/redis.hpp>

#include <memory>
#include <optional>
#include <string_view>

namespace pathlock {

// Backend (memory, redis, postgres): engine.hpp.

struct EngineOptions {
  Backend backend = Backend::memory;
  // The rules for every backend (nullptr: default_matrix()); when set it
  // overrides memory.matrix, redis.matrix and postgres.matrix.
  const MatrixTable* matrix = nullptr;
  MemoryOptions memory;  // used when backend == memory
  RedisOptions redis;    // used when backend == redis
  PostgresOptions postgres;  // used when backend == postgres
  // Metrics, observer and logs for every backend; when set it overrides
  // memory.observe and redis.observe (pathlock/metrics.hpp).
  std::optional<ObserveOptions> observe;
};

// Creates an engine of options.backend. Throws what that backend's own
// factory throws, and InvalidRequest for a backend this build leaves out.
std::unique_ptr<LockEngine> make_engine(const EngineOptions& options = {});

// Parses "memory", "redis" or "postgres". Throws InvalidRequest for anything else.
Backend parse_backend(std::string_view name);

}  // namespace pathlock
