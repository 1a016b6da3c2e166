// `pathlock matrix scaffold FILE --op NAME --roles target[,src,dst]`: adds
// an operation to a matrix file in one edit.
//
// The new operation gets its entry in "operations", a full row, and a cell
// in every existing row. Every new rule is written out explicitly, per held
// role, as the safe choice: { "verdict": "deny", "origin": "owner",
// "review": "..." }. The file stays valid, so it builds and lints at once;
// lint warns about each "review" until the owner decides the cell and
// removes the key. Nothing else in the file changes: the new text is
// inserted after the last member of each container, in the file's own
// indentation, and comments of the layout (alignment, line breaks) survive.
//
// Every role is written with its "symbols" (the marks the grid shows, "A"),
// so the new row reads like the others: the request's, or else
// default_symbols().
#pragma once

#include <string>
#include <vector>

#include "matrix/model.hpp"

namespace pathlock::matrix {

// ScaffoldRequest (the op, its roles, label, example and symbols per role;
// none: default_symbols()) is declared in pathlock/matrix.hpp.

// The symbols scaffold writes for a new role named `role` when the request
// gives none: those of the first operation of `m` with a role of that name
// (in the shipped matrix target -> A, src -> A, dst -> B), else the name's
// first letter upper-cased ("owner" -> O).
std::vector<std::string> default_symbols(const Matrix& m, const std::string& role);

// Returns the text of `json_text` with the operation added. Throws
// MatrixError if the file is not valid, the operation exists, a name is not
// an identifier, a limit would be passed, or `symbols` is given with a
// count other than one entry per role, an entry without symbols, or a
// symbol the parser refuses (symbol_problem()). The result always parses.
// (Declared in pathlock/matrix.hpp.)
std::string scaffold(const std::string& json_text, const std::string& source, const ScaffoldRequest& request);

}  // namespace pathlock::matrix
