// What pathlock-bench measures ("subjects"), behind one interface.
//
//   pathlock-redis   pathlock's public API on the Redis backend
//   bare             a bare single-key lock: SET key token NX PX ttl, then a
//                    compare-and-delete script run with EVALSHA
//   per-level        one key per path level, one round trip per level: INCR
//                    on every ancestor's key (shared), SET NX on the leaf's
//                    key (exclusive); released the same way (the way
//                    Nextcloud's file locking works today)
//   scan             the original implementation (docs/matrix.md, "The original implementation"):
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
// separate round trip or more), timed together. A refused acquire asks for
// the parent folder of a held lock (refused_path) with an operation the held
// lock refuses; the subject must refuse it (bare: the held lock's own key).
//
// Adding a subject: implement Subject and its Worker (pair and refusal) in a
// new .cpp, declare its factory below, register it in kSubjects
// (sweeps.cpp) and give its Redis keys to key_patterns() so a run against
// an external server cleans up after itself. Reports, plots and goals pick
// it up by name.
#pragma once

#include <pathlock/redis.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "paths.hpp"

namespace pathlock::bench {

struct World {
  std::string tag;  // distinguishes worlds of one run: "d5", "d2", "s0", ...
  int depth = 5;    // components of every held and measured path, >= 2
};

// What a worker does in one timed step.
enum class Task {
  pair,     // acquire + release of a lock nobody holds: must be granted
  refused,  // one acquire that a held lock refuses: must be refused
};

// One client: step(k) does step number k of its task; returns false when
// the outcome was not the expected one (a refused pair, a granted refusal:
// the granted lock is released again). Throws on transport errors.
class Worker {
 public:
  virtual ~Worker() = default;
  virtual bool step(std::size_t k) = 0;
};

// The workers of `clients` clients: make(c) for c = 0 .. clients - 1.
template <class Make>
std::vector<std::unique_ptr<Worker>> one_worker_per_client(unsigned clients, Make make) {
  std::vector<std::unique_ptr<Worker>> out;
  for (unsigned c = 0; c < clients; ++c) out.push_back(make(c));
  return out;
}

class Subject {
 public:
  virtual ~Subject() = default;
  virtual std::string name() const = 0;
  virtual bool in_redis() const = 0;  // its held locks live in the Redis server
  // Adds held locks from..to-1 to world w (through the public API for
  // pathlock; pipelined plain commands for the peers).
  virtual void fill(const World& w, std::size_t from, std::size_t to) = 0;
  // `clients` workers doing `task` in world w, which holds `held` locks.
  virtual std::vector<std::unique_ptr<Worker>> workers(const World& w, std::size_t held, unsigned clients,
                                                       Task task) = 0;
  // SCAN patterns of every key this subject wrote (empty: none in Redis).
  virtual std::vector<std::string> key_patterns() const = 0;
};

// The lease of a peer's held locks (longer than any run) and of a measured
// pair's lock (released at once, unless a worker dies).
constexpr long long kPeerHeldTtlMs = 6LL * 3600 * 1000;
constexpr long long kPeerPairTtlMs = 30000;

// What the peers whose locks are plain Redis keys share (bare, scan,
// per-level): a name, the server at url_ with the peer's Lua scripts loaded,
// and keys named "<prefix>:<run>:<tag>..." (world_key(tag) and what follows
// it), which are all the SCAN pattern "<prefix>:<run>:*" cleans up.
class RedisPeerSubject : public Subject {
 public:
  std::string name() const final { return name_; }
  bool in_redis() const final { return true; }
  std::vector<std::string> key_patterns() const final { return {prefix_ + ":" + run_ + ":*"}; }

 protected:
  // Checks that the server answers and loads `scripts` (SCRIPT LOAD): their
  // sha1s are shas_, in the same order. Throws when the server fails.
  RedisPeerSubject(std::string name, std::string prefix, std::string url, std::string run,
                   const std::vector<std::string>& scripts = {});
  // "<prefix>:<run>:<tag>", the key or key prefix of world `tag`.
  std::string world_key(const std::string& tag) const { return prefix_ + ":" + run_ + ":" + tag; }

  std::string url_, run_;
  std::vector<std::string> shas_;

 private:
  std::string name_, prefix_;
};

enum class Engine { redis, memory };

// Each throws (pathlock::BackendError, std::runtime_error) when the subject
// cannot start; `run` is this run's id, part of every namespace and key.
std::unique_ptr<Subject> make_pathlock_subject(Engine engine, const std::string& redis_url, const std::string& run);
// pathlock-redis over TLS ("pathlock-redis-tls"): `redis_url` is rediss://,
// `tls` its options. It shares the namespaces of pathlock-redis of the same
// run (the same worlds, filled by that one).
std::unique_ptr<Subject> make_pathlock_tls_subject(const std::string& redis_url, const std::string& run,
                                                   const RedisTlsOptions& tls);
std::unique_ptr<Subject> make_bare_subject(const std::string& redis_url, const std::string& run);
std::unique_ptr<Subject> make_scan_subject(const std::string& redis_url, const std::string& run);
std::unique_ptr<Subject> make_per_level_subject(const std::string& redis_url, const std::string& run);

}  // namespace pathlock::bench
