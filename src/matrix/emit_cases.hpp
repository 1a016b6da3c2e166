// The matrix-derived test scenarios pathlock-matrixc writes into
// matrix_cases.inc (run on every backend by tests/matrix_cases_test.cpp).
#pragma once

#include "matrix/model.hpp"

#include <string>
#include <vector>

namespace pathlock::matrix {

// One PATHLOCK_MATRIX_CASE(...) line per (held code, requested code,
// relation): a concrete scenario with its expected outcome.
std::string emit_cases(const Matrix& m);

// The same scenarios as JSON (matrix_cases.json, installed as a test vector
// for clients in other languages; docs/lua-protocol.md#test-vectors):
// {"generated_from", "matrix", "fingerprint", "cases": [{held_op,
// held_targets {role: path}, held_role, held_path, requested_op,
// requested_targets, requested_role, relation, granted}]}.
// `conversion_cases` holds the conversion scenarios below, each with the
// fields of ConversionScenario (targets as {role: path}; empty ones left out).
std::string emit_cases_json(const Matrix& m);

// "role=path,..." of operation `op`: the role `role` at `path`, every other
// role at PREFIX/ROLE (role -1: every role there), as the scenarios spell targets.
std::string targets_text(const Matrix& m, int op, int role, const std::string& path, const std::string& prefix);

// One conversion scenario (emit_conversions.cpp says what each kind sets
// up). Targets are "role=path,..."; an empty op means no such lock.
struct ConversionScenario {
  std::string kind;                        // beside, ahead, behind, deadlock
  std::string held_op, held, held_role;    // a lock held by another owner
  std::string other_op, other;             // a waiter's request; deadlock: the held lock's conversion
  std::string from_op, from;               // the converting lock as it is
  std::string to_op, to, to_role;          // what it converts to; to_role's target is the one under test
  std::string relation = "same";           // beside: of to's target under test to the held one
  bool fair = true;                        // the conversion's
  std::string outcome;                     // granted, refused or would_deadlock
  std::string names;                       // what a refusal names: held, other or from
  bool other_granted = false;              // ahead: the waiter gets in once the conversion is made
};

// Every conversion scenario of the matrix, in a fixed order.
std::vector<ConversionScenario> conversion_scenarios(const Matrix& m);

// One PATHLOCK_CONVERSION_CASE(...) line per scenario (conversion_cases.inc).
std::string emit_conversion_cases(const Matrix& m);

}  // namespace pathlock::matrix
