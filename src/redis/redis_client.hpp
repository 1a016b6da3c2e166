// A small blocking Redis client for the Redis backend, on hiredis 0.14.
//
// RedisClient owns a pool of at most `pool_size` connections, opened lazily
// and shared by any number of threads: a call borrows one connection for
// its whole exchange and gives it back. Every new connection is set up the
// same way: connect with connect_timeout, socket timeouts of
// command_timeout, TCP keepalive, AUTH, SELECT, PING, CLIENT SETNAME
// pathlock-<pid>, and a check of the server's maxmemory-policy (setup() in
// redis_client.cpp).
//
// Failures. This file is the one place where hiredis errors, broken or
// timed-out connections, error replies and malformed replies become
// BackendError (always "redis at host:port/db: ..."). A command is retried
// once, on a fresh connection, only when it provably never reached the
// server: the borrowed connection was found closed before sending (the
// server sent EOF, e.g. after CLIENT KILL or a restart) or the write itself
// failed, so the server never saw a complete command. Once a command is
// written, a lost or late reply is not retried: the script may have run,
// and running it twice is not the same (a second acquire adds a hold).
//
// Thread safety: every public method may be called concurrently.
#pragma once

#include "redis/redis_url.hpp"

#include <pathlock/engine.hpp>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

struct redisContext;

namespace pathlock::redis {

// One reply, copied out of hiredis. The accessors throw BackendError when
// the reply does not have the expected shape.
struct Reply {
  enum class Type : std::uint8_t { nil, string, integer, array, status, error };
  Type type = Type::nil;
  std::string str;  // string, status or error text
  long long integer = 0;
  std::vector<Reply> elements;

  bool is_error() const { return type == Type::error; }
  const Reply& at(std::size_t i) const;  // element i of an array
  const std::string& text() const;       // a string or status
  long long number() const;              // an integer
};

struct ClientOptions {
  RedisUrl url;
  Millis connect_timeout{2000};
  Millis command_timeout{2000};
  std::size_t pool_size = 4;
};

// A Lua script: its source and, once loaded, its SHA1 for EVALSHA.
struct Script {
  std::string name;
  std::string_view source;
  std::string sha;  // empty: always use EVAL
};

class RedisClient {
 public:
  // Opens one connection right away so a bad address, bad credentials or a
  // refused eviction policy fail here. Throws BackendError.
  explicit RedisClient(ClientOptions options);
  ~RedisClient();
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  // Runs one command and returns its reply; an error reply is returned as
  // Reply::Type::error. Throws BackendError if the exchange failed.
  Reply call(const std::vector<std::string>& argv);
  // Like call, but an error reply throws BackendError too.
  Reply command(const std::vector<std::string>& argv);
  // SCRIPT LOAD: fills script.sha (left empty if SCRIPT is unavailable).
  void load(Script& script);
  // EVALSHA, falling back to EVAL on NOSCRIPT (after a restart or SCRIPT
  // FLUSH) on the same connection. An error reply throws BackendError.
  Reply eval(const Script& script, const std::vector<std::string>& keys, const std::vector<std::string>& args);

  // Throws BackendError("redis at <server>: <what>"): the only way this
  // backend reports a backend failure.
  [[noreturn]] void fail(std::string_view what) const;
  const std::string& server() const { return server_; }

 private:
  class Lease;
  enum class Sent : std::uint8_t { no, yes };

  redisContext* connect();
  void setup(redisContext* ctx);
  redisContext* take(bool fresh);
  void give_back(redisContext* ctx, bool reusable);
  Reply exchange(Lease& lease, const std::vector<std::string>& argv);
  template <class Body>
  Reply with_connection(Body&& body);

  ClientOptions options_;
  std::string server_;  // host:port/db, for messages
  std::mutex mutex_;
  std::condition_variable returned_;
  std::vector<redisContext*> idle_;
  std::size_t open_ = 0;  // idle + borrowed + being opened
  std::atomic<bool> warned_config_{false};
};

}  // namespace pathlock::redis
