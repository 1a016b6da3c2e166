// The one wait of the C++ tests and tools for a state that another thread or
// process reaches (tests/README.md "Time and waiting"): header-only, no
// dependency, so every test target and dev tool can use it.
#pragma once

#include <chrono>
#include <thread>

namespace pathlock::devtools {

// The default limit of every such wait.
inline constexpr std::chrono::milliseconds kUntilLimit = std::chrono::seconds(30);

// Polls `done()` every 5 ms until it returns true (true) or `limit` of real
// time passes (false).
template <class Done>
bool until(Done&& done, std::chrono::milliseconds limit = kUntilLimit) {
  const auto give_up = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace pathlock::devtools
