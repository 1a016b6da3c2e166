// Small text helpers shared by the emitters: escaping for C++ and HTML, and
// the words used for relations, rules and asymmetric pairs. Every emitter
// that names a relation or spells a rule goes through here, so the grid,
// explain, lint and diff use the same words.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "matrix/model.hpp"

namespace pathlock::matrix {

// A C++ string literal (with quotes) holding exactly `s`.
std::string cxx_string(std::string_view s);
// `s` with & < > " escaped, for HTML text and attribute values.
std::string html_escape(std::string_view s);

// "on the same path", "requested inside the held path", ...
std::string relation_phrase(Relation rel);
// The phrases joined by ", "; all three: "wherever the paths overlap".
std::string relations_phrase(const std::vector<Relation>& rels);

// The short word a cell label uses for a relation of the held path to the
// requested one: "same", "inside" (held_ancestor: the request is inside the
// held path), "above" (held_descendant: the request is on an ancestor of it).
std::string_view relation_word(Relation rel);
// The word for "every case not named before it" in a cell label.
inline constexpr std::string_view kElseWord = "else";

// How the grid spells one held role's rule in a cell: "A×", or with
// refinements, in parentheses after the symbol, by the request's role and
// then by relation, ending with the rule's own verdict:
//   a(×src √dst)          by the request's role
//   A(√inside ×else)      by how the paths relate
//   T(dst(×same √else) ×else)  a request role's rule refined by relation
// A bare cell passes a role with symbol "".
std::string rule_label(const Matrix& m, const RoleDef& held_role, const Rule& rule, int requested_op);

// The grid as a Markdown table: a row per held operation (its name and
// example), a column per requested one, each cell spelled by cell(h, r).
std::string markdown_grid(const Matrix& m, const std::function<std::string(std::size_t h, std::size_t r)>& cell);

// "A.r held, B.s requested: deny; the other way round: allow (relations)".
std::string asymmetry_text(const Matrix& m, const Asymmetry& a);

}  // namespace pathlock::matrix
