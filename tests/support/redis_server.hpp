// A real redis-server for tests, and a raw client to inspect it.
//
// shared_redis_server() is the server the whole test process uses: started
// lazily on first use (thread-safe), on a free loopback port, with
//   --save "" --appendonly no --maxmemory-policy noeviction
// and stopped (SIGTERM, then waitpid) when the process exits. If the
// environment variable PATHLOCK_TEST_REDIS_URL is set, that server is used
// instead and never stopped. Tests sharing it must use namespaces of their
// own (support/backends.hpp: unique_namespace) and must not change its
// configuration; a test that needs another configuration starts a private
// RedisServer with extra arguments.
//
// The binary is $PATHLOCK_REDIS_SERVER, else redis-server from PATH, else
// /usr/bin/redis-server. A server that does not answer PING within 10 s
// makes the constructor throw std::runtime_error with the server's log.
//
// RedisConnection is deliberately independent of the library's own client:
// tests look at the server through it, not through the code under test.
#pragma once

#include <pathlock/engine.hpp>

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

struct redisContext;

namespace pathlock::test {

struct RedisReply {
  enum class Type { nil, string, integer, array, status, error };
  Type type = Type::nil;
  std::string str;  // string, status or error text
  long long integer = 0;
  std::vector<RedisReply> elements;
  bool is_error() const { return type == Type::error; }
};

// One blocking connection (AUTH and SELECT from the URL are applied).
class RedisConnection {
 public:
  explicit RedisConnection(const std::string& url);
  ~RedisConnection();
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  // Runs a command; throws std::runtime_error if the connection fails.
  // Error replies are returned, not thrown.
  RedisReply command(const std::vector<std::string>& argv);

 private:
  redisContext* ctx_ = nullptr;
};

class RedisServer {
 public:
  // Starts a private server; `extra_args` are appended to the command line
  // (e.g. {"--maxmemory-policy", "allkeys-lru"}) and override the defaults.
  explicit RedisServer(const std::vector<std::string>& extra_args = {});
  // Stops the server if this object started it.
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  // Wraps a server that is already running; it is never stopped.
  static std::unique_ptr<RedisServer> external(const std::string& url);

  const std::string& url() const { return url_; }  // redis://127.0.0.1:PORT
  bool owned() const { return pid_ > 0; }

  // Runs one command on a fresh connection.
  RedisReply command(const std::vector<std::string>& argv) const;
  // Every key matching a SCAN pattern, sorted.
  std::vector<std::string> keys(const std::string& pattern) const;

 private:
  struct External {};
  RedisServer(External, std::string url);
  void stop();

  std::string url_;
  pid_t pid_ = -1;
  std::string dir_;  // working directory of an owned server (holds its log)
};

// The server shared by every test of this process; see the file comment.
RedisServer& shared_redis_server();

// A Redis-backend engine on `url` (the library under test).
std::unique_ptr<LockEngine> redis_engine(const std::string& url, const MatrixTable* matrix = nullptr,
                                         std::size_t pool_size = 4, Millis command_timeout = Millis{2000});

// "pl:{NS}:", the prefix of every key of namespace `ns`.
std::string prefix_of(const std::string& ns);

// The keys of namespace `ns` on `server`, without the prefix, sorted.
std::vector<std::string> ns_keys(const RedisServer& server, const std::string& ns);

// What a namespace keeps once every lock and waiter is gone.
inline const std::vector<std::string> kOnlyMetaAndFence{"fence", "meta"};

}  // namespace pathlock::test
