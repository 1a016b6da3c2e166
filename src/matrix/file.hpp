// MatrixFile (pathlock/matrix.hpp) over the private model: what it holds.
#pragma once

#include <pathlock/matrix.hpp>

#include <memory>

#include "matrix/table.hpp"

namespace pathlock::matrix {

struct MatrixFile::Impl {
  std::unique_ptr<CompiledMatrix> compiled;
  const Matrix& model() const { return compiled->model(); }
};

// The model behind a MatrixFile (for code inside src/ only).
inline const Matrix& model_of(const MatrixFile& f) { return f.impl().model(); }

}  // namespace pathlock::matrix
