// A PostgreSQL child process: see postgres_server.hpp.
#include "pg_devtools/postgres_server.hpp"

#include "pg_devtools/server_process.hpp"
#include "redis_devtools/redis_server.hpp"  // free_loopback_port, run_program, wait_for

#include <libpq-fe.h>

#include <signal.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace pathlock::devtools {

// A fresh directory for the server (given to the server's user) and the binaries' place.
void PostgresServer::prepare() {
  const char* bin = std::getenv("PATHLOCK_PG_BIN");
  bin_ = bin && *bin ? bin : "/usr/lib/postgresql/15/bin";
  dir_ = make_server_dir("pg");
}

PostgresServer::PostgresServer(const std::vector<std::string>& settings, const std::vector<std::string>& environment)
    : settings_(settings), environment_(environment) {
  prepare();
  run_as_server_user({bin_ + "/initdb", "-D", dir_ + "/data", "-U", "postgres", "--auth=trust", "-E", "UTF8",
                      "--locale=C", "--no-sync"},
                     dir_ + "/initdb.log");
  port_ = free_loopback_port();
  start();
}

PostgresServer::PostgresServer(StandbyOf, const PostgresServer& primary) {
  prepare();
  // A copy of the primary that streams its WAL from it (-R: standby.signal
  // and primary_conninfo), by the replication line initdb's trust setup has.
  run_as_server_user({bin_ + "/pg_basebackup", "-D", dir_ + "/data", "-d", primary.url(), "-R", "-X", "stream",
                      "--no-sync", "--checkpoint=fast"},
                     dir_ + "/basebackup.log");
  port_ = free_loopback_port();
  start();
}

void PostgresServer::promote() { sql("SELECT pg_promote(true, 60)"); }

PostgresServer::~PostgresServer() {
  stop();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::string PostgresServer::url() const { return url_as("postgres"); }

std::string PostgresServer::url_as(const std::string& user, const std::string& password) const {
  return "postgresql://" + user + (password.empty() ? "" : ":" + password) + "@127.0.0.1:" + std::to_string(port_) +
         "/postgres";
}

void PostgresServer::start() {
  std::vector<std::string> argv{bin_ + "/postgres", "-D", dir_ + "/data", "-p", std::to_string(port_), "-k", dir_,
                                "-c", "listen_addresses=127.0.0.1", "-c", "max_connections=300"};
  for (const std::string& s : settings_) {
    argv.push_back("-c");
    argv.push_back(s);
  }
  const std::string log = dir_ + "/server.log";
  // A restart right after a kill may find the old shared memory still
  // attached for a moment: try again until it starts.
  const std::string conninfo = url();
  wait_for("PostgresServer", "the server to accept connections", [&] {
    if (pid_ <= 0 || ::waitpid(pid_, nullptr, WNOHANG) == pid_)
      pid_ = spawn_as_server_user(argv, log, true, environment_);
    return PQping(conninfo.c_str()) == PQPING_OK;
  }, 30);
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
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  // The backends notice the postmaster's death and exit.
  wait_for("PostgresServer", "the killed server's processes to exit", [&] { return !server_group_alive(pid_); }, 30);
  pid_ = -1;
}

void PostgresServer::restart() {
  if (pid_ > 0) throw std::runtime_error("PostgresServer: still running");
  start();
}

void PostgresServer::stop() {
  if (pid_ <= 0) return;
  stop_server_process(pid_, SIGINT);  // fast shutdown: ends the sessions, checkpoints
  pid_ = -1;
}

}  // namespace pathlock::devtools
