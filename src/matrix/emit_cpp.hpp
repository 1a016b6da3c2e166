// The C++ header pathlock-matrixc writes for a matrix: Op and Code enums
// and `inline constexpr MatrixTable kMatrix`.
#pragma once

#include <string>
#include <vector>

#include "matrix/model.hpp"

namespace pathlock::matrix {

// C++ header with Op and Code enums and `inline constexpr MatrixTable kMatrix`
// in namespace `cxx_namespace` (e.g. "pathlock::matrices::cloud_drive").
// Deterministic: the same matrix gives the same bytes. (The Lua of the Redis
// backend is built from the table at run time: src/redis/library.hpp.)
std::string emit_header(const Matrix& m, const std::string& cxx_namespace);

}  // namespace pathlock::matrix
