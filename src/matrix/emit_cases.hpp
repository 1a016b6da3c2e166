// The matrix-derived test scenarios pathlock-matrixc writes into
// matrix_cases.inc (run on every backend by tests/matrix_cases_test.cpp).
#pragma once

#include "matrix/model.hpp"

#include <string>

namespace pathlock::matrix {

// One PATHLOCK_MATRIX_CASE(...) line per (held code, requested code,
// relation): a concrete scenario with its expected outcome.
std::string emit_cases(const Matrix& m);

}  // namespace pathlock::matrix
