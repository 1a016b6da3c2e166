// The default clock (pathlock/clock.hpp).
#include <pathlock/clock.hpp>

namespace pathlock {
namespace {

class SteadyClock final : public Clock {
 public:
  time_point now() const override { return std::chrono::steady_clock::now(); }
};

}  // namespace

// Made when the library is loaded (a fork cannot split a first call's
// initialisation, docs/design.md#fork); steady_clock() is a function so that
// another library's load-time code may call it before this file's turn.
std::shared_ptr<const Clock> steady_clock() {
  static const std::shared_ptr<const Clock> clock = std::make_shared<SteadyClock>();
  return clock;
}

namespace {
[[maybe_unused]] const bool made_at_load = steady_clock() != nullptr;
}  // namespace

}  // namespace pathlock
