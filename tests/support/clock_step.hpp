// A wall clock that a test steps while its servers run, as an NTP step
// would (tests/clock_step_test.cpp): Debian's libfaketime (package
// libfaketime) preloaded into the test's own redis-server and PostgreSQL,
// reading its offset from a file the test rewrites.
//
// What the servers get (environment(), passed to RedisServer and
// PostgresServer, tools/dev/*_devtools):
//   LD_PRELOAD=.../faketime/libfaketimeMT.so.1  (the variant for threaded
//       programs: redis-server has threads; PostgreSQL's processes have one
//       each, and it serves them as well)
//   FAKETIME_TIMESTAMP_FILE=<dir>/offset  holding "+0", "+60", "-15", ...:
//       the servers' CLOCK_REALTIME (clock_gettime, gettimeofday, time) is
//       the real one plus that many seconds
//   FAKETIME_NO_CACHE=1  the file is read at every clock read, so a step
//       takes effect at once and in every process of a server together
//       (by default libfaketime reads it once per 10 s per process: the
//       backends of one PostgreSQL would disagree for seconds)
//   FAKETIME_DONT_FAKE_MONOTONIC=1  CLOCK_MONOTONIC is left alone: an NTP
//       step moves the wall clock only, and the servers' timers and the
//       test's measurements (CLOCK_MONOTONIC) must not move
//   NO_FAKE_STAT=1  file times are the kernel's (stat is not rewritten)
// and, for redis-server only, glibc's libc_malloc_debug.so.0 preloaded
// first: Debian's redis-server allocates with libjemalloc.so.2, whose
// initialisation calls clock_gettime, which libfaketime answers by
// initialising itself with dlsym, which allocates: jemalloc deadlocks on
// its own init lock (libfaketime's known clash with jemalloc,
// wolfcw/libfaketime#130; seen here as the server hanging at start after
// "libfaketime: Unexpected recursive calls to clock_gettime()"). With
// libc_malloc_debug first, malloc and free are glibc's (the debug features
// stay off), so libfaketime starts without jemalloc; jemalloc then only
// answers mallctl (statistics), nallocx (a size-class estimate Redis only
// compares) and malloc_stats_print.
//
// set_offset() replaces the file atomically (rename), so a server never
// reads a half-written offset. A test must check that a step took effect
// (read TIME, clock_timestamp()) before it relies on it.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace pathlock::test {

class SteppedClock {
 public:
  // A directory of its own (readable by every user: PostgreSQL runs as
  // `nobody` when the test is root) with the offset file at +0 s.
  SteppedClock();
  ~SteppedClock();
  SteppedClock(const SteppedClock&) = delete;
  SteppedClock& operator=(const SteppedClock&) = delete;

  // The variables above, for a redis-server or a PostgreSQL.
  std::vector<std::string> redis_environment() const;
  std::vector<std::string> postgres_environment() const;

  // The servers' wall clock becomes the real one + `offset` at their next
  // read of it (so going from +60 s to 0 is a step back by 60 s).
  void set_offset(std::chrono::seconds offset);
  std::chrono::seconds offset() const { return offset_; }

  // The real wall clock (this process is not preloaded), in ms since the
  // epoch, and what the servers' clock should read now: + offset().
  static std::int64_t real_ms();
  std::int64_t expected_server_ms() const { return real_ms() + offset_.count() * 1000; }

 private:
  std::string dir_, file_;
  std::chrono::seconds offset_{0};
};

}  // namespace pathlock::test
