// `pathlock matrix lint`: the report for a valid matrix, the warnings, and
// the version check against an older file (`--against OLD`).
// Problems that make a file invalid are MatrixError (parse.cpp); lint
// prints every one of them.
#pragma once

#include <optional>
#include <string>

#include "matrix/model.hpp"

namespace pathlock::matrix {

// Summary, warnings (rules marked for review) and asymmetric pairs.
std::string lint_report(const Matrix& m);

// A problem when the rules of `now` differ from those of `old` (the
// fingerprints differ) while "version" stayed the same; nullopt otherwise.
std::optional<std::string> version_problem(const Matrix& old, const Matrix& now);

}  // namespace pathlock::matrix
