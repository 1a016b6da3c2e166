// Everything pathlock-matrixc and the CLI produce from a Matrix, one header
// per output (each emitter in its own file, with its design note on top):
//   emit_cpp.hpp     the C++ table header       (table.hpp: the table itself)
//   emit_cases.hpp   the matrix-derived test scenarios
//   cells.hpp        the one cell model of the renderings
//   render.hpp       Markdown and HTML grids
//   product_doc.hpp  the generated sections of docs/matrix.md
//   explain.hpp      `pathlock matrix explain`
//   lint.hpp         `pathlock matrix lint`
//   diff.hpp         `pathlock matrix diff`
//   scaffold.hpp     `pathlock matrix scaffold`
// Each function is deterministic: the same matrix gives the same bytes.
#pragma once

#include "matrix/cells.hpp"
#include "matrix/diff.hpp"
#include "matrix/emit_cases.hpp"
#include "matrix/emit_cpp.hpp"
#include "matrix/explain.hpp"
#include "matrix/lint.hpp"
#include "matrix/model.hpp"
#include "matrix/product_doc.hpp"
#include "matrix/render.hpp"
#include "matrix/scaffold.hpp"
#include "matrix/table.hpp"
