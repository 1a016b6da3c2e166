// One connection to one Redis node, and the reply type of the client.
//
// The bytes travel over a Stream of our own (tls.hpp: a TCP socket, with
// TLS when the URL is rediss://); hiredis only formats the commands
// (redisFormatCommandArgv) and parses the replies (its redisReader), so
// plain TCP and TLS share every line above the socket.
//
// Connection::open connects (and completes the TLS handshake) within
// connect_timeout, enables TCP keepalive, and sets the connection up by its
// role (nothing, AUTH included, is sent before the handshake completes):
//   data      AUTH, SELECT db, PING, CLIENT SETNAME pathlock-<pid>, and a
//             check of maxmemory-policy (allkeys-* evicts lock data: refused)
//   listener  AUTH, SELECT, PING, SETNAME (a subscription holds no data)
//   probe     AUTH and PING only (first contact with a seed: SELECT is not
//             allowed on a cluster node, and the mode is not known yet)
//   sentinel  AUTH if the sentinel wants a password, PING
// so a missing password fails at open, not on the first lock.
//
// Failures are typed so the router (redis_client.cpp) can apply the retry
// rule: a command may be sent again elsewhere only if it provably never
// reached a server.
//   Unreachable  the TCP connect, the TLS handshake (or the set-up
//                exchange) failed: nothing of the caller's was sent
//   NotSent      the caller's command was not completely written: the
//                server discards a partial command with the connection
//   BackendError anything else, e.g. a reply lost or late after the write
//                ("its effect is unknown"): never retried
// All three are BackendError with "redis at host:port/db: ..." messages.
// A write must complete within command_timeout, and a whole reply arrive
// within command_timeout of receive() starting.
//
// Thread safety: a Connection belongs to one thread at a time (the pool
// hands it out); Warnings is shared and thread-safe.
#pragma once

#include <pathlock/redis_url.hpp>
#include "redis/tls.hpp"

#include <pathlock/engine.hpp>
#include <pathlock/metrics.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

struct redisReader;
struct redisReply;

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

Reply convert_reply(const redisReply& r);

// The command could not be (completely) written: it never ran.
class NotSent : public BackendError {
 public:
  using BackendError::BackendError;
};

// The command was sent and the connection was lost before its whole reply
// came back: it may have run (its effect is unknown).
class ReplyLost : public BackendError {
 public:
  using BackendError::BackendError;
};

// No connection could be made (or set up): nothing was sent.
class Unreachable : public BackendError {
 public:
  using BackendError::BackendError;
};

// What every connection of one client shares.
struct ConnectionSettings {
  std::optional<std::string> user, password;
  int db = 0;
  Millis connect_timeout{2000};
  Millis command_timeout{2000};
  std::shared_ptr<TlsContext> tls;  // set for rediss:// URLs
};

// One-time warnings, shared by the connections of one client.
struct Warnings {
  std::atomic<bool> config{false};
  std::atomic<bool> subscribe{false};
  LogSink log;  // where warnings go (set once, before any connection opens)
  void warn(std::string_view message, std::vector<LogField> fields) const;
};

class Connection {
 public:
  enum class Role : std::uint8_t { data, listener, probe, sentinel };

  // Connects and sets up (see the file comment). Throws Unreachable when the
  // node cannot be reached, BackendError when it refuses the set-up (AUTH,
  // SELECT, eviction policy).
  static std::unique_ptr<Connection> open(const Endpoint& node, const ConnectionSettings& settings, Role role,
                                          Warnings& warnings);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Sends `argv` and reads its reply (error replies are returned). Throws
  // NotSent or BackendError as the file comment says. After a throw the
  // connection is unusable (broken() is true).
  Reply exchange(const std::vector<std::string>& argv);
  // Only writes `argv` (for a subscription). Throws NotSent.
  void send(const std::vector<std::string>& argv);
  // Reads one reply with the command timeout. Throws BackendError.
  Reply receive(std::string_view what);

  // For listeners (subscription, sentinel watcher), which poll: waits up to
  // `timeout_ms` until something can be read; reads what is there without
  // blocking (false: closed or failed); takes one reply already read, if
  // any (throws BackendError on a protocol error).
  bool wait_readable(int timeout_ms, int wake_fd = -1) const;
  bool read_available();
  std::optional<Reply> buffered_reply();

  // True if an idle connection can still carry a command: the server has
  // sent nothing (a closed connection reads as EOF, a reset as an error).
  bool looks_open();
  bool broken() const { return broken_; }
  // The time on the server's clock (ms since the epoch) at which a command
  // sent now has waited `budget`: the estimate of the server's clock that
  // a deadline sent with a call is made of (docs/lua-protocol.md#deadlines).
  // Read with TIME when a data connection is set up and again when older
  // than 30 s (one round trip, on this connection); nullopt when the server
  // refuses TIME. The estimate never runs ahead of the server: it is the
  // server's reading plus the time since its reply arrived. Throws NotSent
  // when the re-reading fails (the caller's command was not sent).
  std::optional<long long> server_deadline(Millis budget);
  // The server's clock read `server_ms` at some moment before the last
  // reply arrived (a reply that carries it): the estimate restarts from it.
  void learn_server_clock(long long server_ms);
  bool tls() const { return stream_->tls(); }
  const Endpoint& node() const { return node_; }
  // "redis at host:port/db"
  const std::string& name() const { return name_; }
  [[noreturn]] void fail(std::string_view what) const;

 private:
  Connection(std::unique_ptr<Stream> stream, Endpoint node, int db, Millis command_timeout);
  void setup(const ConnectionSettings& settings, Role role, Warnings& warnings);
  Reply setup_exchange(const std::vector<std::string>& argv);
  void check_eviction_policy(Warnings& warnings);

  std::unique_ptr<Stream> stream_;
  redisReader* reader_;
  Endpoint node_;
  std::string name_;
  void learn_server_time(const Reply& time);  // a TIME reply

  Millis command_timeout_;
  bool broken_ = false;
  std::optional<std::chrono::steady_clock::time_point> clock_read_;  // when the server's clock was learnt
  long long clock_offset_ms_ = 0;  // server ms minus steady ms at that moment
};

}  // namespace pathlock::redis
