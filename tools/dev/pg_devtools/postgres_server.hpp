// A real PostgreSQL server as a child process, for the tests and the
// benchmark. Not part of the library.
//
// PostgresServer runs Debian's postgresql-15 binaries
// ($PATHLOCK_PG_BIN, else /usr/lib/postgresql/15/bin) through the one test
// launcher of every language's tests (redis_devtools/testenv.hpp,
// tests/support/pathlock-testenv postgres): initdb into a fresh temporary
// directory (superuser `postgres`, trust authentication, UTF8, locale C),
// then postgres on a free 127.0.0.1 port with its unix socket in that
// directory. PostgreSQL refuses to run as root: started by root, initdb and
// the server run as the unprivileged user `nobody`, so CI (root, a fresh
// clone) needs nothing prepared. The launcher stops the server (fast
// shutdown) and removes its directory when the object is destroyed, or when
// the test process ends, crashed or killed.
//
// A streaming standby: PostgresServer(standby_of, primary) copies a running
// primary with pg_basebackup -R (as the same unprivileged user) and starts
// it on a port of its own: a hot standby that streams the primary's WAL.
// Start the primary with synchronous_standby_names=* to make every durable
// commit wait for the standby (then commits block until a standby is up).
// promote() makes the standby a primary (pg_promote).
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

namespace pathlock::devtools {

class Testenv;

class PostgresServer {
 public:
  // Starts a private server; `settings` are extra "-c name=value" pairs, and
  // `environment` ("NAME=value" each) is added to the server's environment
  // (not initdb's), also when it is restarted: a clock faker's LD_PRELOAD
  // (tests/support/clock_step.hpp).
  explicit PostgresServer(const std::vector<std::string>& settings = {},
                          const std::vector<std::string>& environment = {});
  // Starts a streaming standby of `primary`.
  struct StandbyOf {};
  static constexpr StandbyOf standby_of{};
  PostgresServer(StandbyOf, const PostgresServer& primary);
  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  // postgresql://postgres@127.0.0.1:PORT/postgres
  std::string url() const;
  // The same for another user (and password, if any).
  std::string url_as(const std::string& user, const std::string& password = "") const;
  int port() const { return port_; }
  // The server's directory (given to the server's user; the data directory
  // is dir()/data), the path of one of its programs (initdb, postgres, ...)
  // and the whole of its log so far.
  const std::string& dir() const { return dir_; }
  std::string program(const std::string& name) const { return bin_ + "/" + name; }
  std::string log() const;

  // Runs SQL as the superuser (psql -v ON_ERROR_STOP=1); throws
  // std::runtime_error with psql's output when it fails. Returns the output
  // (unaligned, tuples only).
  std::string sql(const std::string& statements) const;
  // The same through another connection string (a pooler in front of this
  // server, another user).
  std::string psql(const std::string& conninfo, const std::string& statements) const;

  // kill -9 of the postmaster; returns once it has exited and its backends
  // have closed their connections. restart() starts it again on the same
  // port and directory, once the old backends have let go of its shared memory
  // (crash recovery replays the WAL) and returns once it accepts connections.
  void kill_hard();
  void restart();
  // Fast shutdown; idempotent.
  void stop();
  // A standby becomes a primary; returns once it accepts writes.
  void promote();

 private:
  void launch(const std::vector<std::string>& options);

  std::string dir_;   // the data directory is dir_/data, the socket dir_
  std::string bin_;
  std::vector<std::string> settings_;
  std::vector<std::string> environment_;  // added to the server's environment
  int port_ = 0;
  pid_t pid_ = -1;
  std::unique_ptr<Testenv> launcher_;  // what started the server
};

}  // namespace pathlock::devtools
