// Which process an object was made in: engines, clients and keepers made
// before a fork() must not act in the child as if they were its own (the
// child shares the parent's sockets and has none of its threads).
// Private to the library.
#pragma once

#include <unistd.h>

#include <atomic>

namespace pathlock::core {

class ProcessStamp {
 public:
  // True in a child forked after this stamp was made.
  bool forked() const noexcept { return ::getpid() != pid_.load(std::memory_order_acquire); }
  // Makes the current process the owner (after a reconnect in the child):
  // what was written before adopt() is seen by a thread that then finds
  // forked() false.
  void adopt() noexcept { pid_.store(::getpid(), std::memory_order_release); }

 private:
  std::atomic<pid_t> pid_{::getpid()};
};

}  // namespace pathlock::core
