// `pathlock admin status`: what a Redis server's namespaces hold, for
// operators during a rolling deploy (docs/cli.md, docs/operations.md).
//
// Contract: run_admin({"status", options...}, out, err) prints one JSON
// object per namespace on `out` (JSON lines) and returns the exit status
// (0 ok, 1 a backend error, 2 bad usage). Read-only: it runs SCAN and HGETALL
// on meta keys, never a library function, so it works whatever matrices or
// layouts the namespaces use. Built only with the Redis backend
// (PATHLOCK_WITH_REDIS); without it the command says so and fails.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace pathlock::cli {

inline constexpr const char* kAdminUsage =
    "  pathlock admin status --redis URL [--namespace NS] [--limit N] [--tls-...]\n";

int run_admin(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace pathlock::cli
