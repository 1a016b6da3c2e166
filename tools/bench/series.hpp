// The four things pathlock-bench measures ("subjects"), behind one
// interface, and the timed loop that drives them.
//
//   pathlock-redis   pathlock's public API on the Redis backend
//   bare             a bare single-key lock: SET key token NX PX ttl, then a
//                    compare-and-delete script run with EVALSHA
//   scan             the original implementation (MATRIX.md, "Lessons"):
//                    every lock of a project in ONE hash, every request a Lua
//                    script that scans all of them with substring tests
//   pathlock-memory  pathlock's public API on the embedded backend
//
// A "world" is one tree of held locks (a namespace, a hash or a key prefix
// per subject) at a given depth. Held lock i of a world of depth D sits at
// held_path(D, i): /p/dXX/eXX/.../hNNNNNNN, D components, the intermediate
// folders spread with fanout 16. A measured pair takes a lock on a fresh
// sibling folder of some held lock (probe_path): it shares every ancestor
// with held locks, so the index is really walked, but never conflicts.
// A pair = one acquire + one release, each a separate call (for Redis, a
// separate round trip), timed together.
#pragma once

#include <cmath>
#include <cstddef>
#include <memory>
#include <pathlock/engine.hpp>
#include <pathlock/factory.hpp>
#include <string>
#include <vector>

#include "util.hpp"

namespace pathlock::bench {

struct World {
  std::string tag;  // distinguishes worlds of one run: "d5", "d2", "s0", ...
  int depth = 5;    // components of every held and measured path, >= 2
};

std::string held_path(int depth, std::size_t i);
// The path client `client` locks in its pair number `k` when `held` locks
// are held: a sibling of held lock (k * prime) mod max(held, 4096).
std::string probe_path(int depth, std::size_t held, unsigned client, std::size_t k);

// One client: pair(k) does acquire + release number k; false if refused.
class Worker {
 public:
  virtual ~Worker() = default;
  virtual bool pair(std::size_t k) = 0;
};

class Subject {
 public:
  virtual ~Subject() = default;
  virtual std::string name() const = 0;
  virtual bool in_redis() const = 0;  // its held locks live in the Redis server
  // Adds held locks from..to-1 to world w (through the public API for
  // pathlock; HSET / SET in pipelines for scan and bare).
  virtual void fill(const World& w, std::size_t from, std::size_t to) = 0;
  // `clients` workers for world w, which holds `held` locks.
  virtual std::vector<std::unique_ptr<Worker>> workers(const World& w, std::size_t held, unsigned clients) = 0;
};

// Throw (BackendError, std::runtime_error) when the backend cannot start.
std::unique_ptr<Subject> make_pathlock_subject(Backend backend, const std::string& redis_url, const std::string& run);
std::unique_ptr<Subject> make_bare_subject(const std::string& addr, const std::string& run);
std::unique_ptr<Subject> make_scan_subject(const std::string& addr, const std::string& run);

struct Measurement {
  std::size_t pairs = 0;    // measured pairs (after warm-up)
  std::size_t refused = 0;  // measured acquisitions refused (should be 0)
  double seconds = 0;       // measurement window as it really ran
  double throughput = 0;    // pairs per second, all clients together
  double p50_us = 0, p99_us = 0, max_us = 0;
  std::size_t all_pairs = 0;   // including warm-up (for per-pair server CPU)
  double server_cpu_us = NAN;  // Redis CPU (user + sys) per pair, when measured
};

struct Window {
  double warmup_s = 0.5;
  double measure_s = 3.0;
  std::size_t min_pairs = 5;  // per worker, even if the window has passed
};

// Runs every worker on its own thread: warm-up (not recorded), then the
// measurement window; each pair's latency is recorded. Rethrows the first
// exception a worker threw.
Measurement measure(std::vector<std::unique_ptr<Worker>>& workers, const Window& window);

}  // namespace pathlock::bench
