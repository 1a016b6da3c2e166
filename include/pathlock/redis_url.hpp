// pathlock/redis_url.hpp: the Redis connection URLs of RedisOptions::url,
// parsed (public so that a program can check and show a URL the way the
// engine reads it): one string names a whole deployment (a single server, a
// Redis Cluster, or a Sentinel-watched master).
//
// Accepted forms:
//   redis://[[user]:password@]host[:port][,host[:port]...][/db]
//     One or more seed nodes. The client asks the first one that answers
//     whether it is a cluster node (INFO cluster) and works in cluster mode
//     if so, standalone otherwise: the same URL serves both.
//   redis-sentinel://[[user]:password@]host[:port][,host[:port]...][/db]#MASTER
//     The sentinels (default port 26379) that watch master MASTER (the form
//     Lettuce uses). The credentials are those of the master; sentinels are
//     sent them too, and a sentinel without a password is accepted.
//   * host: a name, an IPv4 address or a bracketed IPv6 address ("[::1]");
//   * port: 1..65535, default 6379 (26379 for sentinels);
//   * db: the database number for SELECT, default 0 (cluster mode: only 0);
//   * user, password and MASTER are percent-decoded ("%40" is '@'); a
//     password without a user ("redis://:secret@host") authenticates as the
//     default user (AUTH password), a user and a password with AUTH user
//     password.
//   rediss://... and rediss-sentinel://... are the same forms over TLS (to
//     the seeds, every cluster node, the sentinels and the master they
//     name); the TLS settings are RedisOptions::tls (connection.hpp, tls.hpp).
// Anything else (another scheme,
// a query string, a fragment on redis://, an empty host, a bad port or db, a
// sentinel URL without a master name) throws InvalidRequest naming the
// problem, never showing the password. Pure functions, no state.
#pragma once

#include <pathlock/redis_secret.hpp>  // redact_redis_url

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pathlock::redis {

// One node's address.
struct Endpoint {
  std::string host;
  int port = 6379;

  // "host:port" ("[::1]:6379" for IPv6).
  std::string describe() const;
  friend bool operator==(const Endpoint&, const Endpoint&) = default;
};

struct RedisUrl {
  enum class Kind : unsigned char { redis, sentinel };
  Kind kind = Kind::redis;
  std::vector<Endpoint> nodes;  // seeds (redis) or sentinels; never empty
  std::string host;             // nodes[0].host
  int port = 6379;              // nodes[0].port
  std::optional<std::string> user;      // AUTH user password
  std::optional<std::string> password;  // AUTH password when user is empty
  int db = 0;
  std::string master_name;  // redis-sentinel:// only
  bool tls = false;         // rediss:// or rediss-sentinel://

  // "host:port[,host:port...]/db" (plus " master NAME via sentinels" for
  // sentinel URLs), without credentials, for messages.
  std::string describe() const;
};

// Parses `url`. `password`, when given (read from a file or the
// environment, so that it shows in no command line), is the one to send:
// with it "user@host" is accepted (AUTH user password), and a url that has
// a password of its own too is refused (one password, given once). Throws
// InvalidRequest; its message shows the url redacted (redact_redis_url).
RedisUrl parse_redis_url(std::string_view url, const std::optional<std::string>& password = std::nullopt);

}  // namespace pathlock::redis
