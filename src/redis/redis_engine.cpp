// Placeholder until the Redis backend lands (issue 3): refuses clearly.
#include "redis/redis_engine.hpp"

namespace pathlock::redis {

std::unique_ptr<LockEngine> make_redis_engine(const MatrixTable&, const EngineOptions&) {
  throw BackendError("the redis backend is not available in this build yet; use the memory backend");
}

}  // namespace pathlock::redis
