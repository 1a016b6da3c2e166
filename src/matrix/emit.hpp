// Everything the generator and the CLI produce from a Matrix. Each function
// is deterministic: the same matrix gives the same bytes.
#pragma once

#include "matrix/model.hpp"

#include <string>
#include <vector>

namespace pathlock::matrix {

// C++ header with Op and Code enums and `inline constexpr MatrixTable kMatrix`
// in namespace `cxx_namespace` (e.g. "pathlock::matrices::cloud_drive").
std::string emit_header(const Matrix& m, const std::string& cxx_namespace);

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
