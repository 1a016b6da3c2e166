#include "support/postgres_server.hpp"

#include <cstdlib>
#include <mutex>

namespace pathlock::test {

const std::string& shared_postgres_url() {
  static const std::string url = [] {
    const char* env = std::getenv("PATHLOCK_TEST_POSTGRES_URL");
    if (env && *env) return std::string(env);
    static PostgresServer server;  // destroyed (stopped) at exit
    return server.url();
  }();
  return url;
}

std::unique_ptr<LockEngine> postgres_engine(const MatrixTable* matrix, const std::string& url,
                                            const ObserveOptions& observe) {
  PostgresOptions options;
  options.matrix = matrix;
  options.url = url.empty() ? shared_postgres_url() : url;
  options.observe = observe;
  return make_postgres_engine(options);
}

}  // namespace pathlock::test
