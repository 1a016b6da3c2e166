// The namespace registry of the embedded backend
// (src/memory/namespace_registry.hpp) on its own, with a stand-in namespace.
#include "memory/namespace_registry.hpp"

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <atomic>
#include <thread>

using namespace pathlock::memory;

namespace {

struct FakeTenant final {
  std::atomic<bool> idle{false};
  std::atomic<bool> trimmed{false};
  std::atomic<int> visits{0};
  bool trim_if_idle() {
    ++visits;
    if (!idle || trimmed) return false;
    trimmed = true;
    return true;
  }
};

}  // namespace

TEST_CASE("registry: find, get, one object per name for the registry's life", "[memory][registry]") {
  NamespaceRegistry<FakeTenant> r;
  CHECK(r.find("a") == nullptr);
  FakeTenant& a = r.get("a");
  CHECK(r.find("a") == &a);
  CHECK(&r.get("a") == &a);
  CHECK(&r.get("b") != &a);
  CHECK(r.size() == 2);
}

TEST_CASE("registry: per-thread caches never mix two registries", "[memory][registry]") {
  for (int round = 0; round < 4; ++round) {
    NamespaceRegistry<FakeTenant> r;
    CHECK(r.find("same") == nullptr);  // whatever an earlier registry cached
    FakeTenant& t = r.get("same");
    CHECK(r.find("same") == &t);
  }
}

TEST_CASE("registry: an idle namespace is trimmed within a bounded number of calls", "[memory][registry]") {
  NamespaceRegistry<FakeTenant> r;
  constexpr int kCount = 1000;
  std::vector<FakeTenant*> all;
  for (int i = 0; i < kCount; ++i) all.push_back(&r.get(fmt::format("ns-{}", i)));
  // Creations visited kSweepOnCreate namespaces each, none idle yet.
  int visits = 0;
  for (FakeTenant* t : all) visits += t->visits;
  CHECK(visits == kCount * static_cast<int>(kSweepOnCreate));
  for (FakeTenant* t : all) t->idle = true;
  for (std::uint32_t i = 0; i < kCount * kCallsPerSweep; ++i) r.note_call();
  for (FakeTenant* t : all) CHECK(t->trimmed);
}

TEST_CASE("registry: concurrent first use creates one namespace", "[memory][registry]") {
  NamespaceRegistry<FakeTenant> r;
  std::vector<FakeTenant*> got(8);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < got.size(); ++i)
    threads.emplace_back([&, i] {
      for (int k = 0; k < 200; ++k) r.get(fmt::format("n{}", k));
      got[i] = &r.get("n7");
    });
  for (auto& t : threads) t.join();
  for (FakeTenant* t : got) CHECK(t == got[0]);
  CHECK(r.size() == 200);
}
