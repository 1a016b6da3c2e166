// A real PgBouncer in front of a PostgresServer, as a child process, for the
// tests. Not part of the library.
//
// PgBouncer runs Debian's pgbouncer ($PATHLOCK_PGBOUNCER, else
// /usr/sbin/pgbouncer) in the foreground on a free 127.0.0.1 port (no unix
// socket), with one database `postgres` that is the server's, trust
// authentication for the user `postgres` (also the admin of its console,
// database `pgbouncer`), `pool_mode` and the server pool size as given. Like
// the server it refuses to run as root: started by root it runs as `nobody`
// (server_process.hpp). Its config and log live in a temporary directory;
// it is stopped (immediate shutdown, then SIGKILL) and the directory removed
// when the object is destroyed.
#pragma once

#include <sys/types.h>

#include <string>

#include "pg_devtools/postgres_server.hpp"

namespace pathlock::devtools {

class PgBouncer {
 public:
  struct Options {
    std::string pool_mode = "transaction";
    int pool_size = 2;  // server connections per database and user
  };
  PgBouncer(const PostgresServer& server, const Options& options);
  explicit PgBouncer(const PostgresServer& server) : PgBouncer(server, Options{}) {}
  ~PgBouncer();
  PgBouncer(const PgBouncer&) = delete;
  PgBouncer& operator=(const PgBouncer&) = delete;

  // postgresql://postgres@127.0.0.1:PORT/postgres: the server's database
  // through the pooler.
  std::string url() const;
  int port() const { return port_; }
  // Runs a command of the admin console (SHOW POOLS, SHOW STATS, ...);
  // returns psql's unaligned output, one row per line, fields split by '|'.
  std::string console(const std::string& command) const;
  // Everything PgBouncer logged so far.
  std::string log() const;

 private:
  void start(const Options& options);
  void stop() noexcept;  // and removes the directory

  const PostgresServer& server_;
  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace pathlock::devtools
