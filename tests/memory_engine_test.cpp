// The embedded backend beyond the conformance suite: what only an
// in-process engine can show (time injected through MemoryOptions::clock,
// engines that never share state).
#include "memory/memory_engine.hpp"
#include "memory/namespace_registry.hpp"

#include <pathlock/clock.hpp>
#include <pathlock/memory.hpp>

#include <catch2/catch.hpp>
#include <malloc.h>

using namespace pathlock;
using namespace std::chrono_literals;

TEST_CASE("embedded engines never share namespaces, even at the same address", "[engine][memory]") {
  // The embedded backend caches namespace lookups per thread; the cache is
  // keyed by an engine serial number, not by the engine's address.
  for (int round = 0; round < 4; ++round) {
    auto engine = make_memory_engine();
    const auto got = engine->acquire(LockRequest{"shared-name", "a", "delete_folder", {{"target", "/p"}}});
    CHECK(got.granted());  // a fresh engine: nothing held, whatever came before
    CHECK(engine->list("shared-name").size() == 1);
  }
}

TEST_CASE("leases follow the injected clock: expiry without sleeping", "[memory][expiry][clock]") {
  auto clock = std::make_shared<ManualClock>();
  auto engine = make_memory_engine(MemoryOptions{nullptr, clock});
  const auto held = engine->acquire(LockRequest{"ns", "a", "delete_folder", {{"target", "/p"}}, 10min});
  REQUIRE(held.granted());
  CHECK(held.grant.expires_in == 10min);

  clock->advance(9min);
  const auto early = engine->acquire(LockRequest{"ns", "b", "upload", {{"target", "/p/f"}}});
  REQUIRE_FALSE(early.granted());
  CHECK(early.conflict.expires_in == 1min);
  CHECK(engine->renew("ns", held.grant.id, held.grant.token, 2min));

  clock->advance(2min - 1ms);
  CHECK_FALSE(engine->acquire(LockRequest{"ns", "b", "upload", {{"target", "/p/f"}}}).granted());
  clock->advance(1ms);  // the renewed lease ends exactly now
  CHECK(engine->list("ns").empty());
  CHECK_FALSE(engine->release("ns", held.grant.id, held.grant.token));
  CHECK(engine->acquire(LockRequest{"ns", "b", "upload", {{"target", "/p/f"}}}).granted());
}

TEST_CASE("a lease far beyond one lap of the expiry wheel ends on time", "[memory][expiry][clock]") {
  auto clock = std::make_shared<ManualClock>();
  auto engine = make_memory_engine(MemoryOptions{nullptr, clock});
  REQUIRE(engine->acquire(LockRequest{"ns", "a", "delete_folder", {{"target", "/p"}}, 7 * 24h}).granted());
  for (int hour = 0; hour < 7 * 24 - 1; ++hour) {
    clock->advance(1h);
    REQUIRE(engine->list("ns").size() == 1);
  }
  clock->advance(1h);
  CHECK(engine->list("ns").empty());
}

TEST_CASE("an idle namespace costs at most 2 KiB after a bounded number of calls", "[memory][idle]") {
  // 20,000 namespaces used once each: one lock taken and released. The
  // registry's sweep trims a namespace with no lock, no waiter and no acquire
  // since its previous visit within 2 x (namespaces x kCallsPerSweep) calls
  // (two laps: a second chance); heap growth is measured with
  // mallinfo2() over the whole process (this thread is the only one working).
  constexpr std::size_t kCount = 20000;
  auto engine = make_memory_engine();
  const std::size_t before = mallinfo2().uordblks;
  std::uint64_t last_fence = 0;
  for (std::size_t i = 0; i < kCount; ++i) {
    const std::string ns = "idle-" + std::to_string(i);
    const auto r = engine->acquire(LockRequest{ns, "o", "upload", {{"target", "/p/A/B/C/file"}}});
    REQUIRE(r.granted());
    REQUIRE(engine->release(ns, r.grant.id, r.grant.token));
    if (i == 0) last_fence = r.grant.fence;
  }
  for (std::size_t i = 0; i < 2 * kCount * memory::kCallsPerSweep; ++i)
    engine->release("idle-0", "0-0", "no-such-token");
  const auto stats = memory::memory_engine_stats(*engine);
  CHECK(stats.namespaces == kCount);
  CHECK(stats.with_state == 0);
  CHECK(stats.locks == 0);
  const std::size_t after = mallinfo2().uordblks;
  const double per_namespace = static_cast<double>(after - before) / kCount;
  INFO("bytes per idle namespace: " << per_namespace);
  CHECK(per_namespace <= 2048);

  // A trimmed namespace comes back with fences above every earlier one.
  const auto again = engine->acquire(LockRequest{"idle-0", "o", "upload", {{"target", "/p/A/B/C/file"}}});
  REQUIRE(again.granted());
  CHECK(again.grant.fence > last_fence);
  CHECK(engine->list("idle-0").size() == 1);
}

TEST_CASE("fences only grow in a namespace whose state was trimmed and rebuilt", "[memory][idle]") {
  auto engine = make_memory_engine();
  std::uint64_t last = 0;
  for (int round = 0; round < 50; ++round) {
    const auto r = engine->acquire(LockRequest{"fences", "o", "create", {{"target", "/x"}}});
    REQUIRE(r.granted());
    CHECK(r.grant.fence > last);
    last = r.grant.fence;
    REQUIRE(engine->release("fences", r.grant.id, r.grant.token));
    // Enough other namespaces and calls that the sweep trims "fences" (two
    // laps of at most 52 namespaces: a second chance).
    engine->acquire(LockRequest{"other-" + std::to_string(round), "o", "create", {{"target", "/x"}}});
    for (std::uint32_t k = 0; k < 128 * memory::kCallsPerSweep; ++k) engine->list("fences");
    REQUIRE(memory::memory_engine_stats(*engine).with_state == static_cast<std::size_t>(round) + 1);
  }
}

TEST_CASE("a namespace in use keeps its state between a release and the next acquire", "[memory][idle]") {
  // Regression: the sweep freed a namespace's state whenever it found it
  // idle, which a namespace in use is between each release and the next
  // acquire, so a thread taking and releasing locks in a loop rebuilt its
  // namespace's state again and again. Three calls per round (acquire,
  // release, list), so that the sweep's visits, one every kCallsPerSweep
  // calls, also land on an acquire that finds the namespace idle.
  auto engine = make_memory_engine();
  for (int i = 0; i < 100 * static_cast<int>(memory::kCallsPerSweep); ++i) {
    const auto r = engine->acquire(LockRequest{"busy", "o", "upload", {{"target", "/a/b/f" + std::to_string(i % 7)}}});
    REQUIRE(r.granted());
    REQUIRE(engine->release("busy", r.grant.id, r.grant.token));
    engine->list("busy");
  }
  CHECK(memory::memory_engine_stats(*engine).trims == 0);
  // Once no acquire comes, it is trimmed within two laps.
  for (std::uint32_t k = 0; k < 2 * memory::kCallsPerSweep; ++k) engine->list("busy");
  const auto stats = memory::memory_engine_stats(*engine);
  CHECK(stats.trims == 1);
  CHECK(stats.with_state == 0);
}

TEST_CASE("reentry by proof among many locks of one code at one path", "[memory][reentry]") {
  auto engine = make_memory_engine();
  std::vector<Grant> grants;
  for (int i = 0; i < 300; ++i) {
    const auto r = engine->acquire(LockRequest{"re", "owner-" + std::to_string(i), "upload", {{"target", "/shared"}}});
    REQUIRE(r.granted());
    grants.push_back(r.grant);
  }
  for (int i = 0; i < 300; i += 37) {
    LockRequest again{"re", "owner-" + std::to_string(i), "upload", {{"target", "/shared/"}}};
    const auto r = engine->acquire(again.reenter(grants[static_cast<std::size_t>(i)]));
    REQUIRE(r.granted());
    CHECK(r.grant.id == grants[static_cast<std::size_t>(i)].id);
    CHECK(r.grant.holds == 2);
    // Without the proof, the same owner gets a lock of its own (uploads share).
    const auto plain = engine->acquire(LockRequest{"re", "owner-" + std::to_string(i), "upload", {{"target", "/shared"}}});
    REQUIRE(plain.granted());
    CHECK(plain.grant.id != r.grant.id);
    CHECK(plain.grant.holds == 1);
  }
  // Another lock's token proves nothing.
  LockRequest crossed{"re", "owner-1", "upload", {{"target", "/shared"}}};
  crossed.reenter_id = grants[1].id;
  crossed.reenter_token = grants[2].token;
  CHECK(engine->acquire(crossed).not_holder());
}
