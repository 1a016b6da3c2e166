// A one-shot wake-up for a thread that waits in poll(): raise() from any
// thread sets the flag and makes fd() readable, so a poll() that includes
// fd() returns at once (and one that starts later does not wait).
// Private to the library: the backends' side of a stopped acquire
// (core/waiting.hpp, WaitingAttempts::interrupt).
#pragma once

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>

namespace pathlock::core {

class Interrupt {
 public:
  Interrupt() noexcept : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}
  ~Interrupt() {
    if (fd_ >= 0) ::close(fd_);
  }
  Interrupt(const Interrupt&) = delete;
  Interrupt& operator=(const Interrupt&) = delete;

  void raise() noexcept {
    raised_.store(true, std::memory_order_release);
    const std::uint64_t one = 1;
    if (fd_ >= 0) (void)!::write(fd_, &one, sizeof one);
  }
  bool raised() const noexcept { return raised_.load(std::memory_order_acquire); }
  // Readable once raised; -1 if no eventfd could be made (then a poll
  // without it sees the flag at its next timeout).
  int fd() const noexcept { return fd_; }

  // Sleeps up to `timeout_ms` or until raised.
  void sleep_for(int timeout_ms) const noexcept {
    if (raised()) return;
    pollfd p{};
    p.fd = fd_;
    p.events = POLLIN;
    while (::poll(&p, fd_ >= 0 ? 1 : 0, timeout_ms) < 0 && errno == EINTR) {
    }
  }

 private:
  int fd_;
  std::atomic<bool> raised_{false};
};

}  // namespace pathlock::core
