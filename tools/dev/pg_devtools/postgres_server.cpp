// A PostgreSQL child process: see postgres_server.hpp.
#include "pg_devtools/postgres_server.hpp"

#include "redis_devtools/redis_server.hpp"  // free_loopback_port, run_program, wait_for

#include <libpq-fe.h>

#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

namespace pathlock::devtools {
namespace {

// The user the server runs as when we are root: nobody.
const passwd* server_user() {
  if (::geteuid() != 0) return nullptr;
  const passwd* pw = ::getpwnam("nobody");
  if (!pw) throw std::runtime_error("PostgresServer: running as root and there is no user 'nobody'");
  return pw;
}

// fork + (as root) setgid/setuid to nobody + exec; stdout/stderr to `log`.
pid_t spawn(const std::vector<std::string>& argv, const std::string& log, bool own_group) {
  const passwd* pw = server_user();
  const bool from_main = ::getpid() == ::gettid();
  const pid_t parent = ::getpid();
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("PostgresServer: fork failed");
  if (pid == 0) {
    if (own_group) ::setsid();
    if (from_main) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(1);
    }
    const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    const int in = ::open("/dev/null", O_RDONLY);
    if (in >= 0) ::dup2(in, STDIN_FILENO);
    if (out >= 0) {
      ::dup2(out, STDOUT_FILENO);
      ::dup2(out, STDERR_FILENO);
    }
    if (pw && (::setgid(pw->pw_gid) != 0 || ::setuid(pw->pw_uid) != 0)) ::_exit(126);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  return pid;
}

std::string slurp(const std::string& file) {
  std::ifstream in(file);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

bool group_alive(pid_t pid) { return ::kill(-pid, 0) == 0 || errno != ESRCH; }

// Runs a program of the server's binaries to its end (as the server's
// user); throws with its output when it fails.
void run_tool(const std::vector<std::string>& argv, const std::string& log) {
  const pid_t pid = spawn(argv, log, false);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("PostgresServer: " + argv.front() + " failed: " + slurp(log));
}

}  // namespace

// A fresh directory for the server (given to the server's user) and the binaries' place.
void PostgresServer::prepare() {
  const char* bin = std::getenv("PATHLOCK_PG_BIN");
  bin_ = bin && *bin ? bin : "/usr/lib/postgresql/15/bin";
  char tmpl[] = "/tmp/pathlock-pg-XXXXXX";
  if (!::mkdtemp(tmpl)) throw std::runtime_error("PostgresServer: mkdtemp failed");
  dir_ = tmpl;
  if (const passwd* pw = server_user()) {
    if (::chown(dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0) throw std::runtime_error("PostgresServer: chown failed");
  }
}

PostgresServer::PostgresServer(const std::vector<std::string>& settings) : settings_(settings) {
  prepare();
  run_tool({bin_ + "/initdb", "-D", dir_ + "/data", "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C",
            "--no-sync"},
           dir_ + "/initdb.log");
  port_ = free_loopback_port();
  start();
}

PostgresServer::PostgresServer(StandbyOf, const PostgresServer& primary) {
  prepare();
  // A copy of the primary that streams its WAL from it (-R: standby.signal
  // and primary_conninfo), by the replication line initdb's trust setup has.
  run_tool({bin_ + "/pg_basebackup", "-D", dir_ + "/data", "-d", primary.url(), "-R", "-X", "stream", "--no-sync",
            "--checkpoint=fast"},
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
    if (pid_ <= 0 || ::waitpid(pid_, nullptr, WNOHANG) == pid_) pid_ = spawn(argv, log, true);
    return PQping(conninfo.c_str()) == PQPING_OK;
  }, 30);
}

std::string PostgresServer::sql(const std::string& statements) const {
  std::string out;
  const int status = run_program({bin_ + "/psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", url(), "-c",
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
  wait_for("PostgresServer", "the killed server's processes to exit", [&] { return !group_alive(pid_); }, 30);
  pid_ = -1;
}

void PostgresServer::restart() {
  if (pid_ > 0) throw std::runtime_error("PostgresServer: still running");
  start();
}

void PostgresServer::stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGINT);  // fast shutdown: ends the sessions, checkpoints
  for (int i = 0; i < 200 && ::waitpid(pid_, nullptr, WNOHANG) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (::kill(pid_, 0) == 0) {
    ::kill(-pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  pid_ = -1;
}

}  // namespace pathlock::devtools
