// pathlock/redis_admin.hpp: the Redis backend's Functions library as an
// artifact a deployment loads (`pathlock redis load`), and the read-only
// look at which libraries a server holds (`pathlock redis libraries`).
// Functions are per node: both run on every master (a Cluster's every
// master, a Sentinel's current master, the one server). Redis builds only
// (PATHLOCK_WITH_REDIS); without it they throw InvalidRequest.
#pragma once

#include <pathlock/redis.hpp>

#include <optional>
#include <string>
#include <vector>

namespace pathlock::redis_admin {

// One master's answer to FUNCTION LOAD of the library of options.matrix
// (never REPLACE: "already exists" is success, already_loaded = true).
struct LibraryLoad {
  std::string node;     // host:port
  std::string library;  // pathlock_v<layout>_<hash> (docs/lua-protocol.md#the-library)
  bool already_loaded = false;
};

// Loads the library the engine of `options` would load (the same name) on
// every master. Throws BackendError when a master refuses it.
std::vector<LibraryLoad> load_library(const RedisOptions& options);

// What a library's `info` function answers (docs/lua-protocol.md#info).
struct LibraryInfo {
  std::string library, matrix, matrix_version, fingerprint;
  long long layout = 0;
  std::string pathlock_version;
  std::string function_prefix;  // its functions' names start with this
};

// One library named pathlock_* on one master.
struct ServerLibrary {
  std::string node, library;
  std::optional<LibraryInfo> info;  // nullopt: no info function (older library), or it failed:
  std::string error;                // why, when the call of info failed
};

// Every library named pathlock_* on every master, with its info (FCALL, not
// FCALL_RO: the administrator of docs/operations.md may run FCALL only; info
// writes nothing). Throws BackendError when FUNCTION LIST fails.
std::vector<ServerLibrary> list_libraries(const RedisOptions& options);

// The SCAN MATCH pattern of every key the Redis backend keeps for the
// namespaces whose names start with `namespace_prefix` (a benchmark or a
// test that removes what its namespaces left: docs/lua-protocol.md#keys), so
// that no program spells the key layout. Throws InvalidRequest for a prefix
// with a character namespaces do not have (and, as the functions above, in a
// build without the Redis backend).
std::string key_pattern(std::string_view namespace_prefix);

}  // namespace pathlock::redis_admin
