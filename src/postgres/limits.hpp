// Limits per namespace in the PostgreSQL backend (LockEngine::set_limits,
// set_default_limits, limits): the statements the engine sends and how it
// reads their replies and acquire's refusal by a limit. The limits live in
// the table pathlock.limits and are checked inside pathlock.acquire
// (functions.sql, docs/postgres.md#limits-per-namespace). Private to the
// library.
#pragma once

#include "postgres/connection.hpp"

#include <pathlock/engine.hpp>

#include <libpq-fe.h>

#include <optional>
#include <string_view>
#include <vector>

namespace pathlock::postgres {

// pathlock.set_limits($1 namespace, or "*" for the default; $2 the limits
// as core::limits_text writes them, NULL to take a namespace's own away).
extern const char* const kSetLimits;
// pathlock.limits_status($1 namespace): one row, read by status_of.
extern const char* const kLimitsStatus;

// The parameters of kSetLimits for namespace `ns` (nullopt: the default)
// and `limits` (nullopt: none of its own). The caller checked both.
std::vector<Param> set_limits_params(std::optional<std::string_view> ns, const std::optional<Limits>& limits);

// LockEngine::limits() from kLimitsStatus's reply.
LimitsStatus status_of(const PGresult* r);

// The over_limit result of an acquire reply whose columns `col`, col + 1
// and col + 2 are l_limit, l_max and l_count. Throws BackendError for a
// limit this library does not know.
AcquireResult over_limit_of(const PGresult* r, int col);

}  // namespace pathlock::postgres
