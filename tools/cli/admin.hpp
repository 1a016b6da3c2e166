// `pathlock admin ...`: what a backend's namespaces hold, for operators
// during a rolling deploy and at 3 a.m. (docs/cli.md, docs/operations.md).
//
// Contract: run_admin({"status", options...}, out, err) prints one JSON
// object per namespace on `out` (JSON lines) and returns the exit status
// (0 ok, 1 a backend error, 2 bad usage). Read-only: it asks the backend's
// admin::Inspector (pathlock/admin.hpp), never a lock call, so it works
// whatever matrices or layouts the namespaces use. Every command takes
// --backend memory|redis|postgres (default redis: --redis URL required) or
// --postgres URL (and --postgres-listen URL) with --backend postgres.
#pragma once

#include <pathlock/factory.hpp>

#include <functional>
#include <iosfwd>
#include <stdexcept>
#include <string>
#include <vector>

namespace pathlock::options {
class Options;
class Parsed;
}  // namespace pathlock::options

namespace pathlock::cli {

inline constexpr const char* kAdminUsage =
    "  pathlock admin status --redis URL [--namespace NS] [--limit N] [--tls-...]\n"
    "  pathlock admin why --redis URL --namespace NS [--op OP [--converts ID]] PATH [DST] [--format json|text] "
    "[--limit N]\n"
    "  pathlock admin locks --redis URL --namespace NS [PREFIX] [--limit N]\n"
    "  pathlock admin waiters --redis URL --namespace NS [PREFIX] [--limit N]\n"
    "  pathlock admin force-release --redis URL --namespace NS ID\n"
    "  pathlock admin top --redis URL --namespace NS [--interval-ms MS] [--iterations N] [--rows N]\n"
    "  pathlock admin limits --redis URL (--namespace NS | --default) [--set [--locks N] [--places N] [--owner-locks N] | --clear]\n"
    "  (why, locks, waiters, force-release and top also take --matrix FILE and the --tls-... options;\n"
    "   every admin command takes --backend postgres --postgres URL [--postgres-listen URL] instead of --redis URL)\n";

int run_admin(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
// why, locks, waiters, force-release, top (admin_ops.cpp). Throws options::UsageError,
// InvalidRequest (exit status 1), BackendError (1).
// Whether NAME is one of run_admin_op's commands.
bool is_admin_op(const std::string& name);
int run_admin_op(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
// `admin limits` (admin_limits.cpp): shows or sets a namespace's limits, or the default.
int admin_limits(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// Adds --backend memory|redis|postgres, --redis URL, --postgres URL,
// --postgres-listen URL and the --tls-... options to a command's table.
options::Options& with_backend(options::Options& table);
// The backend of those options: --backend (default redis; --redis is then
// required when `require_url`, a UsageError otherwise) with its URL,
// password and TLS options.
EngineOptions backend_from(const options::Parsed& p, bool require_url = true);

// The console's namespace list (the backend options of `opt`): every
// namespace, sorted (at most 100,000), read anew at each call.
std::function<std::vector<std::string>()> namespace_lister(const options::Parsed& opt);

}  // namespace pathlock::cli
