// Which process an object was made in, and the sections a fork must not
// split. Private to the library (docs/design.md#fork).
//
// ProcessStamp: engines, clients and keepers made before a fork() must not
// act in the child as if they were its own (the child shares the parent's
// sockets and has none of its threads). The check is on every call of an
// engine, so it is one atomic load, not a getpid() system call: a
// pthread_atfork handler counts the forks in the child, and a stamp
// remembers the count it was made (or adopted) under.
//
// NoForkSection: code that runs inside a third-party library's global locks
// or first-use initialisation (OpenSSL's context creation and handshake,
// libpq's connect and finish, which take OpenSSL's and libpq's process-wide
// mutexes) holds this while it runs. fork() waits (in a pthread_atfork
// prepare handler) until no thread is inside one, so a child never inherits
// such a lock held by a thread it does not have. Sections are short and
// bounded by a connect timeout; nothing inside one forks or calls user code.
//
// OpenSslSection: a NoForkSection around calls into OpenSSL (the Redis
// client's TLS, libpq over TLS). A thread that used OpenSSL frees its state
// there when it ends, under a process-wide lock, in a pthread key destructor
// no section covers; a thread that opened an OpenSslSection does it earlier,
// inside a section, from a thread_local destructor (those run before pthread
// key destructors).
//
// Both fork handlers are registered when the library is loaded
// (process.cpp), never at a first call: a registration that a fork splits
// would leave its guard "in progress" in the child for ever.
#pragma once

#include <atomic>

namespace pathlock::core {

// Forks this process went through since the library was loaded (its
// ancestors' included, as the child inherits the count). Defined in
// process.cpp, whose load-time initialiser registers the fork handlers.
extern std::atomic<unsigned> forks_seen;

class ProcessStamp {
 public:
  ProcessStamp() noexcept : seen_(forks_seen.load(std::memory_order_acquire)) {}
  // True in a child forked after this stamp was made (or adopted).
  bool forked() const noexcept { return forks_seen.load(std::memory_order_acquire) != seen_.load(std::memory_order_acquire); }
  // Makes the current process the owner (after a reconnect in the child):
  // what was written before adopt() is seen by a thread that then finds
  // forked() false.
  void adopt() noexcept { seen_.store(forks_seen.load(std::memory_order_acquire), std::memory_order_release); }

 private:
  std::atomic<unsigned> seen_;
};

// Held (shared with other threads in sections of their own) from
// construction to destruction; fork() waits until none is held. Not
// reentrant across a fork: never fork inside one.
class NoForkSection {
 public:
  NoForkSection() noexcept;
  ~NoForkSection();
  NoForkSection(const NoForkSection&) = delete;
  NoForkSection& operator=(const NoForkSection&) = delete;
};

// See the file comment. In a build without OpenSSL of its own (no Redis
// backend) it is a NoForkSection, and a thread's end is left to OpenSSL.
class OpenSslSection {
 public:
  OpenSslSection() noexcept;

 private:
  NoForkSection no_fork_;
};

}  // namespace pathlock::core
