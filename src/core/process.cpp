// The fork handlers of the library (process.hpp): registered when the
// library is loaded, before main() or while dlopen() loads the Python
// module, so no engine call can be in the middle of registering them when a
// fork lands.
//
// The gate is a reader-writer lock initialised statically (no first use to
// split): a NoForkSection holds it for reading; the prepare handler takes it
// for writing, so fork() waits until every section has ended; the parent
// releases it after the fork, the child initialises its copy afresh (only
// the forking thread lives on there, and it holds no section).
#include "core/process.hpp"

#include <pthread.h>
#ifdef PATHLOCK_HAVE_OPENSSL
#include <openssl/crypto.h>
#endif

#include <cstdio>
#include <cstdlib>

namespace pathlock::core {

std::atomic<unsigned> forks_seen{0};

namespace {

pthread_rwlock_t gate = PTHREAD_RWLOCK_INITIALIZER;

void before_fork() { ::pthread_rwlock_wrlock(&gate); }
void after_fork_in_parent() { ::pthread_rwlock_unlock(&gate); }
void after_fork_in_child() {
  ::pthread_rwlock_init(&gate, nullptr);
  forks_seen.fetch_add(1, std::memory_order_acq_rel);
}

bool register_fork_handlers() noexcept {
  if (::pthread_atfork(&before_fork, &after_fork_in_parent, &after_fork_in_child) == 0) return true;
  // Only out of memory at load time; without the handlers a child could
  // share its parent's connections, which is worse than not starting.
  std::fputs("pathlock: pthread_atfork failed while loading the library\n", stderr);
  std::abort();
}

[[maybe_unused]] const bool fork_handlers_registered = register_fork_handlers();

#ifdef PATHLOCK_HAVE_OPENSSL
// Set by a thread's first OpenSslSection; frees the thread's OpenSSL state
// inside a section when the thread ends.
struct OpenSslThreadEnd {
  bool used = false;
  ~OpenSslThreadEnd() {
    if (!used) return;
    const NoForkSection no_fork;
    OPENSSL_thread_stop();
  }
};

thread_local OpenSslThreadEnd openssl_thread_end;
#endif

}  // namespace

OpenSslSection::OpenSslSection() noexcept {
#ifdef PATHLOCK_HAVE_OPENSSL
  openssl_thread_end.used = true;
#endif
}

NoForkSection::NoForkSection() noexcept { ::pthread_rwlock_rdlock(&gate); }
NoForkSection::~NoForkSection() { ::pthread_rwlock_unlock(&gate); }

}  // namespace pathlock::core
