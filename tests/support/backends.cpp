#include "support/backends.hpp"

#ifdef PATHLOCK_WITH_REDIS
#include "support/redis_server.hpp"
#endif
#ifdef PATHLOCK_TEST_WITH_POSTGRES
#include "support/postgres_server.hpp"
#endif

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <utility>

namespace pathlock::test {

namespace {

#ifdef PATHLOCK_WITH_REDIS
std::unique_ptr<LockEngine> redis_row_engine(const MatrixTable* matrix, const std::string& url,
                                             const ObserveOptions& observe = {}, const RedisTlsOptions& tls = {}) {
  RedisOptions options;
  options.matrix = matrix;
  options.url = url;
  options.observe = observe;
  options.tls = tls;
  return make_redis_engine(options);
}
#endif

const std::vector<BackendUnderTest>& all_rows() {
  static const std::vector<BackendUnderTest> rows = {
      {"memory",
       [](const MatrixTable* matrix) { return make_memory_engine(MemoryOptions{matrix, nullptr}); },
       {.waiting = true, .in_process = true, .shared = false, .injectable_clock = true},
       [](const MatrixTable* matrix, const ObserveOptions& observe) {
         return make_memory_engine(MemoryOptions{matrix, nullptr, observe});
       },
       [](const MatrixTable* matrix, std::shared_ptr<const Clock> clock) {
         return make_memory_engine(MemoryOptions{matrix, std::move(clock)});
       }},
#ifdef PATHLOCK_WITH_REDIS  // a build with PATHLOCK_WITH_REDIS=OFF tests the embedded backend only
      {"redis", [](const MatrixTable* matrix) { return redis_row_engine(matrix, shared_redis_server().url()); },
       {.waiting = true, .in_process = false, .shared = true},
       [](const MatrixTable* matrix, const ObserveOptions& observe) {
         return redis_row_engine(matrix, shared_redis_server().url(), observe);
       },
       nullptr},
      // A local 3-master Redis Cluster; the namespaces of a test land on every master.
      {"cluster", [](const MatrixTable* matrix) { return redis_row_engine(matrix, shared_cluster().url()); },
       {.waiting = true, .in_process = false, .shared = true},
       [](const MatrixTable* matrix, const ObserveOptions& observe) {
         return redis_row_engine(matrix, shared_cluster().url(), observe);
       },
       nullptr},
      // A primary and a replica watched by three sentinels (redis-sentinel:// URL).
      {"sentinel", [](const MatrixTable* matrix) { return redis_row_engine(matrix, shared_sentinel().url()); },
       {.waiting = true, .in_process = false, .shared = true},
       [](const MatrixTable* matrix, const ObserveOptions& observe) {
         return redis_row_engine(matrix, shared_sentinel().url(), observe);
       },
       nullptr},
      // One server over TLS (rediss://, certificates made at test time).
      {"tls",
       [](const MatrixTable* matrix) {
         return redis_row_engine(matrix, shared_tls_redis_server().tls_url(), {}, test_tls_options());
       },
       {.waiting = true, .in_process = false, .shared = true},
       [](const MatrixTable* matrix, const ObserveOptions& observe) {
         return redis_row_engine(matrix, shared_tls_redis_server().tls_url(), observe, test_tls_options());
       },
       nullptr},
#endif
#ifdef PATHLOCK_TEST_WITH_POSTGRES  // a PostgreSQL started by the suite (support/postgres_server.hpp)
      {"postgres", [](const MatrixTable* matrix) { return postgres_engine(matrix); },
       {.waiting = true, .in_process = false, .shared = true},
       [](const MatrixTable* matrix, const ObserveOptions& observe) { return postgres_engine(matrix, "", observe); },
       nullptr},
#endif
  };
  return rows;
}

}  // namespace

const std::vector<BackendUnderTest>& backends_under_test() {
  static const std::vector<BackendUnderTest> rows = [] {
    const char* env = std::getenv("PATHLOCK_TEST_BACKENDS");
    const std::string wanted = env && *env ? std::string(",") + env + "," : std::string(",memory,redis,");
    std::vector<BackendUnderTest> out;
    for (const BackendUnderTest& row : all_rows())
      if (wanted.find("," + row.name + ",") != std::string::npos) out.push_back(row);
    if (out.empty()) throw std::invalid_argument("PATHLOCK_TEST_BACKENDS names no backend: " + wanted);
    return out;
  }();
  return rows;
}

BackendUnderTest each_backend() {
  BackendUnderTest row = GENERATE(from_range(backends_under_test()));
  UNSCOPED_INFO("backend: " << row.name);
  return row;
}

const BackendUnderTest& backend_named(const std::string& name) {
  for (const BackendUnderTest& row : all_rows())
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

LockRequest one_target_request(const std::string& ns, const std::string& owner, const std::string& op,
                               const std::string& path, Millis wait) {
  return LockRequest{ns, owner, op, {{"target", path}}, Millis{30000}, wait};
}

Grant granted(LockEngine& engine, const LockRequest& request) {
  const AcquireResult r = engine.acquire(request);
  REQUIRE(r.granted());
  return r.grant;
}

}  // namespace pathlock::test
