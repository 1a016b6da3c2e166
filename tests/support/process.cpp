#include "support/process.hpp"

#include <catch2/catch.hpp>

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>
#include <system_error>
#include <thread>

extern char** environ;

namespace pathlock::test {

ScratchDir::ScratchDir(const std::string& tag) {
  std::string tmpl = (std::filesystem::temp_directory_path() / ("pathlock-" + tag + "-XXXXXX")).string();
  REQUIRE(mkdtemp(tmpl.data()) != nullptr);
  dir_ = tmpl;
}

ScratchDir::~ScratchDir() {
  if (std::uncaught_exceptions() > 0) return;  // a failed REQUIRE: keep the files
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

pid_t spawn(std::vector<std::string> argv, int stdin_fd, int stdout_fd, int stderr_fd) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (stdin_fd >= 0) posix_spawn_file_actions_adddup2(&actions, stdin_fd, 0);
  if (stdout_fd >= 0) posix_spawn_file_actions_adddup2(&actions, stdout_fd, 1);
  if (stderr_fd >= 0) posix_spawn_file_actions_adddup2(&actions, stderr_fd, 2);
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  REQUIRE(rc == 0);
  return pid;
}

int wait_exit(pid_t pid, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  pid_t done = 0;
  while ((done = waitpid(pid, &status, WNOHANG)) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      print_stacks(pid);
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      FAIL("child " << pid << " still ran after " << limit.count() << " s: hung (its stacks are on stderr)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // polling for an exit, not a sync point
  }
  REQUIRE(done == pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void print_stacks(pid_t pid) {
  std::fprintf(stderr, "stacks of every thread of process %d:\n", static_cast<int>(pid));
  std::fflush(stderr);
  const std::string gdb = "gdb -nx -q -batch -p " + std::to_string(pid) + " -ex 'thread apply all bt' 1>&2";
  [[maybe_unused]] const int rc = std::system(gdb.c_str());
}

std::string read_line(int fd) {
  std::string line;
  char c = 0;
  while (true) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 10000) <= 0 || read(fd, &c, 1) != 1) return line;
    if (c == '\n') return line;
    line += c;
  }
}

ChildGuard::~ChildGuard() {
  if (pid > 0) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
}

std::string capture_stderr(const std::function<void()>& body) {
  std::fflush(stderr);
  char path[] = "/tmp/pathlock-stderr-XXXXXX";
  const int fd = ::mkstemp(path);
  const int saved = ::dup(2);
  ::dup2(fd, 2);
  auto restore = [&] {
    std::fflush(stderr);
    ::dup2(saved, 2);
    ::close(saved);
  };
  try {
    body();
  } catch (...) {
    restore();
    ::close(fd);
    ::unlink(path);
    throw;
  }
  restore();
  std::string out;
  ::lseek(fd, 0, SEEK_SET);
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  ::unlink(path);
  return out;
}

}  // namespace pathlock::test
