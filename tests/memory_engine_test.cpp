// The embedded backend beyond the conformance suite: what only an
// in-process engine can show (time injected through MemoryOptions::clock,
// engines that never share state).
#include <pathlock/clock.hpp>
#include <pathlock/memory.hpp>

#include <catch2/catch.hpp>

using namespace pathlock;
using namespace std::chrono_literals;

TEST_CASE("embedded engines never share namespaces, even at the same address", "[engine][memory]") {
  // The embedded backend caches namespace lookups per thread; the cache is
  // keyed by an engine serial number, not by the engine's address.
  for (int round = 0; round < 4; ++round) {
    auto engine = make_memory_engine();
    const auto got = engine->acquire(LockRequest{"shared-name", "a", "delete_folder", {{"target", "/p"}}});
    CHECK(got.granted);  // a fresh engine: nothing held, whatever came before
    CHECK(engine->list("shared-name").size() == 1);
  }
}

TEST_CASE("leases follow the injected clock: expiry without sleeping", "[memory][expiry][clock]") {
  auto clock = std::make_shared<ManualClock>();
  auto engine = make_memory_engine(MemoryOptions{nullptr, clock});
  const auto held = engine->acquire(LockRequest{"ns", "a", "delete_folder", {{"target", "/p"}}, 10min});
  REQUIRE(held.granted);
  CHECK(held.grant.expires_in == 10min);

  clock->advance(9min);
  const auto early = engine->acquire(LockRequest{"ns", "b", "upload", {{"target", "/p/f"}}});
  REQUIRE_FALSE(early.granted);
  CHECK(early.conflict.expires_in == 1min);
  CHECK(engine->renew("ns", held.grant.id, held.grant.token, 2min));

  clock->advance(2min - 1ms);
  CHECK_FALSE(engine->acquire(LockRequest{"ns", "b", "upload", {{"target", "/p/f"}}}).granted);
  clock->advance(1ms);  // the renewed lease ends exactly now
  CHECK(engine->list("ns").empty());
  CHECK_FALSE(engine->release("ns", held.grant.id, held.grant.token));
  CHECK(engine->acquire(LockRequest{"ns", "b", "upload", {{"target", "/p/f"}}}).granted);
}

TEST_CASE("a lease far beyond one lap of the expiry wheel ends on time", "[memory][expiry][clock]") {
  auto clock = std::make_shared<ManualClock>();
  auto engine = make_memory_engine(MemoryOptions{nullptr, clock});
  REQUIRE(engine->acquire(LockRequest{"ns", "a", "delete_folder", {{"target", "/p"}}, 7 * 24h}).granted);
  for (int hour = 0; hour < 7 * 24 - 1; ++hour) {
    clock->advance(1h);
    REQUIRE(engine->list("ns").size() == 1);
  }
  clock->advance(1h);
  CHECK(engine->list("ns").empty());
}
