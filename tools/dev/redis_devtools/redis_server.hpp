// A real redis-server as a child process, and a raw client to look at it:
// shared by the test suite (tests/support/redis_server.hpp) and the benchmark
// (tools/dev/bench). Not part of the library.
//
// RedisServer starts redis-server on a free loopback port with
//   --save "" --appendonly no --maxmemory-policy noeviction
// (plus extra arguments), waits for PING, and stops it (SIGTERM, then
// SIGKILL after 5 s) when destroyed. The child runs in its own process group
// (a Ctrl-C to the parent does not reach it; the parent stops it) and, when
// started from the main thread, dies with the parent (PR_SET_PDEATHSIG).
//
// The binary is $PATHLOCK_REDIS_SERVER, else redis-server from PATH, else
// /usr/bin/redis-server. A server that does not answer PING within 10 s
// makes the constructor throw std::runtime_error with the server's log.
// The server gets this process's environment, plus the variables a test
// names (a clock faker's LD_PRELOAD: tests/support/clock_step.hpp).
//
// RedisConnection is deliberately independent of the library's own client:
// tests and benchmarks look at the server through it, not through the code
// under test.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

struct redisContext;

namespace pathlock::devtools {

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
  // Pipelining: queue a command without waiting; get() returns the replies
  // in order. Transport failures throw std::runtime_error.
  void append(const std::vector<std::string>& argv);
  RedisReply get();

 private:
  redisContext* ctx_ = nullptr;
};

// A TCP port on 127.0.0.1 that was free a moment ago.
int free_loopback_port();
// A Redis Cluster node's bus port is its port + 10000 unless --cluster-port
// names another: a node's port must be at most kMaxNodePort.
inline constexpr int kMaxNodePort = 65535 - 10000;
// A free loopback port of at most `limit` (free_loopback_port, drawn again
// above it).
int free_loopback_port_below(int limit);
// The port RedisServer gives a server started with `args`: at most
// kMaxNodePort for a Cluster node without --cluster-port (and a Sentinel).
int node_port_for(const std::vector<std::string>& args);

// This process's environment ("NAME=value" each) with `vars` ("NAME=value"
// each) added, replacing the variables of the same names: what a child
// started with them sees.
std::vector<std::string> environment_with(const std::vector<std::string>& vars);

// Runs `argv` (argv[0] looked up in PATH) with stdin from /dev/null and its
// output captured; kills it after `timeout_ms`. Returns the exit status
// (128 + signal if killed) and appends the output to `output`.
int run_program(const std::vector<std::string>& argv, std::string& output, int timeout_ms = 60000);

// Polls `ready()` every 50 ms until it returns true; after `seconds` throws
// std::runtime_error("<who>: timed out waiting for <what>").
template <class Ready>
void wait_for(const char* who, const char* what, Ready&& ready, int seconds = 30) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (!ready()) {
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error(std::string(who) + ": timed out waiting for " + what);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

class RedisServer {
 public:
  // Starts a private server; `extra_args` are appended to the command line
  // (e.g. {"--maxmemory-policy", "allkeys-lru"}) and override the defaults.
  explicit RedisServer(const std::vector<std::string>& extra_args = {});
  // Same, with `config` written to redis.conf in the server's directory and
  // named first on the command line (redis-server --sentinel needs a
  // writable config file).
  RedisServer(const std::vector<std::string>& extra_args, const std::string& config);
  // Same (`config` may be empty: none), with `environment` ("NAME=value"
  // each) added to the server's environment, also when it is restarted.
  RedisServer(const std::vector<std::string>& extra_args, const std::string& config,
              const std::vector<std::string>& environment);
  // Stops the server if this object started it.
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  // Wraps a server that is already running; it is never stopped.
  static std::unique_ptr<RedisServer> external(const std::string& url);

  const std::string& url() const { return url_; }  // redis://127.0.0.1:PORT
  int port() const { return port_; }
  // The port given with --tls-port in the extra arguments (0: none), and
  // rediss://127.0.0.1:TLS_PORT (tls_certs.hpp makes the arguments).
  int tls_port() const;
  std::string tls_url() const { return "rediss://127.0.0.1:" + std::to_string(tls_port()); }
  const std::string& dir() const { return dir_; }  // empty for an external server
  bool owned() const { return pid_ > 0; }

  // Runs one command on a fresh connection.
  RedisReply command(const std::vector<std::string>& argv) const;
  // Every key matching a SCAN pattern, sorted.
  std::vector<std::string> keys(const std::string& pattern) const;

  // Fault injection (servers this object started). kill_hard() SIGKILLs the
  // server and reaps it: no shutdown, no final save. restart() starts it
  // again with the same arguments, port and directory (so with
  // --appendonly yes it reloads its AOF) and returns once it answers PING
  // after loading. Both throw std::runtime_error when misused or when the
  // server does not come back within 10 s.
  void kill_hard();
  void restart();

 private:
  struct External {};
  RedisServer(External, std::string url);
  void start(const std::vector<std::string>& extra_args, const std::string& config);

 public:
  // Stops the server now (SIGTERM, then SIGKILL after 5 s); idempotent.
  void stop();

 private:

  std::string url_;
  int port_ = 0;
  pid_t pid_ = -1;
  std::string dir_;  // working directory of an owned server (holds its log)
  std::vector<std::string> args_;  // command line of an owned server, for restart()
  std::vector<std::string> environment_;  // what the server's environment adds, for restart()
};

}  // namespace pathlock::devtools
