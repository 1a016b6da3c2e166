// Renderings of a matrix for product owners: the grid as Markdown
// (docs/matrix-grid.md) and as a standalone HTML page. Both are drawn from
// the one cell model of cells.hpp, so they show the same facts: the labels
// by origin (original grid, shipped decision, owner's rule), the colour,
// the asymmetric and review marks, and (HTML) the explanation per cell.
#pragma once

#include <string>

#include "matrix/model.hpp"

namespace pathlock::matrix {

// Deterministic: the same matrix gives the same bytes.
std::string emit_markdown(const Matrix& m);
std::string emit_html(const Matrix& m);

}  // namespace pathlock::matrix
