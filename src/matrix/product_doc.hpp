// The generated parts of the product definition, docs/matrix.md.
//
// The doc is prose written by people, with sections generated from the
// matrix between marker lines:
//   <!-- matrix:NAME -->
//   ... generated, replaced on every update ...
//   <!-- /matrix:NAME -->
// NAME is one of: identity, operations, grid (the original grid, with the
// original labels only), decisions (the shipped decisions and why),
// asymmetric. `pathlock matrix render FILE --update docs/matrix.md` rewrites
// them; tests/render_test.cpp fails while the committed doc differs from
// what update_doc() makes of it, so the prose around always describes the
// JSON as it is.
#pragma once

#include <string>

#include "matrix/model.hpp"

namespace pathlock::matrix {

// `doc` with every generated section replaced by its current text. Throws
// MatrixError for an unknown section name or a section without its end line.
std::string update_doc(const Matrix& m, const std::string& doc);

}  // namespace pathlock::matrix
