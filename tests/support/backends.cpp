#include "support/backends.hpp"

#include "support/redis_server.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <chrono>

namespace pathlock::test {

const std::vector<BackendUnderTest>& backends_under_test() {
  static const std::vector<BackendUnderTest> rows = {
      {"memory",
       [](const MatrixTable* matrix) { return make_memory_engine(MemoryOptions{matrix, nullptr}); },
       {.waiting = true, .in_process = true, .shared = false}},
      {"redis",
       [](const MatrixTable* matrix) {
         RedisOptions options;
         options.matrix = matrix;
         options.url = shared_redis_server().url();
         return make_redis_engine(options);
       },
       {.waiting = true, .in_process = false, .shared = true}},
  };
  return rows;
}

BackendUnderTest each_backend() {
  BackendUnderTest row = GENERATE(from_range(backends_under_test()));
  UNSCOPED_INFO("backend: " << row.name);
  return row;
}

const BackendUnderTest& backend_named(const std::string& name) {
  for (const BackendUnderTest& row : backends_under_test())
    if (row.name == name) return row;
  FAIL("no backend named " << name);
  throw std::logic_error("unreachable");
}

std::unique_ptr<LockEngine> make_test_engine(const std::string& name, const MatrixTable* matrix) {
  return backend_named(name).make(matrix);
}

std::string unique_namespace(const std::string& hint) {
  static std::atomic<unsigned> counter{0};
  static const auto start = std::chrono::system_clock::now().time_since_epoch().count();
  return fmt::format("{}-{}-{}-{}", hint, getpid(), start % 1000000007, counter++);
}

}  // namespace pathlock::test
