// One libpq connection to PostgreSQL, and a pool of them. Private to the
// library (the PostgreSQL backend, postgres_engine.cpp).
//
// Why libpq and not libpqxx: the engine needs libpq's asynchronous API
// (PQsendQueryParams, PQconsumeInput, PQnotifies) to wait on the socket with
// poll() and a deadline, and to read LISTEN/NOTIFY wake-ups (the listener's
// thread, listener.cpp); libpqxx wraps these only
// partially, throws from places where this library promises noexcept
// (leave, give_back, destructors), and would be one more dependency.
//
// Every call is one statement sent with its parameters as text, waited for
// with poll() up to the command timeout; a timeout sends a cancel request
// (PQcancel) for the statement still running, so the server abandons it
// (docs/postgres.md#timeouts); a timeout or a broken connection marks the
// connection broken (it is closed, never pooled again) and throws
// BackendError. An error the server answered (SQLSTATE) leaves the
// connection usable: 22023 (invalid_parameter_value, raised by the
// functions for bad input) is InvalidRequest, everything else BackendError.
//
// Thread safety: a Connection belongs to one thread at a time; the Pool may
// be used from any thread.
#pragma once


#include <pathlock/engine.hpp>

#include <libpq-fe.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace pathlock::postgres {

struct ResultDeleter {
  void operator()(PGresult* r) const noexcept { PQclear(r); }
};
using Result = std::unique_ptr<PGresult, ResultDeleter>;

// A statement parameter: text, or NULL.
using Param = std::optional<std::string>;

// A notification: its channel and payload.
struct Notification {
  std::string channel, payload;
};

class Connection {
 public:
  // Connects (libpq URI or key=value string) as application `name`
  // (unless the string names one). Throws BackendError.
  Connection(const std::string& conninfo, Millis connect_timeout, const char* name = "pathlock");
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Runs `sql` with `params` ($1, $2, ...). Returns the result (tuples or
  // command ok). Throws InvalidRequest (SQLSTATE 22023) or BackendError.
  Result exec(const std::string& sql, const std::vector<Param>& params, Millis timeout);
  // Runs a script of several statements (simple query protocol).
  void exec_script(const std::string& sql, Millis timeout);

  // Reads what the server sent (after LISTEN on this connection) and
  // appends its notifications. False when the connection broke.
  bool read_notifications(std::vector<Notification>& out) noexcept;
  // The socket, to wait for notifications with poll().
  int socket() const noexcept { return PQsocket(conn_); }

  // False once a call found the connection unusable.
  bool usable() const noexcept { return !broken_ && PQstatus(conn_) == CONNECTION_OK; }
  // An idle connection the server closed (restart, pg_terminate_backend)
  // has something to read: true when it is still fine to use.
  bool still_open() noexcept;
  std::string server() const;

 private:
  void finish() noexcept;  // PQfinish inside a NoForkSection
  [[noreturn]] void lost(const std::string& what);
  void cancel() noexcept;
  void send_and_wait(Millis timeout);
  Result collect();
  bool wait_socket(short events, std::chrono::steady_clock::time_point deadline);

  PGconn* conn_ = nullptr;
  bool broken_ = false;
};

// The SQLSTATE of `error` (5 characters), or "".
std::string sqlstate_of(const PGresult* error);

// Idle connections, at most `max_idle` kept; more are opened when needed,
// at most `max_open` at once (0: no bound). A take() that finds them all in
// use waits for one up to its timeout, then throws BackendError saying so.
class Pool {
 public:
  Pool(std::string conninfo, Millis connect_timeout, std::size_t max_idle, std::size_t max_open = 0)
      : conninfo_(std::move(conninfo)), connect_timeout_(connect_timeout), max_idle_(max_idle),
        max_open_(max_open) {}

  class Lease {
   public:
    Lease(Pool& pool, std::unique_ptr<Connection> c) : pool_(pool), c_(std::move(c)) {}
    ~Lease() { pool_.give(std::move(c_)); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Connection& operator*() { return *c_; }
    Connection* operator->() { return c_.get(); }

   private:
    Pool& pool_;
    std::unique_ptr<Connection> c_;
  };

  // An idle connection that is still open, or a new one; waits up to
  // `wait` when max_open are in use.
  Lease take(Millis wait = Millis{0});
  // A new connection outside the pool (the engine's listener: `name`).
  std::unique_ptr<Connection> open(const char* name = "pathlock") const;
  // Forgets every idle connection without closing it (a forked child must
  // not end the parent's sessions).
  void abandon() noexcept;
  ~Pool();

 private:
  void give(std::unique_ptr<Connection> c) noexcept;

  const std::string conninfo_;
  const Millis connect_timeout_;
  const std::size_t max_idle_;
  const std::size_t max_open_;
  std::mutex mutex_;
  std::condition_variable freed_;
  std::size_t open_ = 0;  // leased and idle
  std::vector<std::unique_ptr<Connection>> idle_;
};

}  // namespace pathlock::postgres
