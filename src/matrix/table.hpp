// From a validated Matrix to the MatrixTable engines read, at build time and
// at run time, by one function.
//
// build_table() is the only place that decides what goes into a table: the
// generator prints the table it returns as C++ (emit_cpp.cpp), and
// compile_matrix() keeps it in memory with the strings it points to. So a
// table compiled at run time equals the build-time table of the same JSON
// field for field (tests/matrix_runtime_test.cpp), apart from `scripts`,
// which only the generator fills.
//
// Thread safety: a CompiledMatrix is immutable after construction; share it
// freely, and keep it alive as long as any engine uses its table.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <string>

#include "matrix/model.hpp"

namespace pathlock::matrix {

// Builds the table of `m`. Every string_view in the result comes from
// `keep(text)`, which must return a view that outlives the table.
MatrixTable build_table(const Matrix& m, const std::function<std::string_view(const std::string&)>& keep);

// A MatrixTable compiled at run time, owning the strings its views point to.
class CompiledMatrix {
 public:
  explicit CompiledMatrix(Matrix model);
  CompiledMatrix(const CompiledMatrix&) = delete;
  CompiledMatrix& operator=(const CompiledMatrix&) = delete;

  const MatrixTable& table() const { return table_; }
  const Matrix& model() const { return model_; }

 private:
  Matrix model_;
  std::deque<std::string> strings_;  // a deque never moves its elements
  MatrixTable table_;
};

// Compiles matrix JSON text with the same parser and validation as
// pathlock-matrixc. `source` names it in messages. Throws MatrixError with
// every problem of the text.
std::unique_ptr<CompiledMatrix> compile_matrix(const std::string& json_text, const std::string& source);
// Reads and compiles a file. Throws MatrixError (also when it cannot be read).
std::unique_ptr<CompiledMatrix> compile_matrix_file(const std::string& path);

}  // namespace pathlock::matrix
