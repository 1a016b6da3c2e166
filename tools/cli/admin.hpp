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

#include <functional>
#include <iosfwd>
#include <stdexcept>
#include <string>
#include <vector>

namespace pathlock::options {
class Parsed;
}
namespace pathlock::redis {
class RedisClient;
}

namespace pathlock::cli {

inline constexpr const char* kAdminUsage =
    "  pathlock admin status --redis URL [--namespace NS] [--limit N] [--tls-...]\n"
    "  pathlock admin why --redis URL --namespace NS [--op OP] PATH [DST] [--format json|text] [--limit N]\n"
    "  pathlock admin locks --redis URL --namespace NS [PREFIX] [--limit N]\n"
    "  pathlock admin waiters --redis URL --namespace NS [PREFIX] [--limit N]\n"
    "  pathlock admin force-release --redis URL --namespace NS ID\n"
    "  pathlock admin top --redis URL --namespace NS [--interval-ms MS] [--iterations N] [--rows N]\n"
    "  (why, locks, waiters, force-release and top also take --matrix FILE and the --tls-... options)\n";

int run_admin(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
// why, locks, waiters, force-release, top (admin_ops.cpp). Throws options::UsageError,
// InvalidRequest (exit status 1), BackendError (1).
int run_admin_op(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// Calls each(NS) for every namespace on the server (SCAN of pl:{*}:meta,
// COUNT 1000 per step; on a cluster on every master in turn) until it
// returns false. Used by `admin status` and the console. Redis builds only.
void for_each_namespace(redis::RedisClient& client, const std::function<bool(const std::string&)>& each);

// The console's namespace list on Redis (--redis URL and the --tls-...
// options of `opt`): every namespace, sorted (at most 100,000), read anew
// at each call through one connection.
std::function<std::vector<std::string>()> redis_namespace_lister(const options::Parsed& opt);

}  // namespace pathlock::cli
