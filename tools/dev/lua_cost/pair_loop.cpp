// pathlock-pair-loop: a fixed workload for counting what the Redis backend
// costs inside redis-server (tools/dev/lua_cost/instructions.sh runs it under a
// server that valgrind counts instructions of; docs/benchmarks.md#where-the-
// time-of-a-call-goes). It holds --held locks, then runs --pairs
// acquire+release pairs, one after another on one connection, each on a
// sibling of held locks at depth 5 (so every pair walks a populated index
// and is granted), cycling through --ring distinct paths (default 1000, as
// pathlock-bench's clients do). Timing is not its job: it prints nothing but
// errors.
//
// Usage: pathlock-pair-loop --redis URL [--held N] [--pairs N] [--ring N] [--namespace NS]
// Exit status: 0 done, 1 a pair was refused or failed, 2 bad usage.
#include <pathlock/pathlock.hpp>

#include "common/options.hpp"

#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <string_view>

namespace {

constexpr const char* kUsage =
    "usage: pathlock-pair-loop --redis URL [--held N] [--pairs N] [--ring N] [--namespace NS]\n";

namespace options = pathlock::options;
const options::Options kOptions = options::Options{}
                                      .required("redis")
                                      .number("held", 0, 100000000)
                                      .number("pairs", 0, 1000000000000)
                                      .number("ring", 1, 100000000)
                                      .value("namespace");

}  // namespace

int main(int argc, char** argv) {
  const std::optional<options::Parsed> p = kOptions.parse_main(argc, argv, 1, kUsage);
  if (!p) return options::kExitUsage;
  const std::string url = p->get("redis"), ns = p->get("namespace", "pair-loop");
  const long long held = p->number_or("held", 0), pairs = p->number_or("pairs", 1000),
                  ring = p->number_or("ring", 1000);
  try {
    pathlock::EngineOptions options;
    options.backend = pathlock::Backend::redis;
    options.redis.url = url;
    const auto engine = pathlock::make_engine(options);
    for (long long i = 0; i < held; ++i) {
      pathlock::LockRequest r{ns, "holder", "upload",
                              {{"target", "/f/" + std::to_string(i % 100) + "/x/y/z" + std::to_string(i)}}};
      r.ttl = pathlock::Millis(3600 * 1000);
      if (!engine->acquire(r)) {
        std::fprintf(stderr, "pathlock-pair-loop: a held lock was refused\n");
        return 1;
      }
    }
    for (long long i = 0; i < pairs; ++i) {
      const pathlock::LockRequest r{ns, "me", "upload", {{"target", "/f/7/x/y/m" + std::to_string(i % ring)}}};
      const pathlock::AcquireResult g = engine->acquire(r);
      if (!g || !engine->release(ns, g.grant.id, g.grant.token)) {
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
