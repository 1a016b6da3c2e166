// The Lua emission of the Redis backend's scripts: the compiled tables as
// Lua locals, spliced into the templates of lua/ (with their includes).
// Moved unchanged out of emit.cpp; the Redis backend's own work replaces it.
#pragma once

#include "matrix/model.hpp"

#include <string>
#include <vector>

namespace pathlock::matrix {

struct LuaTemplate {
  std::string name;  // file name without ".lua" (or ".luainc" for includes)
  std::string text;  // a script contains the marker line "-- @PATHLOCK_MATRIX@"
};

// The Lua chunk that replaces the marker: the compiled tables as Lua locals.
std::string emit_lua_tables(const Matrix& m);
// A template with its marker replaced, and every line
// "-- @PATHLOCK_INCLUDE name@" replaced by the text of include `name`
// (lua/name.luainc; includes do not nest). Throws MatrixError if the marker
// is missing or an include is unknown.
std::string emit_lua(const Matrix& m, const LuaTemplate& tmpl, const std::vector<LuaTemplate>& includes = {});

}  // namespace pathlock::matrix
