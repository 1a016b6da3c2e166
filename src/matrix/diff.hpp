// `pathlock matrix diff OLD NEW`: what a change of the matrix file changes
// for the people using the service, in words.
//
// Cells are matched by name (held op.role, requested op.role), never by
// position, so reordering operations changes nothing here (it changes the
// codes, not the rules). A change is "stricter" when a request that was
// allowed (or unrelated) is now refused, "looser" the other way round, and
// "no effect on locking" between allow and unrelated.
//
// A code (op.role) present on one side only has no "before" or no "after":
// every rule that names it is listed on its own, as an added rule (a new
// operation, or a new role of an existing one: the new code held against
// every code requested, every code held against the new one, and the new
// code against itself) or a removed rule. A reviewer thus sees what a new
// operation blocks without opening the file.
#pragma once

#include <string>
#include <vector>

#include "matrix/model.hpp"

namespace pathlock::matrix {

// A held role against a requested role, over some relations: where a diff
// line applies.
struct CellSpan {
  std::string held;       // "move_file.src"
  std::string requested;  // "create.target"
  std::vector<Relation> relations;
};

struct CellChange : CellSpan {
  Verdict before = Verdict::allow;
  Verdict after = Verdict::allow;
};

// One rule of a code present on one side only: what it says (added) or
// said (removed), over the relations where the verdict is the same.
struct RuleLine : CellSpan {
  Verdict verdict = Verdict::allow;
  Origin origin = Origin::owner;
  std::string review;  // the rule's "review" text: non-empty while it waits for a decision
};

struct MatrixDiff {
  std::vector<std::string> added_ops, removed_ops;      // operation names
  std::vector<std::string> added_roles, removed_roles;  // "op.role" of operations in both
  std::vector<std::string> constraints;                 // not_inside changes, in words
  std::vector<CellChange> cells;                        // between codes present in both
  // Every rule naming a code of `after` only (added_rules, in the order of
  // `after`'s codes: held, then requested, then relation) or of `before`
  // only (removed_rules, in `before`'s order).
  std::vector<RuleLine> added_rules, removed_rules;
  // "H held, R requested" of each changed or added rule that `after` still
  // credits to the original grid (origin "grid", often only the file's
  // default): a rule that was changed or added is the owner's or a decision,
  // never the original grid's. Not a change in itself (empty() ignores it).
  std::vector<std::string> credited_to_grid;
  std::vector<std::pair<std::string, std::string>> credited_codes;  // the same pairs as (held code, requested code)
  bool empty() const {
    return added_ops.empty() && removed_ops.empty() && added_roles.empty() && removed_roles.empty() &&
           constraints.empty() && cells.empty() && added_rules.empty() && removed_rules.empty();
  }
};

MatrixDiff diff_matrices(const Matrix& before, const Matrix& after);
// The report `pathlock matrix diff` prints: one line per change, then a
// summary line. Lines, in this order:
//   added operation: OP / removed operation: OP / added role: OP.ROLE /
//   removed role: OP.ROLE / constraint added|removed: ...
//   changed: H held, R requested, RELATIONS: BEFORE -> AFTER (stricter|looser|no effect on locking)
//   added: H held, R requested, RELATIONS: VERDICT [(review: TEXT)]
//   removed: H held, R requested, RELATIONS: was VERDICT
//   N operation(s) added, N removed; N changed cell line(s): N stricter, N looser; N added rule line(s), N removed rule line(s)
//   warning: H held, R requested: changed or added, but credited to the original grid ...
//   warning: the rules changed but "version" is still V
std::string diff_report(const Matrix& before, const Matrix& after, const MatrixDiff& d);
// The same lines (without newlines), each with the cell it names: a changed,
// added or credited-to-grid line has operation (held op), cell (requested
// op) and role (held role); an added or removed operation its operation.
// Warnings have severity warning.
std::vector<Problem> diff_lines(const Matrix& before, const Matrix& after, const MatrixDiff& d);
// "added: share_link.target held, create.target requested, wherever the
// paths overlap: deny (review: ...)", as diff_report writes it (no newline).
std::string added_rule_text(const RuleLine& r);
// "removed: ...: was deny", as diff_report writes it (no newline).
std::string removed_rule_text(const RuleLine& r);

}  // namespace pathlock::matrix
