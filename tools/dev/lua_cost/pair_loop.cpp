// pathlock-pair-loop: a fixed workload for counting what the Redis backend
// costs inside redis-server (tools/dev/lua_cost/instructions.sh runs it under a
// server that valgrind counts instructions of; docs/benchmarks.md#where-the-
// time-of-a-call-goes). It holds --held locks, then runs --pairs
// acquire+release pairs, one after another on one connection, each on a
// sibling of held locks at depth --depth (default 5; so every pair walks a
// populated index and is granted), cycling through --ring distinct paths
// (default 1000, as pathlock-bench's clients do). With --refused, each of the --pairs steps
// is instead one acquire that a held delete_folder of their folder refuses
// (the other hot call: a refusal names the lock, takes no place in line).
// With --convert, each step instead converts one lock the run holds to an
// upload of the next path of the ring (granted: the conversion's cost beside
// an acquire's at the same depth; its one acquire and release are counted
// too); with --convert-in-place, each step converts one of --ring locks (one
// per path of the ring) on its own path, between upload and delete_file (the
// worked example's kind of conversion: a new operation, the same targets);
// the run that takes the held locks takes these too and writes their proofs
// to --locks FILE, which the next run reads; with --acquire, each step is a granted acquire alone of a path of the
// ring (the locks stay held: one step's cost of a pair without its release).
// --op NAME: the pairs' and acquires' operation, one target (default upload).
// Timing is not its job: it prints nothing but errors.
//
// Usage: pathlock-pair-loop --redis URL [--held N] [--pairs N] [--ring N] [--depth N] [--namespace NS]
//                           [--op NAME] [--refused | --convert | --convert-in-place --locks FILE | --acquire]
// Exit status: 0 done, 1 a pair was refused or failed (or, with --refused,
// a step was granted), 2 bad usage.
#include <pathlock/pathlock.hpp>

#include "common/options.hpp"

#include <cstdio>
#include <exception>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

constexpr const char* kUsage =
    "usage: pathlock-pair-loop --redis URL [--held N] [--pairs N] [--ring N] [--depth N] [--namespace NS] [--op NAME] "
    "[--refused | --convert | --convert-in-place --locks FILE | --acquire]\n";

namespace options = pathlock::options;
const options::Options kOptions = options::Options{}
                                      .required("redis")
                                      .number("held", 0, 100000000)
                                      .number("pairs", 0, 1000000000000)
                                      .number("ring", 1, 100000000)
                                      .number("depth", 4, 60)
                                      .value("namespace")
                                      .flag("refused")
                                      .flag("convert")
                                      .flag("convert-in-place")
                                      .value("locks")
                                      .value("op")
                                      .flag("acquire");

// The folder between /f/N and a lock's own name, for paths of `depth`
// components: x/y at depth 5, with a `d` more per component deeper.
std::string middle(long long depth) {
  std::string m = "/x";
  for (long long i = 5; i < depth; ++i) m += "/d";
  return depth > 4 ? m + "/y" : m;
}

// --refused: a delete_folder held on /f/7/x/w (a sibling of the held locks'
// folder, deeper with --depth) refuses every step's upload below it, at the
// depth of a pair's. The run that takes the held locks takes it too (`take_blocker`),
// so that the run counted after it sends nothing but the refused acquires.
int refusals(pathlock::LockEngine& engine, const std::string& ns, long long steps, long long ring, long long depth,
             bool take_blocker) {
  std::string folder = "/f/7" + middle(depth);
  folder = folder.substr(0, folder.rfind('/')) + "/w";
  pathlock::LockRequest blocker{ns, "blocker", "delete_folder", {{"target", folder}}};
  blocker.ttl = pathlock::Millis(3600 * 1000);
  if (take_blocker && !engine.acquire(blocker)) {
    std::fprintf(stderr, "pathlock-pair-loop: the blocker was refused\n");
    return 1;
  }
  for (long long i = 0; i < steps; ++i) {
    const pathlock::LockRequest r{ns, "me", "upload", {{"target", folder + "/m" + std::to_string(i % ring)}}};
    if (engine.acquire(r)) {
      std::fprintf(stderr, "pathlock-pair-loop: a step meant to be refused was granted\n");
      return 1;
    }
  }
  return 0;
}

// --convert: one lock, converted `steps` times, each time to an upload of
// the next path of the ring (all siblings of the pairs' paths), then released.
int conversions(pathlock::LockEngine& engine, const std::string& ns, long long steps, long long ring,
                const std::string& mid) {
  const auto path = [&](long long i) { return "/f/7" + mid + "/m" + std::to_string(i % ring); };
  const pathlock::AcquireResult first = engine.acquire({ns, "me", "upload", {{"target", path(0)}}});
  if (!first) {
    std::fprintf(stderr, "pathlock-pair-loop: the lock to convert was refused\n");
    return 1;
  }
  for (long long i = 1; i <= steps; ++i) {
    if (!engine.convert(pathlock::ConvertRequest::of(ns, first.grant, "upload", {{"target", path(i)}}))) {
      std::fprintf(stderr, "pathlock-pair-loop: a conversion was refused\n");
      return 1;
    }
  }
  return engine.release(ns, first.grant.id, first.grant.token) ? 0 : 1;
}

// --convert-in-place: `steps` conversions, each of lock i % ring on its own
// path to the other of upload and delete_file. The run with the held locks
// (`take`) takes the ring's locks; each run leaves the proofs and operations
// in `file` for the next.
int conversions_in_place(pathlock::LockEngine& engine, const std::string& ns, long long steps, long long ring,
                         const std::string& mid, const std::string& file, bool take) {
  struct Held {
    pathlock::Grant grant;
    std::string op;
  };
  std::vector<Held> locks;
  const auto path = [&](long long i) { return "/f/7" + mid + "/m" + std::to_string(i % ring); };
  std::ifstream in(file);
  for (Held h; !take && in >> h.grant.id >> h.grant.token >> h.op;) locks.push_back(h);
  for (long long i = 0; take && i < ring; ++i) {
    pathlock::LockRequest r{ns, "me", "upload", {{"target", path(i)}}};
    r.ttl = pathlock::Millis(3600 * 1000);
    const pathlock::AcquireResult g = engine.acquire(r);
    if (!g) {
      std::fprintf(stderr, "pathlock-pair-loop: a lock of the ring was refused\n");
      return 1;
    }
    locks.push_back({g.grant, "upload"});
  }
  if (static_cast<long long>(locks.size()) != ring) {
    std::fprintf(stderr, "pathlock-pair-loop: --locks %s holds no lock per path of the ring\n", file.c_str());
    return 1;
  }
  for (long long i = 0; i < steps; ++i) {
    Held& h = locks[static_cast<std::size_t>(i % ring)];
    h.op = h.op == "upload" ? "delete_file" : "upload";
    pathlock::ConvertRequest c = pathlock::ConvertRequest::of(ns, h.grant, h.op, {{"target", path(i)}});
    c.ttl = pathlock::Millis(3600 * 1000);
    if (!engine.convert(c)) {
      std::fprintf(stderr, "pathlock-pair-loop: a conversion was refused\n");
      return 1;
    }
  }
  std::ofstream out(file, std::ios::trunc);
  for (const Held& h : locks) out << h.grant.id << " " << h.grant.token << " " << h.op << "\n";
  return out ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::optional<options::Parsed> p = kOptions.parse_main(argc, argv, 1, kUsage);
  if (!p) return options::kExitUsage;
  const std::string url = p->get("redis"), ns = p->get("namespace", "pair-loop");
  const long long held = p->number_or("held", 0), pairs = p->number_or("pairs", 1000),
                  ring = p->number_or("ring", 1000), depth = p->number_or("depth", 5);
  const std::string mid = middle(depth);
  try {
    pathlock::EngineOptions options;
    options.backend = pathlock::Backend::redis;
    options.redis.url = url;
    const auto engine = pathlock::make_engine(options);
    for (long long i = 0; i < held; ++i) {
      pathlock::LockRequest r{ns, "holder", "upload",
                              {{"target", "/f/" + std::to_string(i % 100) + mid + "/z" + std::to_string(i)}}};
      r.ttl = pathlock::Millis(3600 * 1000);
      if (!engine->acquire(r)) {
        std::fprintf(stderr, "pathlock-pair-loop: a held lock was refused\n");
        return 1;
      }
    }
    if (p->has("refused")) return refusals(*engine, ns, pairs, ring, depth, held > 0);
    if (p->has("convert")) return conversions(*engine, ns, pairs, ring, mid);
    if (p->has("convert-in-place"))
      return conversions_in_place(*engine, ns, pairs, ring, mid, p->get("locks"), held > 0);
    const bool acquire_only = p->has("acquire");
    const std::string op = p->get("op", "upload");
    // (--acquire's locks stay: the run that takes the held locks keeps its
    // own apart, so that the counted run's never meet them whatever the op.)
    const std::string name = acquire_only && held > 0 ? "/w" : "/m";
    for (long long i = 0; i < pairs; ++i) {
      const pathlock::LockRequest r{ns, "me", op, {{"target", "/f/7" + mid + name + std::to_string(i % ring)}}};
      const pathlock::AcquireResult g = engine->acquire(r);
      if (!g || (!acquire_only && !engine->release(ns, g.grant.id, g.grant.token))) {
        std::fprintf(stderr, "pathlock-pair-loop: a pair was refused or not released\n");
        return 1;
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pathlock-pair-loop: %s\n", e.what());
    return 1;
  }
  return 0;
}
