// `pathlock matrix explain HELD REQUESTED`: why a held operation blocks, or
// not, a requested one. The same text is each cell's tooltip in the HTML
// grid.
#pragma once

#include <string>
#include <vector>

#include "matrix/model.hpp"

namespace pathlock::matrix {

// "the original grid", "shipped decision: WHY", "owner's rule[: WHY]", from
// the rule's "origin" and "decision" in the file, plus "; review: TEXT"
// while the rule is marked for review.
std::string origin_phrase(const Rule& rule);
// The same for the verdict of `rule` at (requested role, relation): that
// verdict's own origin when it states one (resolve_credit).
std::string origin_phrase(const Rule& rule, int requested_role, Relation rel);
std::string credit_phrase(const Credit& credit, const std::string& review);

// Every (held role, requested role) of the cell with its verdict by path
// relation and where that verdict comes from, then the asymmetric pairs of
// the two operations. `asym` is asymmetric_pairs(m).
std::string explain(const Matrix& m, int held_op, int requested_op, const std::vector<Asymmetry>& asym);
std::string explain(const Matrix& m, int held_op, int requested_op);

}  // namespace pathlock::matrix
