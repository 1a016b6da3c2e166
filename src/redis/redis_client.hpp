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
// Waiting (Subscription): a waiting acquire listens for wake-ups on a
// dedicated connection of its own, opened by subscribe() outside the pool
// (so waiters can never exhaust the pool the attempts need) and closed when
// the wait ends; a connection in subscribe mode is never pooled or reused.
// Messages are read with poll() on the socket and a timeout, never with a
// blocking hiredis read, so a quiet channel is not a socket timeout.
//
// Thread safety: every public method may be called concurrently; one
// Subscription belongs to one thread.
#pragma once

#include "redis/redis_url.hpp"

#include <pathlock/engine.hpp>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
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

class RedisClient;

// One SSUBSCRIBE (sharded pub/sub) on a dedicated connection (see the file
// comment).
class Subscription {
 public:
  enum class Wake : std::uint8_t {
    timeout,   // nothing arrived in time
    message,   // one or more messages arrived; their payloads were appended
    reopened,  // the connection broke and was opened again: messages may
               // have been lost, so the caller should look again
  };
  ~Subscription();
  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;

  // Waits up to `timeout` for messages on the channel and appends their
  // payloads to `payloads`. When the server refuses the subscription (an
  // ACL without channel rights, SUBSCRIBE renamed) it only sleeps: the
  // caller's timed re-checks still work, without quick wake-ups. Throws
  // BackendError if a broken connection cannot be opened again.
  Wake wait(Millis timeout, std::vector<std::string>& payloads);

 private:
  friend class RedisClient;
  Subscription(RedisClient& client, std::string channel);
  void open();
  void close();
  bool drain(std::vector<std::string>& payloads);  // buffered messages only

  RedisClient& client_;
  std::string channel_;
  redisContext* ctx_ = nullptr;  // null: the server refused the subscription
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

  // ---- Redis Functions (the lock library, see redis/library.hpp) ----------
  // FUNCTION LOAD REPLACE of library `name` (loading an identical library
  // again is harmless), remembered so that fcall can load it again on a
  // server that lost it. Throws BackendError if the server refuses it.
  void load_library(const std::string& name, const std::string& code);
  // FCALL function numkeys keys... args...; when the server answers that
  // the function is unknown (restart, failover, FUNCTION FLUSH: the call did
  // not run), loads every remembered library on the same connection and
  // retries once. An error reply throws BackendError.
  Reply fcall(const std::string& function, const std::vector<std::string>& keys, const std::vector<std::string>& args);
  // ---- end of Redis Functions ----------------------------------------------

  // Opens a dedicated connection and SSUBSCRIBEs it to `channel`: the
  // subscription is in place when this returns, so a message published
  // afterwards is never missed. Throws BackendError if it cannot connect.
  std::unique_ptr<Subscription> subscribe(std::string channel);

  // Throws BackendError("redis at <server>: <what>"): the only way this
  // backend reports a backend failure.
  [[noreturn]] void fail(std::string_view what) const;
  const std::string& server() const { return server_; }

 private:
  class Lease;
  friend class Subscription;
  enum class Sent : std::uint8_t { no, yes };

  // A new connection, set up as described above; a listener (a connection
  // for a Subscription) skips the eviction-policy check: it holds no data.
  redisContext* connect(bool listener = false);
  void setup(redisContext* ctx, bool listener);
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
  std::atomic<bool> warned_subscribe_{false};
  std::mutex libraries_mutex_;                                   // Redis Functions
  std::vector<std::pair<std::string, std::string>> libraries_;  // name, code
};

}  // namespace pathlock::redis
