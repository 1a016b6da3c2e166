// pathlock/postgres.hpp: the PostgreSQL backend.
//
// Durable locks for services that run PostgreSQL: every call is one
// server-side function in one transaction (schema `pathlock`, created by the
// first engine that finds none), timed by the server's clock; a grant that
// was answered is committed and survives a crash of the server. Waiting
// requests are woken by LISTEN/NOTIFY on one listener connection per engine.
// docs/postgres.md has the schema, roles and grants, pooling and
// operations. Thread safety: the engine may be called from any number of
// threads; it keeps up to pool_size idle connections and opens more while
// more calls run at once (at most max_connections), plus one listener while
// calls wait.
#pragma once

#include <pathlock/engine.hpp>
#include <pathlock/metrics.hpp>

#include <cstddef>
#include <memory>
#include <string>

namespace pathlock {

struct PostgresOptions {
  const MatrixTable* matrix = nullptr;  // nullptr: default_matrix(); must outlive the engine
  // A libpq connection string: postgresql://[user[:password]@]host[:port]/db[?param=value...]
  // (also postgres://, or key=value pairs: "host=/run/postgresql dbname=app").
  std::string url = "postgresql://127.0.0.1:5432/postgres";
  Millis connect_timeout{2000};  // libpq counts whole seconds, at least 2
  Millis command_timeout{2000};  // one call, waiting for the reply included
  std::size_t pool_size = 4;     // idle connections kept
  // Connections open at once (calls in flight), not counting the listener.
  // A call that finds them all in use waits for one up to command_timeout,
  // then throws BackendError ("all N connections of the pool are in use").
  std::size_t max_connections = 64;
  // The engine's one listener connection (LISTEN for the waiting calls);
  // "" = url. Through PgBouncer in transaction mode LISTEN delivers
  // nothing: point this at a session-mode entry or at PostgreSQL itself
  // (docs/postgres.md#connection-pooling-pgbouncer).
  std::string listen_url;
  // Metrics, observer, logs (pathlock/metrics.hpp); backend calls are
  // counted as the Redis client counts its calls.
  ObserveOptions observe{};
};

// Creates a PostgreSQL engine and connects once, so that a bad address or
// bad credentials fail here; creates the schema when the database has none
// (the user then needs CREATE on the database). Throws InvalidRequest for
// bad options (an empty url, a zero timeout) and BackendError when the
// server cannot be used (or its schema has another layout).
std::unique_ptr<LockEngine> make_postgres_engine(const PostgresOptions& options);

}  // namespace pathlock
