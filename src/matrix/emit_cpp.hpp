// The C++ header pathlock-matrixc writes for a matrix: Op and Code enums
// and `inline constexpr MatrixTable kMatrix`.
#pragma once

#include <string>
#include <vector>

#include "matrix/emit_lua.hpp"
#include "matrix/model.hpp"

namespace pathlock::matrix {

// C++ header with Op and Code enums and `inline constexpr MatrixTable kMatrix`
// in namespace `cxx_namespace` (e.g. "pathlock::matrices::cloud_drive"),
// with the Lua scripts of `lua` (and their `includes`) as raw literals.
// Deterministic: the same inputs give the same bytes. Throws MatrixError for
// too many templates or a template that cannot be embedded.
std::string emit_header(const Matrix& m, const std::string& cxx_namespace, const std::vector<LuaTemplate>& lua,
                        const std::vector<LuaTemplate>& includes = {});

}  // namespace pathlock::matrix
