// A PgBouncer child process: see pgbouncer.hpp.
#include "pg_devtools/pgbouncer.hpp"

#include "pg_devtools/server_process.hpp"
#include "redis_devtools/redis_server.hpp"  // free_loopback_port, wait_for

#include <libpq-fe.h>

#include <signal.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace pathlock::devtools {
namespace {

std::string url_of(int port, const std::string& db) {
  return "postgresql://postgres@127.0.0.1:" + std::to_string(port) + "/" + db;
}

}  // namespace

PgBouncer::PgBouncer(const PostgresServer& server, const Options& options) : server_(server) {
  dir_ = make_server_dir("pgbouncer");
  port_ = free_loopback_port();
  try {
    start(options);
  } catch (...) {  // the destructor will not run: leave nothing behind
    stop();
    throw;
  }
}

// Writes the config (the server's database `postgres`, trust for the user
// postgres, no unix socket, logs on stderr) and starts pgbouncer on it.
void PgBouncer::start(const Options& options) {
  const char* bin = std::getenv("PATHLOCK_PGBOUNCER");
  const std::string program = bin && *bin ? bin : "/usr/sbin/pgbouncer";
  std::ofstream(dir_ + "/userlist.txt") << "\"postgres\" \"\"\n";
  std::ofstream(dir_ + "/pgbouncer.ini")
      << "[databases]\npostgres = host=127.0.0.1 port=" << server_.port() << " dbname=postgres\n"
      << "[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = " << port_ << "\nunix_socket_dir =\n"
      << "auth_type = trust\nauth_file = " << dir_ << "/userlist.txt\nadmin_users = postgres\n"
      << "pool_mode = " << options.pool_mode << "\ndefault_pool_size = " << options.pool_size << "\n"
      << "min_pool_size = 0\nreserve_pool_size = 0\nmax_client_conn = 500\nlogfile =\npidfile =\n";
  pid_ = spawn_as_server_user({program, dir_ + "/pgbouncer.ini"}, dir_ + "/pgbouncer.log", true);
  const std::string conninfo = url();
  wait_for("PgBouncer", "pgbouncer to accept connections", [&] {
    if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("PgBouncer: pgbouncer exited: " + log());
    }
    return PQping(conninfo.c_str()) == PQPING_OK;
  }, 30);
}

PgBouncer::~PgBouncer() { stop(); }

void PgBouncer::stop() noexcept {
  if (pid_ > 0) stop_server_process(pid_, SIGTERM);  // immediate shutdown
  pid_ = -1;
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::string PgBouncer::url() const { return url_of(port_, "postgres"); }

std::string PgBouncer::console(const std::string& command) const {
  return server_.psql(url_of(port_, "pgbouncer"), command);
}

std::string PgBouncer::log() const { return read_whole_file(dir_ + "/pgbouncer.log"); }

}  // namespace pathlock::devtools
