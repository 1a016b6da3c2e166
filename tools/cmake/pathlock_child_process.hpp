// Three pieces of running a private server as a child process: choosing a
// loopback port, waiting for the child to answer, and stopping it. Installed beside
// pathlock_matrix_check.cpp (which consumers compile alone, with nothing but
// the pathlock library), and used by tools/dev/redis_devtools too, so the
// runner and pathlock's own test servers start and stop servers one way.
// Header-only, POSIX.
#pragma once

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace pathlock::child_process {

// A TCP port on 127.0.0.1 that was free a moment ago (bind port 0, read the
// port the kernel picked, close). Another process may take it before the
// caller binds it, so a caller retries on a new port. -1 when there is none.
inline int free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  ::close(fd);
  return ok ? ntohs(addr.sin_port) : -1;
}

// Stops child `pid` and reaps it: SIGTERM, then SIGKILL once `grace` has
// passed without it exiting.
inline void stop(pid_t pid, std::chrono::milliseconds grace = std::chrono::seconds(5)) {
  ::kill(pid, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// How wait_until_ready() ended.
enum class Startup { ready, exited, timed_out };

// Calls `ready()` every `interval` until it returns true (ready), child
// `pid` exits (exited: the child is reaped) or `timeout` passes (timed_out:
// the child is still running; the caller stops it). `ready` says "not
// yet" by returning false; an exception from it propagates.
template <class Ready>
Startup wait_until_ready(pid_t pid, Ready ready, std::chrono::milliseconds interval,
                         std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return Startup::exited;
    if (ready()) return Startup::ready;
    std::this_thread::sleep_for(interval);
  }
  return Startup::timed_out;
}

}  // namespace pathlock::child_process
