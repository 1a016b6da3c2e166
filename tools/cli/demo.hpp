// `pathlock demo`: prints the article's story as a timeline.
#pragma once

#include <pathlock/engine.hpp>

#include <iosfwd>

namespace pathlock::cli {

int run_demo(LockEngine& engine, std::ostream& out);

}  // namespace pathlock::cli
