// See namespace_state.hpp.
#include "memory/namespace_state.hpp"

#include <utility>

namespace pathlock::memory {

bool Namespace::trim_if_idle() {
  std::unique_lock guard(mutex, std::try_to_lock);
  if (!guard || !state) return false;
  const bool recently = std::exchange(acquired_since_visit, false);
  if (recently || !state->idle()) return false;
  state.reset();
  ++trims;
  return true;
}

NamespaceState& Namespace::use(Clock::time_point now) {
  if (!state) state = std::make_unique<NamespaceState>(now);
  return *state;
}

void Namespace::notify() {
  ++generation;
  changed.notify_all();
}

}  // namespace pathlock::memory
