// lua_library() of pathlock/matrix.hpp: the Redis Functions library of a
// table, from src/redis/library.hpp (built into pathlock and the generator).
#include <pathlock/matrix.hpp>

#include "redis/library.hpp"

namespace pathlock::matrix {

std::string lua_library(const MatrixTable& table) { return redis::library_for(table).code; }

}  // namespace pathlock::matrix
