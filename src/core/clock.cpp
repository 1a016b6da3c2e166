// The default clock (pathlock/clock.hpp).
#include <pathlock/clock.hpp>

namespace pathlock {
namespace {

class SteadyClock final : public Clock {
 public:
  time_point now() const override { return std::chrono::steady_clock::now(); }
};

}  // namespace

std::shared_ptr<const Clock> steady_clock() {
  static const std::shared_ptr<const Clock> clock = std::make_shared<SteadyClock>();
  return clock;
}

}  // namespace pathlock
