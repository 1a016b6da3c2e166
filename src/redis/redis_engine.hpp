// The Redis backend. See redis_engine.cpp for the design.
#pragma once

#include <pathlock/engine.hpp>

#include <memory>

namespace pathlock::redis {

std::unique_ptr<LockEngine> make_redis_engine(const MatrixTable& matrix, const EngineOptions& options);

}  // namespace pathlock::redis
