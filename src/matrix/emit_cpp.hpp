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
// Throws MatrixError, naming each offender, when an operation name (an
// enumerator of Op) or an operation_role code name (an enumerator of Code)
// is not a usable C++ identifier: a keyword or alternative token ("delete",
// "new", "and"), or a macro GCC and Clang predefine ("linux", "unix").
std::string emit_header(const Matrix& m, const std::string& cxx_namespace);

// The same problems as texts, one per offending name, in file order (empty
// when the header compiles); `pathlock matrix lint` prints them as warnings.
std::vector<std::string> cxx_name_problems(const Matrix& m);

}  // namespace pathlock::matrix
