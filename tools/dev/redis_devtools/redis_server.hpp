// A real redis-server as a child process, and a raw client to look at it:
// shared by the test suite (tests/support/redis_server.hpp) and the benchmark
// (tools/dev/bench). Not part of the library.
//
// RedisServer starts redis-server through the one test launcher of every
// language's tests (testenv.hpp, tests/support/pathlock-testenv): on a free
// loopback port (room for a Cluster bus where the arguments enable a
// Cluster), with --save "" --appendonly no (plus extra arguments), ready once
// PING answers as that very process, stopped (SIGTERM, waited for) when
// destroyed. The launcher runs in its own process group (a Ctrl-C to the
// parent does not reach the server; the parent stops it) and stops the
// server when the parent ends, even when the parent crashes.
//
// The binary is $PATHLOCK_REDIS_SERVER, else redis-server from PATH. A
// server that does not answer within 30 s makes the constructor throw
// std::runtime_error (the launcher's message is on stderr). The server gets
// this process's environment, plus the variables a test names (a clock
// faker's LD_PRELOAD: tests/support/clock_step.hpp).
//
// RedisConnection is deliberately independent of the library's own client:
// tests and benchmarks look at the server through it, not through the code
// under test.
#pragma once

#include "until.hpp"

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

struct redisContext;

namespace pathlock::devtools {

class Testenv;

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
// This process's environment ("NAME=value" each) with `vars` ("NAME=value"
// each) added, replacing the variables of the same names: what a child
// started with them sees.
std::vector<std::string> environment_with(const std::vector<std::string>& vars);

// Runs `argv` (argv[0] looked up in PATH) with stdin from /dev/null and its
// output captured; kills it after `timeout_ms`. Returns the exit status
// (128 + signal if killed) and appends the output to `output`.
int run_program(const std::vector<std::string>& argv, std::string& output, int timeout_ms = 60000);

// until(), throwing std::runtime_error("<who>: timed out waiting for <what>")
// at its limit (`seconds`, else the one default).
template <class Ready>
void wait_for(const char* who, const char* what, Ready&& ready,
              int seconds = static_cast<int>(kUntilLimit.count() / 1000)) {
  if (!until(ready, std::chrono::seconds(seconds)))
    throw std::runtime_error(std::string(who) + ": timed out waiting for " + what);
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
  // server and returns once it has exited: no shutdown, no final save. restart() starts it
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
  // Stops the server now (SIGTERM, waited for); idempotent. restart()
  // starts it again.
  void stop();

 private:

  std::string url_;
  int port_ = 0;
  pid_t pid_ = -1;
  std::string dir_;  // an owned server's directory
  std::vector<std::string> args_;  // an owned server's extra arguments, for restart()
  std::vector<std::string> environment_;  // what the server's environment adds
  std::unique_ptr<Testenv> launcher_;  // what started an owned server
};

}  // namespace pathlock::devtools
