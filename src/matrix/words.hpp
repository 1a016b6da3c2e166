// A cell of the grid in words a product owner reads without the legend:
// "a held move_file (src) blocks a requested upload at the same path and
// below; allows it above". Built from the cell's verdicts (held role x
// requested role x relation), not from its notation: one sentence when every
// role pair reads the same, else one per (held role, requested role), roles
// named only for operations with more than one. Shown beside the notation by
// the console's editor (and in /api/matrix/check's "words").
#pragma once

#include <string>
#include <vector>

#include "matrix/model.hpp"

namespace pathlock::matrix {

std::vector<std::string> cell_words(const Matrix& m, int held_op, int requested_op);

}  // namespace pathlock::matrix
