// A PostgreSQL child process: see postgres_server.hpp.
#include "pg_devtools/postgres_server.hpp"

#include "pg_devtools/server_process.hpp"  // read_whole_file
#include "redis_devtools/redis_server.hpp"  // run_program
#include "redis_devtools/testenv.hpp"

#include <libpq-fe.h>

#include <cstdlib>
#include <stdexcept>

namespace pathlock::devtools {

// Through the one test launcher (redis_devtools/testenv.hpp), as every
// language's tests start PostgreSQL: `pathlock-testenv postgres`, with the
// settings as its arguments.
void PostgresServer::launch(const std::vector<std::string>& options) {
  const char* bin = std::getenv("PATHLOCK_PG_BIN");
  bin_ = bin && *bin ? bin : "/usr/lib/postgresql/15/bin";
  launcher_ = Testenv::one_server("postgres", options, settings_, environment_, 60);
  port_ = launcher_->server().at("port").get<int>();
  pid_ = launcher_->server().at("pid").get<pid_t>();
  dir_ = launcher_->server().at("dir").get<std::string>();
}

PostgresServer::PostgresServer(const std::vector<std::string>& settings, const std::vector<std::string>& environment)
    : settings_(settings), environment_(environment) {
  launch({});
}

// A copy of the primary that streams its WAL from it (pg_basebackup -R:
// standby.signal and primary_conninfo), by the replication line initdb's
// trust setup has.
PostgresServer::PostgresServer(StandbyOf, const PostgresServer& primary) { launch({"--standby-of", primary.url()}); }

void PostgresServer::promote() { sql("SELECT pg_promote(true, 60)"); }

PostgresServer::~PostgresServer() {
  try {
    stop();
  } catch (const std::exception&) {  // the launcher has ended: closing it below stops what is left
  }
  launcher_.reset();  // it stops what runs and removes the server's directory
}

std::string PostgresServer::url() const { return url_as("postgres"); }

std::string PostgresServer::url_as(const std::string& user, const std::string& password) const {
  return "postgresql://" + user + (password.empty() ? "" : ":" + password) + "@127.0.0.1:" + std::to_string(port_) +
         "/postgres";
}

std::string PostgresServer::sql(const std::string& statements) const { return psql(url(), statements); }

std::string PostgresServer::log() const { return read_whole_file(dir_ + "/server.log"); }

std::string PostgresServer::psql(const std::string& conninfo, const std::string& statements) const {
  std::string out;
  const int status = run_program({bin_ + "/psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", conninfo, "-c",
                                  statements},
                                 out, 60000);
  if (status != 0) throw std::runtime_error("psql failed (" + std::to_string(status) + "): " + out);
  return out;
}

void PostgresServer::kill_hard() {
  if (pid_ <= 0) throw std::runtime_error("PostgresServer: not running");
  // Its backends notice the postmaster's death and exit: done once no socket
  // of the server's port is open (each backend holds its client's).
  kill_and_wait_closed(pid_, {port_});
  pid_ = -1;
}

void PostgresServer::restart() {
  if (pid_ > 0) throw std::runtime_error("PostgresServer: still running");
  pid_ = launcher_->restart("postgres", settings_);
}

void PostgresServer::stop() {
  if (pid_ <= 0 || !launcher_) return;
  launcher_->stop("postgres");  // fast shutdown (SIGINT): ends the sessions, checkpoints; waited for
  pid_ = -1;
}

}  // namespace pathlock::devtools
