// Child processes for tests that need real ones (crash, stress, shell), and
// the test process's own stderr.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace pathlock::test {

// Starts argv[0] (a path) with `argv`; stdin/stdout/stderr are redirected
// to the given descriptors when they are >= 0. Fails the test if it cannot
// start.
pid_t spawn(std::vector<std::string> argv, int stdin_fd = -1, int stdout_fd = -1, int stderr_fd = -1);

// Waits for `pid`; returns its exit status, or 128 + signal if it was killed.
// A child still running after `limit` is hung: the stacks of its threads are
// printed (print_stacks), it is killed, and the test fails.
int wait_exit(pid_t pid, std::chrono::seconds limit = std::chrono::seconds(120));

// Prints the stack of every thread of process `pid` to stderr (gdb, batch mode).
void print_stacks(pid_t pid);

// Reads one line from `fd` (without the newline), waiting at most 10 s;
// returns what was read so far on timeout or end of input.
std::string read_line(int fd);

// Kills (SIGKILL) and reaps a child unless pid was reset to -1 (it was reaped
// already): a failed REQUIRE must not leave a process behind.
struct ChildGuard {
  pid_t pid = -1;
  ~ChildGuard();
};

// A fresh directory for a test's files (logs of child processes, inputs of
// a checker), under $TMPDIR or /tmp, so that tests write nothing into the
// working directory and two runs never share a file. Removed when it goes
// out of scope, except while an exception is in flight (a failed REQUIRE):
// the files then stay for a look, and the test's INFO names the directory.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& dir() const { return dir_; }
  // dir() + "/" + name
  std::string path(const std::string& name) const { return dir_ + "/" + name; }

 private:
  std::string dir_;
};

// Runs `body` with stderr (fd 2) sent to a temporary file and returns what
// was written there; stderr is restored also when `body` throws (the
// exception goes on).
std::string capture_stderr(const std::function<void()>& body);

}  // namespace pathlock::test
