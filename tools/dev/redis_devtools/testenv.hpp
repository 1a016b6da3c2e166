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

#include <string>
#include <vector>

namespace pathlock::devtools {

// True once process `pid` has exited: gone, or a zombie that its parent (a
// launcher) has not reaped yet.
bool process_exited(pid_t pid);

// True while a TCP socket of this network namespace listens on local `port`,
// or is connected from it (/proc/net/tcp and tcp6): a killed server's
// sockets are closed once this is false.
bool listens_or_connected(int port);

class Testenv {
 public:
  // Starts it with `args` and waits for its line (its own --limit bounds every
  // wait; this gives up after `limit_s` more). Throws std::runtime_error when
  // it exits without one (its message is on this process's stderr).
  explicit Testenv(const std::vector<std::string>& args, int limit_s = 120);
  ~Testenv();
  Testenv(const Testenv&) = delete;
  Testenv& operator=(const Testenv&) = delete;

  // Its JSON line: kind, url, port, pid, servers [{name, port, pid, dir, log}], ...
  const nlohmann::json& started() const { return started_; }
  // Sends `command` and returns its answer; throws std::runtime_error when
  // the answer is {"error": ...}, or none comes within `limit_s`.
  nlohmann::json ask(const std::string& command, int limit_s = 120);
  // Closes its stdin and waits until it has stopped its servers and exited
  // (60 s; then it is killed). Idempotent.
  void close();

  // `word` quoted for its command lines (POSIX shell rules, as shlex reads them).
  static std::string quoted(const std::string& word);

 private:
  std::string read_line(int limit_s);

  pid_t owner_ = ::getpid();  // a forked copy of the test neither asks nor waits
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;  // its stdin and its stdout
  std::string buffer_;
  nlohmann::json started_;
};

}  // namespace pathlock::devtools
