// The PostgreSQL server of the test process (tools/dev/pg_devtools): started
// lazily on first use (thread-safe), stopped when the process exits. If
// PATHLOCK_TEST_POSTGRES_URL is set, the engines use that server instead
// (tests that kill or restart a server start a private one).
#pragma once

#include "pg_devtools/postgres_server.hpp"

#include <pathlock/postgres.hpp>

#include <memory>
#include <string>

namespace pathlock::test {

using devtools::PostgresServer;

// The URL of the shared server.
const std::string& shared_postgres_url();

// A PostgreSQL engine on `url` (the shared server's by default).
std::unique_ptr<LockEngine> postgres_engine(const MatrixTable* matrix = nullptr, const std::string& url = "",
                                            const ObserveOptions& observe = {});

}  // namespace pathlock::test
