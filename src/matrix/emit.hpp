// Everything the generator and the CLI produce from a Matrix. Each function
// is deterministic: the same matrix (and templates) give the same bytes.
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

// C++ header with Op and Code enums and `inline constexpr MatrixTable kMatrix`
// in namespace `cxx_namespace` (e.g. "pathlock::matrices::cloud_drive").
std::string emit_header(const Matrix& m, const std::string& cxx_namespace, const std::vector<LuaTemplate>& lua,
                        const std::vector<LuaTemplate>& includes = {});

// One PATHLOCK_MATRIX_CASE(...) line per (held code, requested code,
// relation): a concrete scenario with its expected outcome.
std::string emit_cases(const Matrix& m);

// Renderings for product owners.
std::string emit_markdown(const Matrix& m);
std::string emit_html(const Matrix& m);

// The grid cell as MatrixTable.md writes it ("A×B√"), without decisions.
std::string original_label(const Matrix& m, int held_op, int requested_op);
// The shipped decisions of a cell, e.g. "a√", or "" if there are none.
std::string decision_label(const Matrix& m, int held_op, int requested_op);

// Text for `pathlock matrix explain HELD REQUESTED`.
std::string explain(const Matrix& m, int held_op, int requested_op);
// Text for `pathlock matrix lint`: summary and asymmetric pairs.
std::string lint_report(const Matrix& m);

}  // namespace pathlock::matrix
