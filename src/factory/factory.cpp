// The run-time backend factory (pathlock/factory.hpp): the one place that
// names every backend. Core depends on no backend; each backend depends on
// core; this file depends on all of them.
//
// Adding a backend: give it a public header with its options struct and
// make_<name>_engine() (like pathlock/redis.hpp), a Backend enumerator and
// an EngineOptions member here, a case in make_engine and parse_backend, and
// a row in the conformance table (tests/support/backends.cpp).
#include <pathlock/factory.hpp>

#include <fmt/format.h>

namespace pathlock {

Backend parse_backend(std::string_view name) {
  if (name == "memory") return Backend::memory;
  if (name == "redis") return Backend::redis;
  if (name == "postgres") return Backend::postgres;
  throw InvalidRequest(fmt::format("unknown backend '{}' (use memory, redis or postgres)", name));
}

namespace {

// A backend's options with what EngineOptions sets for every backend.
template <class BackendOptions>
BackendOptions with_common(BackendOptions backend, const EngineOptions& options) {
  if (options.matrix) backend.matrix = options.matrix;
  if (options.observe) backend.observe = *options.observe;
  return backend;
}

// What a build without a backend answers for it.
[[noreturn, maybe_unused]] void not_built(const char* backend, const char* option) {
  throw InvalidRequest(fmt::format("this build of pathlock has no {} backend ({}=OFF)", backend, option));
}

}  // namespace

std::unique_ptr<LockEngine> make_engine(const EngineOptions& options) {
  switch (options.backend) {
    case Backend::memory: return make_memory_engine(with_common(options.memory, options));
#ifdef PATHLOCK_WITH_REDIS
    case Backend::redis: return make_redis_engine(with_common(options.redis, options));
#else
    case Backend::redis: not_built("Redis", "PATHLOCK_WITH_REDIS");
#endif
#ifdef PATHLOCK_WITH_POSTGRES
    case Backend::postgres: return make_postgres_engine(with_common(options.postgres, options));
#else
    case Backend::postgres: not_built("PostgreSQL", "PATHLOCK_WITH_POSTGRES");
#endif
  }
  throw InvalidRequest("unknown backend");
}

}  // namespace pathlock
