// The run-time backend factory (pathlock/factory.hpp): the one place that
// names every backend. Core depends on no backend; each backend depends on
// core; this file depends on all of them.
//
// Adding a backend: give it a public header with its options struct and
// make_<name>_engine() (like pathlock/redis.hpp), a Backend enumerator and
// an EngineOptions member, a row in kBackends below (engine and Inspector),
// and a row in the conformance table (tests/support/backends.cpp).
#include <pathlock/admin.hpp>
#include <pathlock/factory.hpp>

#include <fmt/format.h>

namespace pathlock {
namespace redis {
std::unique_ptr<admin::Inspector> make_redis_inspector(const RedisOptions& options);  // src/redis/admin.cpp
}
namespace postgres {
std::unique_ptr<admin::Inspector> make_postgres_inspector(const PostgresOptions& options);  // src/postgres/admin.cpp
}
namespace admin {
std::unique_ptr<Inspector> make_memory_inspector();  // inspector.cpp
}

namespace {

// A backend's options with what EngineOptions sets for every backend.
template <class BackendOptions>
BackendOptions with_common(BackendOptions backend, const EngineOptions& options) {
  if (options.matrix) backend.matrix = options.matrix;
  if (options.observe) backend.observe = *options.observe;
  return backend;
}

using EngineMaker = std::unique_ptr<LockEngine> (*)(const EngineOptions&);
using InspectorMaker = std::unique_ptr<admin::Inspector> (*)(const EngineOptions&);

// The backends: name, what makes its engine and its Inspector, and for a
// backend this build leaves out (no makers), the option that adds it.
struct BackendRow {
  Backend backend;
  const char* name;
  const char* title;
  EngineMaker engine;
  InspectorMaker inspector;
  const char* build_option;
};

const BackendRow kBackends[] = {
    {Backend::memory, "memory", "memory",
     [](const EngineOptions& o) { return make_memory_engine(with_common(o.memory, o)); },
     [](const EngineOptions&) { return admin::make_memory_inspector(); }, nullptr},
#ifdef PATHLOCK_WITH_REDIS
    {Backend::redis, "redis", "Redis", [](const EngineOptions& o) { return make_redis_engine(with_common(o.redis, o)); },
     [](const EngineOptions& o) { return redis::make_redis_inspector(o.redis); }, "PATHLOCK_WITH_REDIS"},
#else
    {Backend::redis, "redis", "Redis", nullptr, nullptr, "PATHLOCK_WITH_REDIS"},
#endif
#ifdef PATHLOCK_WITH_POSTGRES
    {Backend::postgres, "postgres", "PostgreSQL",
     [](const EngineOptions& o) { return make_postgres_engine(with_common(o.postgres, o)); },
     [](const EngineOptions& o) { return postgres::make_postgres_inspector(o.postgres); }, "PATHLOCK_WITH_POSTGRES"},
#else
    {Backend::postgres, "postgres", "PostgreSQL", nullptr, nullptr, "PATHLOCK_WITH_POSTGRES"},
#endif
};

// The row of `backend`; InvalidRequest when this build leaves it out.
const BackendRow& built(Backend backend) {
  for (const BackendRow& row : kBackends) {
    if (row.backend != backend) continue;
    if (!row.engine)
      throw InvalidRequest(
          fmt::format("this build of pathlock has no {} backend ({}=OFF)", row.title, row.build_option));
    return row;
  }
  throw InvalidRequest("unknown backend");
}

}  // namespace

Backend parse_backend(std::string_view name) {
  for (const BackendRow& row : kBackends)
    if (name == row.name) return row.backend;
  throw InvalidRequest(fmt::format("unknown backend '{}' (use memory, redis or postgres)", name));
}

std::unique_ptr<LockEngine> make_engine(const EngineOptions& options) { return built(options.backend).engine(options); }

std::unique_ptr<admin::Inspector> admin::make_inspector(const EngineOptions& options) {
  return built(options.backend).inspector(options);
}

}  // namespace pathlock
