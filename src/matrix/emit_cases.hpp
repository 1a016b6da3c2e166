// The matrix-derived test scenarios pathlock-matrixc writes into
// matrix_cases.inc (run on every backend by tests/matrix_cases_test.cpp).
#pragma once

#include "matrix/model.hpp"

#include <string>

namespace pathlock::matrix {

// One PATHLOCK_MATRIX_CASE(...) line per (held code, requested code,
// relation): a concrete scenario with its expected outcome.
std::string emit_cases(const Matrix& m);

// The same scenarios as JSON (matrix_cases.json, installed as a test vector
// for clients in other languages; docs/lua-protocol.md#test-vectors):
// {"generated_from", "matrix", "fingerprint", "cases": [{held_op,
// held_targets {role: path}, held_role, held_path, requested_op,
// requested_targets, requested_role, relation, granted}]}.
std::string emit_cases_json(const Matrix& m);

}  // namespace pathlock::matrix
