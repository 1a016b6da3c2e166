// The redis-server of the test process, and helpers for Redis tests.
//
// shared_redis_server() is the server the whole test process uses: started
// lazily on first use (thread-safe), on a free loopback port, and stopped
// when the process exits. If the environment variable PATHLOCK_TEST_REDIS_URL
// is set, that server is used instead and never stopped. Tests sharing it
// must use namespaces of their own (support/backends.hpp: unique_namespace)
// and must not change its configuration; a test that needs another
// configuration starts a private RedisServer with extra arguments.
#pragma once

#include "redis_devtools/redis_cluster.hpp"
#include "redis_devtools/redis_sentinel.hpp"
#include "redis_devtools/redis_server.hpp"
#include "redis_devtools/tls_certs.hpp"

#include <pathlock/engine.hpp>
#include <pathlock/factory.hpp>
#include <pathlock/redis.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pathlock::test {

using devtools::RedisConnection;
using devtools::RedisReply;
using devtools::RedisServer;
using devtools::ClusterServers;
using devtools::SentinelServers;
using devtools::TlsCertificates;

// The server shared by every test of this process; see the file comment.
RedisServer& shared_redis_server();

// A 3 + 3 Redis Cluster shared by the [cluster] tests of this process,
// started on first use and stopped at exit. Tests may move slots and fail
// masters over (the cluster stays whole), so they must not assume which
// node serves what: ask it (master_of, keyslot).
ClusterServers& shared_cluster();

// A Sentinel deployment (master, replica, 3 sentinels) shared by the
// [sentinel] tests; failover() swaps master and replica.
SentinelServers& shared_sentinel();

// Test certificates (made with openssl at first use, removed at exit).
TlsCertificates& shared_tls_certificates();

// A server shared by the TLS tests: TLS on tls_port() with the shared
// certificates (client certificates optional), plain on port() for the
// devtools. url() is plain, tls_url() rediss://.
RedisServer& shared_tls_redis_server();

// RedisOptions::tls trusting the shared test CA, nothing else set.
RedisTlsOptions test_tls_options();

// A Redis-backend engine on a TLS `url` with `tls` options.
std::unique_ptr<LockEngine> redis_tls_engine(const std::string& url, const RedisTlsOptions& tls,
                                             Millis connect_timeout = Millis{2000});

// A Redis-backend engine on `url` (the library under test).
std::unique_ptr<LockEngine> redis_engine(const std::string& url, const MatrixTable* matrix = nullptr,
                                         std::size_t pool_size = 4, Millis command_timeout = Millis{2000});

// A rolling deploy's two versions on the shared server, in one fresh
// namespace (named from `hint`): an engine of the shipped matrix and one of
// `other` (take them apart with `auto& [ns, shipped, next] = versions;`).
struct TwoMatrices {
  TwoMatrices(const MatrixTable& other, const std::string& hint);
  std::string ns;
  std::unique_ptr<LockEngine> shipped, other;
};

// "pl:{NS}:", the prefix of every key of namespace `ns`.
std::string prefix_of(const std::string& ns);

// Polls (up to 5 s) until `server` is busy: a PING on a new plain
// connection gets no answer within 100 ms (a DEBUG SLEEP or a long script
// runs). True once it is.
bool until_busy(const RedisServer& server);

// A numeric field of `INFO section` on `server` (used_memory, evicted_keys);
// throws std::runtime_error when the field is missing.
long long info_field(const RedisServer& server, const std::string& section, const std::string& field);

// How many times `server` ran `command` (lower case: "fcall", "asking"),
// from INFO commandstats: 0 before its first call, and since its start or
// its last CONFIG RESETSTAT.
long long command_calls(const RedisServer& server, const std::string& command);

// The keys of namespace `ns` on `server`, without the prefix, sorted.
std::vector<std::string> ns_keys(const RedisServer& server, const std::string& ns);

// Loads the Functions library of matrix `m` (FUNCTION LOAD REPLACE) and calls
// its function `function` with FCALL on namespace `ns`, as a service in
// another language would (docs/lua-protocol.md).
RedisReply call_function(RedisConnection& c, const MatrixTable& m, std::string_view function, const std::string& ns,
                         std::vector<std::string> args);

// call_function() on one connection of its own to `url`, for matrix `m` and
// namespace `ns`: eval("acquire", {...}).
class FunctionCaller {
 public:
  FunctionCaller(const std::string& url, const MatrixTable& m, std::string ns)
      : connection(url), matrix_(m), ns_(std::move(ns)) {}
  RedisReply operator()(std::string_view function, std::vector<std::string> args) {
    return call_function(connection, matrix_, function, ns_, std::move(args));
  }

  RedisConnection connection;  // for raw commands beside the calls

 private:
  const MatrixTable& matrix_;
  std::string ns_;
};

// What a namespace keeps once every lock and waiter is gone.
inline const std::vector<std::string> kOnlyMeta{"meta"};

// A one-function Functions library for client tests (routing, WAIT):
// kSetFunction(KEYS[1], ARGV[1]) runs SET and returns its status ("OK").
inline constexpr const char* kSetLibraryName = "pathlock_test_set";
inline constexpr const char* kSetFunction = "pathlock_test_set";
inline const std::string kSetLibrary =
    "#!lua name=pathlock_test_set\n"
    "redis.register_function('pathlock_test_set', function(keys, args) return redis.call('SET', keys[1], args[1]) "
    "end)";

}  // namespace pathlock::test
