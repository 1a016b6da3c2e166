// Child processes run as an unprivileged user: see server_process.hpp.
#include "pg_devtools/server_process.hpp"

#include "redis_devtools/redis_server.hpp"  // environment_with

#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <thread>

namespace pathlock::devtools {
namespace {

// The user the servers run as when we are root: nobody.
const passwd* server_user() {
  if (::geteuid() != 0) return nullptr;
  const passwd* pw = ::getpwnam("nobody");
  if (!pw) throw std::runtime_error("server process: running as root and there is no user 'nobody'");
  return pw;
}

}  // namespace

std::string make_server_dir(const std::string& tag) {
  std::string tmpl = "/tmp/pathlock-" + tag + "-XXXXXX";
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("server process: mkdtemp failed");
  if (const passwd* pw = server_user()) {
    if (::chown(tmpl.c_str(), pw->pw_uid, pw->pw_gid) != 0) throw std::runtime_error("server process: chown failed");
  }
  return tmpl;
}

pid_t spawn_as_server_user(const std::vector<std::string>& argv, const std::string& log, bool own_group,
                           const std::vector<std::string>& environment) {
  const passwd* pw = server_user();
  const bool from_main = ::getpid() == ::gettid();
  const pid_t parent = ::getpid();
  std::vector<char*> args, env;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const std::vector<std::string> env_strings = environment_with(environment);  // made before the fork
  for (const std::string& e : env_strings) env.push_back(const_cast<char*>(e.c_str()));
  env.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("server process: fork failed");
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
    ::execve(args[0], args.data(), env.data());
    ::_exit(127);
  }
  return pid;
}

void run_as_server_user(const std::vector<std::string>& argv, const std::string& log) {
  const pid_t pid = spawn_as_server_user(argv, log, false);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("server process: " + argv.front() + " failed: " + read_whole_file(log));
}

void stop_server_process(pid_t pid, int sig) {
  ::kill(pid, sig);
  for (int i = 0; i < 200 && ::waitpid(pid, nullptr, WNOHANG) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (::kill(pid, 0) == 0) {
    ::kill(-pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
}

std::string read_whole_file(const std::string& file) {
  std::ifstream in(file);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string read_named_file(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error("cannot read " + file);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace pathlock::devtools
