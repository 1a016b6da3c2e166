// `pathlock matrix diff OLD NEW`: what a change of the matrix file changes
// for the people using the service, in words.
//
// Cells are matched by name (held op.role, requested op.role), never by
// position, so reordering operations changes nothing here (it changes the
// codes, not the rules). A change is "stricter" when a request that was
// allowed (or unrelated) is now refused, "looser" the other way round, and
// "no effect on locking" between allow and unrelated.
#pragma once

#include <string>
#include <vector>

#include "matrix/model.hpp"

namespace pathlock::matrix {

struct CellChange {
  std::string held;       // "move_file.src"
  std::string requested;  // "create.target"
  std::vector<Relation> relations;
  Verdict before = Verdict::allow;
  Verdict after = Verdict::allow;
};

struct MatrixDiff {
  std::vector<std::string> added_ops, removed_ops;      // operation names
  std::vector<std::string> added_roles, removed_roles;  // "op.role" of operations in both
  std::vector<std::string> constraints;                 // not_inside changes, in words
  std::vector<CellChange> cells;                        // between codes present in both
  bool empty() const {
    return added_ops.empty() && removed_ops.empty() && added_roles.empty() && removed_roles.empty() &&
           constraints.empty() && cells.empty();
  }
};

MatrixDiff diff_matrices(const Matrix& before, const Matrix& after);
// The report `pathlock matrix diff` prints: one line per change.
std::string diff_report(const Matrix& before, const Matrix& after, const MatrixDiff& d);

}  // namespace pathlock::matrix
