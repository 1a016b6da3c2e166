// pathlock-pair-loop: a fixed workload for counting what the Redis backend
// costs inside redis-server (tools/lua_cost/instructions.sh runs it under a
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

#include <charconv>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>

namespace {

constexpr const char* kUsage =
    "usage: pathlock-pair-loop --redis URL [--held N] [--pairs N] [--ring N] [--namespace NS]\n";

bool count(std::string_view text, long& out) {
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && p == end && out >= 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string url, ns = "pair-loop";
  long held = 0, pairs = 1000, ring = 1000;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "pathlock-pair-loop: %s needs a value\n", argv[i]);
      return 2;
    }
    const std::string_view value = argv[++i];
    if (arg == "--redis") {
      url = value;
    } else if (arg == "--namespace") {
      ns = value;
    } else if (arg == "--held"    ? !count(value, held)
               : arg == "--pairs" ? !count(value, pairs)
               : arg == "--ring"  ? !count(value, ring) || ring == 0
                                  : true) {
      std::fprintf(stderr, "%s", kUsage);
      return 2;
    }
  }
  if (url.empty()) {
    std::fprintf(stderr, "%s", kUsage);
    return 2;
  }
  try {
    pathlock::EngineOptions options;
    options.backend = pathlock::Backend::redis;
    options.redis.url = url;
    const auto engine = pathlock::make_engine(options);
    for (long i = 0; i < held; ++i) {
      pathlock::LockRequest r{ns, "holder", "upload",
                              {{"target", "/f/" + std::to_string(i % 100) + "/x/y/z" + std::to_string(i)}}};
      r.ttl = pathlock::Millis(3600 * 1000);
      if (!engine->acquire(r)) {
        std::fprintf(stderr, "pathlock-pair-loop: a held lock was refused\n");
        return 1;
      }
    }
    for (long i = 0; i < pairs; ++i) {
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
