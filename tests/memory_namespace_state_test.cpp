// memory/namespace_state.hpp: a namespace's state is made on use and freed by
// the sweep only when idle and not acquired since the sweep's last visit.
#include "memory/namespace_state.hpp"

#include <catch2/catch.hpp>

#include <thread>

using namespace pathlock;
using namespace pathlock::memory;

TEST_CASE("namespace: state is made on use and kept while it holds a lock", "[memory][namespace]") {
  Namespace ns;
  CHECK_FALSE(ns.trim_if_idle());  // nothing to free
  NamespaceState& st = ns.use(Clock::time_point{});
  CHECK(&ns.use(Clock::time_point{}) == &st);  // made once
  Lock& lock = st.locks.take(ns.next_fence++);
  CHECK_FALSE(ns.trim_if_idle());
  CHECK_FALSE(ns.trim_if_idle());
  CHECK(ns.state != nullptr);
  st.locks.give_back(lock);
  CHECK(ns.trim_if_idle());
  CHECK(ns.state == nullptr);
  CHECK(ns.trims == 1);
  CHECK(ns.next_fence == 2);  // the fixed part stays
}

TEST_CASE("namespace: an acquire since the last visit earns a second chance", "[memory][namespace]") {
  Namespace ns;
  ns.use(Clock::time_point{});
  ns.acquired_since_visit = true;
  CHECK_FALSE(ns.trim_if_idle());  // idle, but used since the last visit
  CHECK(ns.state != nullptr);
  CHECK(ns.trim_if_idle());  // idle and untouched for a whole lap
  CHECK(ns.trims == 1);
}

TEST_CASE("namespace: a sweep never waits for a namespace in use", "[memory][namespace]") {
  Namespace ns;
  ns.use(Clock::time_point{});
  std::unique_lock held(ns.mutex);
  bool trimmed = true;
  std::thread sweep([&] { trimmed = ns.trim_if_idle(); });
  sweep.join();
  CHECK_FALSE(trimmed);
  CHECK(ns.state != nullptr);
  held.unlock();
  CHECK(ns.trim_if_idle());
}

TEST_CASE("namespace: notify counts and wakes", "[memory][namespace]") {
  Namespace ns;
  std::unique_lock guard(ns.mutex);
  std::thread other([&] {
    std::lock_guard g(ns.mutex);
    ns.notify();
  });
  ns.changed.wait(guard, [&] { return ns.generation == 1; });
  other.join();
  CHECK(ns.generation == 1);
}
