// The one test launcher of every language's tests (tests/support/pathlock-testenv,
// tests/README.md) as a child process of a C++ test: RedisServer
// (redis_server.hpp) starts its server through it, so the C++ tests choose
// ports and wait for readiness exactly as the Python, Go, Node and PHP tests do.
//
// Testenv runs `pathlock-testenv ARGS...` with its stdin and stdout on pipes,
// waits for its JSON line (what it started), and then sends it commands one
// line at a time (restart NAME ARG..., stop NAME), each answered by one JSON
// line. Closing its stdin (close(), the destructor) makes it stop its
// servers and exit. The program is $PATHLOCK_TESTENV, else the checkout's.
// Started from the main thread it also gets PR_SET_PDEATHSIG: it stops its
// servers when the test process dies, crashed or killed.
#pragma once

#include <nlohmann/json.hpp>

#include <sys/types.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

namespace pathlock::devtools {

// execv()'s view of `args` (which must outlive it): pointers, then nullptr.
std::vector<char*> exec_argv(std::vector<std::string>& args);

// SIGKILLs server `pid` and returns once it has exited (a zombie its
// launcher has not reaped counts) and no socket of this network namespace
// listens on or is connected from any of `ports`: the kernel may close a
// dead process's files a moment later, and until then its clients have not
// been told. Throws std::runtime_error after 30 s.
void kill_and_wait_closed(pid_t pid, const std::vector<int>& ports);

class Testenv {
 public:
  // Starts it with `args` and waits for its line (its own --limit bounds every
  // wait; this gives up after `limit_s` more). Throws std::runtime_error when
  // it exits without one (its message is on this process's stderr).
  explicit Testenv(const std::vector<std::string>& args, int limit_s = 120);
  // One server of `kind` (redis, postgres): `pathlock-testenv --limit
  // LIMIT [--env E]... KIND OPTIONS... -- ARGS...`, `environment` being
  // "NAME=value" each.
  static std::unique_ptr<Testenv> one_server(const std::string& kind, const std::vector<std::string>& options,
                                             const std::vector<std::string>& args,
                                             const std::vector<std::string>& environment, int limit_s);
  ~Testenv();
  Testenv(const Testenv&) = delete;
  Testenv& operator=(const Testenv&) = delete;

  // Its JSON line: kind, url, port, pid, servers [{name, port, pid, dir, log}], ...
  const nlohmann::json& started() const { return started_; }
  // Its first server's entry: {name, role, port, pid, dir, log}.
  const nlohmann::json& server() const { return started_.at("servers").at(0); }
  // Stops server `name` if it runs and starts it again with `args` after
  // `--`: its new pid. stop(): stops it (waited for).
  pid_t restart(const std::string& name, const std::vector<std::string>& args);
  void stop(const std::string& name);
  // Sends `command` and returns its answer; throws std::runtime_error when
  // the answer is {"error": ...}, or none comes within `limit_s`.
  nlohmann::json ask(const std::string& command, int limit_s = 120);
  // Closes its stdin and waits until it has stopped its servers and exited
  // (60 s; then it is killed). Idempotent.
  void close();


 private:
  std::string read_line(int limit_s);

  pid_t owner_ = ::getpid();  // a forked copy of the test neither asks nor waits
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;  // its stdin and its stdout
  std::string buffer_;
  nlohmann::json started_;
};

}  // namespace pathlock::devtools
