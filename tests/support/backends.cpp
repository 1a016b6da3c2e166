#include "support/backends.hpp"

#include "support/redis_server.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <chrono>

namespace pathlock::test {

std::vector<std::string> backend_names() { return {"memory", "redis"}; }

std::vector<std::string> waiting_backend_names() { return {"memory", "redis"}; }

std::unique_ptr<LockEngine> make_test_engine(const std::string& name, const MatrixTable* matrix) {
  EngineOptions opts;
  opts.backend = parse_backend(name);
  opts.matrix = matrix;
  if (opts.backend == Backend::redis) opts.redis_url = shared_redis_server().url();
  return make_engine(opts);
}

std::string unique_namespace(const std::string& hint) {
  static std::atomic<unsigned> counter{0};
  static const auto start = std::chrono::system_clock::now().time_since_epoch().count();
  return fmt::format("{}-{}-{}-{}", hint, getpid(), start % 1000000007, counter++);
}

}  // namespace pathlock::test
