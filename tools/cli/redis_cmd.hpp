// `pathlock redis load` and `pathlock redis libraries` (docs/cli.md): the
// Functions library as an artifact a deployment loads, and the read-only
// way to see which libraries a server holds.
//
// Contract: run_redis_command(args, out, err) takes the words after
// `pathlock redis` and returns the exit status (0 done, 1 failed, 2 bad
// usage). `load` sends FUNCTION LOAD (never REPLACE) of the library of the
// matrix (--matrix FILE, else the built-in one) to every master (a
// Cluster's every master, a Sentinel's current master, the one server);
// "already exists" is success. `libraries` lists, per master, every loaded
// library named pathlock_* and the answer of its `info` function (null for
// libraries older than `info`). Both print JSON lines. Built only with the
// Redis backend (PATHLOCK_WITH_REDIS); without it the command says so.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace pathlock::cli {

inline constexpr const char* kRedisUsage =
    "  pathlock redis load --redis URL [--matrix FILE] [--tls-...]\n"
    "  pathlock redis libraries --redis URL [--tls-...]\n";

int run_redis_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace pathlock::cli
