// One libpq connection and a pool: see connection.hpp.
#include "postgres/connection.hpp"

#include "core/process.hpp"

#include <fmt/format.h>

#include <poll.h>

#include <cerrno>
#include <cstring>
#include <system_error>
#include <thread>

namespace pathlock::postgres {
namespace {

using SteadyClock = std::chrono::steady_clock;

std::string trimmed(const char* message) {
  std::string s = message ? message : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// `call()` (a libpq call that reads or writes the socket, never one that
// waits: the connection is non-blocking) inside an OpenSslSection: over TLS
// it runs OpenSSL, whose process-wide locks a fork must not catch held
// (core/process.hpp; docs/design.md#fork).
template <class Call>
auto no_fork_io(Call call) {
  const core::OpenSslSection no_fork;
  return call();
}

}  // namespace

std::string sqlstate_of(const PGresult* error) {
  const char* state = error ? PQresultErrorField(error, PG_DIAG_SQLSTATE) : nullptr;
  return state ? state : "";
}

Connection::Connection(const std::string& conninfo, Millis connect_timeout, const char* name) {
  // Our settings first: the URL's own (dbname expanded last) win over them.
  const std::string seconds = std::to_string(std::max<long long>(2, (connect_timeout.count() + 999) / 1000));
  const char* keys[] = {"connect_timeout", "client_encoding", "application_name", "dbname", nullptr};
  const char* values[] = {seconds.c_str(), "UTF8", name, conninfo.c_str(), nullptr};
  {
    // libpq's connect takes its and OpenSSL's process-wide locks: a fork waits for it.
    const core::OpenSslSection no_fork;
    conn_ = PQconnectdbParams(keys, values, 1);
  }
  if (!conn_) throw BackendError("postgres: out of memory");
  if (PQstatus(conn_) != CONNECTION_OK) {
    const std::string message = trimmed(PQerrorMessage(conn_));
    finish();
    conn_ = nullptr;
    throw BackendError(fmt::format("postgres: cannot connect: {}", message));
  }
  PQsetnonblocking(conn_, 1);
}

Connection::~Connection() {
  if (conn_) finish();
}

void Connection::finish() noexcept {
  const core::OpenSslSection no_fork;  // PQfinish may end a TLS session under libpq's lock
  PQfinish(conn_);
}

std::string Connection::server() const {
  return fmt::format("{}:{}", PQhost(conn_) ? PQhost(conn_) : "?", PQport(conn_) ? PQport(conn_) : "?");
}

void Connection::lost(const std::string& what) {
  broken_ = true;
  throw BackendError(fmt::format("postgres at {}: {}: {} (the call's effect is unknown)", server(), what,
                                 trimmed(PQerrorMessage(conn_))));
}

// Asks the server to cancel the statement in flight (a new connection to
// it, PQcancel): a call its caller stopped waiting for ends there too,
// rolled back unless it was already committing. The request is sent from a
// thread of its own, so the caller returns at its deadline: libpq 15's
// PQcancel has no timeout, and with the server cut off its connect blocks
// for TCP's SYN retries, about two minutes (tests/partition_postgres_test.cpp).
// PGcancel is a self-contained copy (address and key), and PQcancel is
// signal-safe (no lock a fork could catch held); the server's own
// lock_timeout and statement_timeout end the call when the request never
// arrives.
void Connection::cancel() noexcept {
  PGcancel* c = PQgetCancel(conn_);
  if (!c) return;
  try {
    std::thread([c] {
      char error[256];
      (void)PQcancel(c, error, sizeof error);
      PQfreeCancel(c);
    }).detach();
  } catch (const std::system_error&) {  // no thread: the server's timeouts still end the call
    PQfreeCancel(c);
  }
}

// Waits until the socket is ready for `events` (true) or the deadline passes.
bool Connection::wait_socket(short events, SteadyClock::time_point deadline) {
  pollfd fd{PQsocket(conn_), events, 0};
  while (true) {
    const auto left = std::chrono::ceil<Millis>(deadline - SteadyClock::now()).count();
    if (left <= 0) return false;
    const int n = ::poll(&fd, 1, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    return n > 0 && fd.revents != 0;
  }
}

void Connection::send_and_wait(Millis timeout) {
  const auto deadline = SteadyClock::now() + timeout;
  const auto flush = [this] { return no_fork_io([this] { return PQflush(conn_); }); };
  for (int r = flush(); r != 0; r = flush()) {
    if (r < 0) lost("sending failed");
    if (!wait_socket(POLLOUT, deadline)) lost("timed out sending");
  }
  while (PQisBusy(conn_)) {
    if (!wait_socket(POLLIN, deadline)) {
      cancel();
      lost(fmt::format("no reply within {} ms (cancel requested)", timeout.count()));
    }
    if (!no_fork_io([this] { return PQconsumeInput(conn_); })) lost("connection lost");
  }
}

Result Connection::collect() {
  Result first;
  while (PGresult* r = PQgetResult(conn_)) {
    if (!first) first.reset(r);
    else PQclear(r);
  }
  if (!first) lost("no result");
  const ExecStatusType status = PQresultStatus(first.get());
  if (status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK) return first;
  if (PQstatus(conn_) != CONNECTION_OK) lost("connection lost");
  const std::string message = trimmed(PQresultErrorField(first.get(), PG_DIAG_MESSAGE_PRIMARY));
  if (sqlstate_of(first.get()) == "22023") throw InvalidRequest(message);
  broken_ = true;  // not pooled again: whatever the failed call left in its session ends with it
  throw BackendError(fmt::format("postgres at {}: {} (SQLSTATE {})", server(), message, sqlstate_of(first.get())));
}

Result Connection::exec(const std::string& sql, const std::vector<Param>& params, Millis timeout) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const Param& p : params) values.push_back(p ? p->c_str() : nullptr);
  if (!no_fork_io([&] {
        return PQsendQueryParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr,
                                 nullptr, 0);
      }))
    lost("sending failed");
  send_and_wait(timeout);
  return collect();
}

void Connection::exec_script(const std::string& sql, Millis timeout) {
  if (!no_fork_io([&] { return PQsendQuery(conn_, sql.c_str()); })) lost("sending failed");
  send_and_wait(timeout);
  Result first;
  while (PGresult* r = PQgetResult(conn_)) {
    const ExecStatusType status = PQresultStatus(r);
    if (!first && status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) first.reset(r);
    else PQclear(r);
  }
  if (first)
    throw BackendError(fmt::format("postgres at {}: {} (SQLSTATE {})", server(),
                                   trimmed(PQresultErrorField(first.get(), PG_DIAG_MESSAGE_PRIMARY)),
                                   sqlstate_of(first.get())));
}

bool Connection::read_notifications(std::vector<Notification>& out) noexcept {
  if (broken_ || !no_fork_io([this] { return PQconsumeInput(conn_); })) {
    broken_ = true;
    return false;
  }
  while (PGnotify* n = PQnotifies(conn_)) {
    out.push_back(Notification{n->relname ? n->relname : "", n->extra ? n->extra : ""});
    PQfreemem(n);
  }
  return PQstatus(conn_) == CONNECTION_OK;
}

bool Connection::still_open() noexcept {
  if (!usable()) return false;
  pollfd p{PQsocket(conn_), POLLIN, 0};
  if (::poll(&p, 1, 0) == 0) return true;
  // Readable while idle: the server said goodbye (or closed the socket).
  return false;
}

Pool::Lease Pool::take(Millis wait) {
  {
    std::unique_lock guard(mutex_);
    const auto deadline = SteadyClock::now() + wait;
    while (true) {
      while (!idle_.empty()) {
        std::unique_ptr<Connection> c = std::move(idle_.back());
        idle_.pop_back();
        if (c->still_open()) return Lease(*this, std::move(c));
        --open_;
      }
      if (max_open_ == 0 || open_ < max_open_) break;
      if (freed_.wait_until(guard, deadline) == std::cv_status::timeout && idle_.empty() && open_ >= max_open_)
        throw BackendError(fmt::format("postgres: all {} connections of the pool are in use, none was free "
                                       "within {} ms (PostgresOptions::max_connections)",
                                       max_open_, wait.count()));
    }
    ++open_;
  }
  try {
    return Lease(*this, open());
  } catch (...) {
    std::lock_guard guard(mutex_);
    --open_;
    freed_.notify_one();
    throw;
  }
}

std::unique_ptr<Connection> Pool::open(const char* name) const {
  return std::make_unique<Connection>(conninfo_, connect_timeout_, name);
}

void Pool::give(std::unique_ptr<Connection> c) noexcept {
  if (!c) return;
  std::unique_ptr<Connection> closed;  // closed outside the mutex
  {
    std::lock_guard guard(mutex_);
    if (c->usable() && idle_.size() < max_idle_) idle_.push_back(std::move(c));
    else --open_, closed = std::move(c);
  }
  freed_.notify_one();
}

void Pool::abandon() noexcept {
  std::lock_guard guard(mutex_);
  for (std::unique_ptr<Connection>& c : idle_) (void)c.release();
  open_ -= idle_.size();
  idle_.clear();
}

Pool::~Pool() = default;

}  // namespace pathlock::postgres
