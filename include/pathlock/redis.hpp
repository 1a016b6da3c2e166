// pathlock/redis.hpp: the Redis backend.
//
// Many service instances share locks through one Redis deployment. Every call
// is one atomic server-side function, timed by the server's clock; see
// docs/operations.md for deployment and docs/lua-protocol.md for the data
// layout. Thread safety: the engine may be called from any number of
// threads; it keeps a pool of at most pool_size connections.
#pragma once

#include <pathlock/engine.hpp>
#include <pathlock/metrics.hpp>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

namespace pathlock {

// TLS for rediss:// and rediss-sentinel:// URLs (setting any of these with a
// plain redis:// URL is an InvalidRequest, not silently ignored). The files are
// PEM; they are read when the engine is created and read again by a new
// connection whenever one of them changed (size or modification time), so
// renewed certificates take effect without a restart (docs/operations.md#tls).
struct RedisTlsOptions {
  std::string ca_file{};      // CAs that sign the servers' certificates; with
  std::string ca_dir{};       // ca_dir (a c_rehash directory) both empty: the system trust store
  std::string cert_file{};    // client certificate (chain) for mutual TLS ...
  std::string key_file{};     // ... and its private key (unencrypted); both or neither
  std::string server_name{};  // SNI and the name verified; empty: each node's host as connected to
  std::string min_version{};  // "1.2" (empty: the default) or "1.3"
  // Accepts any server certificate: no CA and no name check. Test setups
  // only: anyone on the path can read and change the traffic. Warned about.
  bool insecure_skip_verify = false;
};

struct RedisOptions {
  const MatrixTable* matrix = nullptr;  // nullptr: default_matrix(); must outlive the engine
  // redis://[user:password@]host:port[,host:port...][/db] (one server or a
  // Redis Cluster, detected), or redis-sentinel://[user:password@]host:port
  // [,host:port...][/db]#MASTER; rediss:// and rediss-sentinel:// are the
  // same over TLS (see `tls`). docs/operations.md lists every form.
  std::string url = "redis://127.0.0.1:6379";
  Millis connect_timeout{2000};
  Millis command_timeout{2000};
  std::size_t pool_size = 4;  // connections, opened when needed
  // Replicas that must acknowledge a grant before acquire returns it, 0..64
  // (0: do not wait). When fewer acknowledge within half the command
  // timeout, the grant is released and acquire throws BackendError ("not
  // replicated"). A renewal waits the same way and throws BackendError when
  // fewer acknowledge it (the lease may end at its previous end). See
  // docs/operations.md#failover.
  int replicas = 0;
  RedisTlsOptions tls{};  // for rediss:// and rediss-sentinel:// only
  // Metrics, observer, logs (pathlock/metrics.hpp). The client counts its
  // errors, retries, failovers and call latency in the same Metrics, and
  // its warnings go to observe.log.
  ObserveOptions observe{};
  // The password to send, kept out of `url` (read from a file or the
  // environment, so that no command line or page shows it): with it the
  // url may name a user without one ("redis://locker@host"); a url with a
  // password of its own too is refused (InvalidRequest).
  std::optional<std::string> password{};
};

// Creates a Redis engine and connects once, so that a bad address, bad
// credentials or an unsafe server setting fail here. Throws InvalidRequest
// for bad options (a malformed url, a zero timeout) and BackendError when
// the server cannot be used.
std::unique_ptr<LockEngine> make_redis_engine(const RedisOptions& options);

}  // namespace pathlock
