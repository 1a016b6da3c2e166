// Renderings of a matrix for product owners: the grid as Markdown
// (docs/matrix-grid.md) and as a standalone HTML page. Both are drawn from
// the one cell model of cells.hpp, so they show the same facts: the labels
// by origin (original grid, shipped decision, owner's rule), the colour,
// the asymmetric and review marks, and (HTML) the explanation per cell.
//
// The HTML page is self-contained (no script, no outside asset): each cell
// links to its numbered explanation below the grid and back, so the
// explanations work by click or tap and appear on a printout; the cell's
// tooltip holds the same text.
#pragma once

#include <string>
#include <string_view>

#include "matrix/model.hpp"

namespace pathlock::matrix {

// The CSS font-family for text that shows matrix labels (the shipped
// matrix's are Chinese): a CJK font first, then fallbacks. Debian ships it as
// fonts-noto-cjk, which the pathlock package recommends; without any CJK
// font the labels render as empty boxes. Other pages showing labels (the
// console) can use the same stack.
inline constexpr std::string_view kMatrixFontFamily =
    R"("Noto Sans CJK SC", "Source Han Sans SC", "PingFang SC", "Microsoft YaHei", sans-serif)";

// Deterministic: the same matrix gives the same bytes.
std::string emit_markdown(const Matrix& m);
std::string emit_html(const Matrix& m);

}  // namespace pathlock::matrix
