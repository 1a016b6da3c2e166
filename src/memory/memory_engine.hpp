// The embedded (in-process) backend. See memory_engine.cpp for the design.
#pragma once

#include <pathlock/engine.hpp>

#include <memory>

namespace pathlock::memory {

std::unique_ptr<LockEngine> make_memory_engine(const MatrixTable& matrix);

}  // namespace pathlock::memory
