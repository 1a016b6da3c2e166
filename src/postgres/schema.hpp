// The pathlock schema in PostgreSQL: tables, indexes and functions
// (src/postgres/schema.sql and functions.sql, embedded at build time;
// docs/postgres.md).
// Private to the library.
#pragma once

namespace pathlock::postgres {

// The version of the schema's layout, stored in pathlock.meta. An engine
// refuses a database whose schema has another layout.
inline constexpr int kSchemaLayout = 1;
// The version of its functions (pathlock.functions_version()). An engine
// that finds none, or an older one, runs the script again.
inline constexpr int kFunctionsVersion = 10;

// schema.sql, then functions.sql: idempotent (CREATE ... IF NOT EXISTS, CREATE OR
// REPLACE FUNCTION), run in one transaction.
extern const char* const kSchemaSql;

}  // namespace pathlock::postgres
