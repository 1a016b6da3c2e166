// Many threads on overlapping paths: two conflicting locks are never held at
// the same time. Every grant is checked against a registry of the locks the
// test currently holds, using the matrix table and the path functions
// directly (a brute-force reference, independent of the engine's index).
//
// The worker threads make no Catch2 assertion (Catch2 v2's are not
// thread-safe: concurrent ones corrupt its state) and let no exception out
// (that would end the process): they count, and the test asserts the counts
// after joining them.
#include "support/backends.hpp"

#include <pathlock/engine.hpp>
#include <pathlock/path.hpp>

#include <catch2/catch.hpp>

#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <thread>

using namespace pathlock;
using namespace std::chrono_literals;

namespace {

struct Held {
  std::uint64_t fence;
  std::vector<std::pair<int, std::string>> targets;  // (code, canonical path)
};

Relation relation_between(const std::string& held, const std::string& requested) {
  if (held == requested) return Relation::same;
  return path_within(requested, held) ? Relation::held_ancestor : Relation::held_descendant;
}

// True if `earlier` (granted first) refuses `later` under the matrix.
bool refuses(const MatrixTable& m, const Held& earlier, const Held& later) {
  for (const auto& [hc, hp] : earlier.targets)
    for (const auto& [rc, rp] : later.targets)
      if (paths_overlap(hp, rp) && m.refuses(relation_between(hp, rp), hc, rc)) return true;
  return false;
}

// True if the matrix forbids the targets of `req` (one per role of `info`,
// in role order) as placed: the inner path of a not_inside pair is the outer
// one or inside it, e.g. a folder moved into its own subtree.
bool placed_inside(const OpInfo& info, const LockRequest& req) {
  for (std::size_t k = 0; k < info.not_inside_count; ++k) {
    const auto inner = info.not_inside[k][0], outer = info.not_inside[k][1];
    if (path_within(normalize_path(req.targets[inner].path), normalize_path(req.targets[outer].path))) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("conflicting locks are never held at the same time", "[concurrency]") {
  const test::BackendUnderTest backend = test::each_backend();
  auto engine = backend.make(nullptr);
  const MatrixTable& m = engine->matrix();
  const std::string ns = test::unique_namespace("stress");
  const std::vector<std::string> tree = {"/p", "/p/A", "/p/A/C", "/p/A/C/D", "/p/A/a.txt", "/p/A/CD",
                                         "/p/B", "/p/B/b.txt", "/q", "/q/x"};
  constexpr int kThreads = 8;
  const int iterations = backend.can.in_process ? 4000 : 600;

  std::mutex registry_mutex;
  std::map<std::uint64_t, Held> registry;  // locks the test holds now, by fence
  std::atomic<int> violations{0}, grants{0}, refusals{0}, failed_releases{0}, errors{0}, not_inside{0};
  std::mutex error_mutex;
  std::string first_error;
  auto note_error = [&](const std::exception& e) {
    std::lock_guard guard(error_mutex);
    if (errors++ == 0) first_error = e.what();
  };

  auto worker = [&](int id) {
    std::mt19937 rng(static_cast<unsigned>(id * 7919 + 1));
    auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
    for (int i = 0; i < iterations; ++i) {
      const auto op = static_cast<int>(pick(m.op_count));
      const OpInfo& info = m.ops[static_cast<std::size_t>(op)];
      LockRequest req{ns, "w" + std::to_string(id), std::string(info.name), {}, 5000ms, 0ms};
      for (std::size_t r = 0; r < info.role_count; ++r)
        req.targets.push_back(Target{std::string(info.roles[r]), tree[pick(tree.size())]});
      const bool forbidden = placed_inside(info, req);
      AcquireResult got;
      try {
        got = engine->acquire(req);
      } catch (const InvalidRequest& e) {
        if (forbidden) ++not_inside;  // e.g. a random move into its own subtree
        else note_error(e);           // any other InvalidRequest is a bug
        continue;
      } catch (const std::exception& e) {
        note_error(e);
        continue;
      }
      if (forbidden) ++violations;  // answered instead of refused as bad input
      if (!got.granted()) {
        ++refusals;
        continue;
      }
      ++grants;
      Held mine{got.grant.fence, {}};
      for (std::size_t r = 0; r < info.role_count; ++r)
        mine.targets.emplace_back(info.first_code + static_cast<int>(r), normalize_path(req.targets[r].path));
      {
        std::lock_guard guard(registry_mutex);
        for (const auto& [fence, other] : registry) {
          const bool bad = fence < mine.fence ? refuses(m, other, mine) : refuses(m, mine, other);
          if (bad) ++violations;
        }
        registry.emplace(mine.fence, mine);
      }
      if (pick(4) == 0) std::this_thread::yield();
      {
        std::lock_guard guard(registry_mutex);
        registry.erase(mine.fence);
      }
      try {
        if (!engine->release(ns, got.grant.id, got.grant.token)) ++failed_releases;
      } catch (const std::exception& e) {
        note_error(e);
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
  for (auto& t : threads) t.join();

  INFO(backend.name << ": " << grants << " grants, " << refusals << " refusals, " << not_inside
                    << " refused as not_inside");
  INFO("first error: " << first_error);
  CHECK(errors == 0);
  CHECK(failed_releases == 0);
  CHECK(violations == 0);
  CHECK(grants > 100);
  CHECK(refusals > 100);  // the paths really overlap
  CHECK(not_inside > 0);   // the matrix's not_inside rule was met, and enforced
  CHECK(engine->list(ns).empty());
}
