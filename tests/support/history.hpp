// A scenario's history of lock holds, written in the log format of
// `pathlock-stress run` and checked by the same `pathlock-stress check`
// (tools/dev/stress/stress.cpp has the format and the two rules: no two
// conflicting holds overlap in time, fences strictly increase in grant
// order). Times are CLOCK_MONOTONIC ns (test::monotonic_ns()).
//
// A hold's interval must lie inside the real holding interval, as the
// stress tool's does: `from` is read after acquire returned, `to` no later
// than the moment the holder stopped trusting the lock (it released it, or
// its keeper reported the lease lost) and no later than the end of the
// lease it can vouch for. Then two overlapping logged holds that the matrix
// forbids are two holders that really believed they held at once.
// Thread safety: one History per test thread (workers record into their
// own and the test merges, or the test records after joining).
#pragma once

#include <fmt/format.h>

#include <fstream>
#include <pathlock/engine.hpp>
#include <pathlock/path.hpp>
#include <string>

#include "redis_devtools/redis_server.hpp"  // run_program
#include "support/netns.hpp"
#include "support/process.hpp"

namespace pathlock::test {

class History {
 public:
  // Lines go to `dir`/`name` when check() runs.
  History(const ScratchDir& dir, const std::string& name) : path_(dir.path(name)) {}

  // `request` was sent at `sent` and answered with `grant` at `from`; its
  // holder vouches for it until `to` (see the file comment).
  void hold(const LockRequest& request, const Grant& grant, std::int64_t sent, std::int64_t from, std::int64_t to) {
    lines_ += fmt::format("hold\t{}\t{}\t{}\t{}\t{}\t{}:0\t{}\t{}\t{}\t{}\n", grant.fence, request.op, targets(request),
                          from, to, request.owner, sent, grant.id, grant.holds, fingerprint());
    ++holds_;
  }

  // An acquire sent at `sent` that failed at `failed` with a BackendError:
  // possibly granted, never used (the checker's `maybe` line).
  void maybe(const LockRequest& request, std::int64_t sent, std::int64_t failed) {
    lines_ += fmt::format("maybe\t{}\t{}\t{}\t{}\t{}\t{}:0\t{}\n", request.op, targets(request), sent, failed,
                          request.ttl.count(), request.owner, fingerprint());
  }

  int holds() const { return holds_; }
  const std::string& path() const { return path_; }

  // Writes the log and runs `pathlock-stress check` on it; `output` gets
  // what the checker printed. Returns its exit status (0: no violation).
  int check(std::string& output) const {
    std::ofstream(path_) << lines_;
    return devtools::run_program({PATHLOCK_STRESS, "check", path_}, output);
  }

 private:
  static std::string targets(const LockRequest& request) {
    std::string out;
    for (const Target& t : request.targets)
      out += fmt::format("{}{}={}", out.empty() ? "" : ",", t.role, normalize_path(t.path));
    return out;
  }
  static std::string fingerprint() { return std::string(default_matrix().fingerprint); }

  std::string path_, lines_;
  int holds_ = 0;
};

}  // namespace pathlock::test
