// Which process an object was made in: engines, clients and keepers made
// before a fork() must not act in the child as if they were its own (the
// child shares the parent's sockets and has none of its threads).
// Private to the library.
//
// The check is on every call of an engine, so it is one atomic load, not a
// getpid() system call: a pthread_atfork handler, registered when the first
// stamp is made, counts the forks in the child, and a stamp remembers the
// count it was made (or adopted) under.
#pragma once

#include <pthread.h>

#include <atomic>

namespace pathlock::core {

// Forks this process went through since the library was loaded (its
// ancestors' included, as the child inherits the count).
inline std::atomic<unsigned> forks_seen{0};

class ProcessStamp {
 public:
  ProcessStamp() noexcept : seen_(now()) {}
  // True in a child forked after this stamp was made (or adopted).
  bool forked() const noexcept { return forks_seen.load(std::memory_order_acquire) != seen_.load(std::memory_order_acquire); }
  // Makes the current process the owner (after a reconnect in the child):
  // what was written before adopt() is seen by a thread that then finds
  // forked() false.
  void adopt() noexcept { seen_.store(forks_seen.load(std::memory_order_acquire), std::memory_order_release); }

 private:
  static unsigned now() noexcept {
    [[maybe_unused]] static const bool counting =
        ::pthread_atfork(nullptr, nullptr, [] { forks_seen.fetch_add(1, std::memory_order_acq_rel); }) == 0;
    return forks_seen.load(std::memory_order_acquire);
  }
  std::atomic<unsigned> seen_;
};

}  // namespace pathlock::core
