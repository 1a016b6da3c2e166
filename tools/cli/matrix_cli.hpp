// `pathlock matrix ...`: the subcommands for product owners editing a matrix
// (docs/cli.md), and `--matrix FILE` of `pathlock shell` and `pathlock demo`.
//
// Adding a subcommand: a function below taking the parsed arguments, a line
// in kMatrixUsage, its section in docs/cli.md, and a process test in
// tests/matrix_cli_test.cpp.
#pragma once

#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include <pathlock/matrix.hpp>

namespace pathlock::cli {

// The usage lines of the matrix subcommands (for `pathlock --help`).
extern const char* const kMatrixUsage;

// Runs `pathlock matrix ARGS...` (args[0] is the subcommand). FILE arguments
// default to `default_file`. Writes results to `out` and problems, one
// "error: " line each, to `err`. Returns the exit status: 0 done, 1 a
// problem (an invalid file, a version not bumped, bad input), 2 bad usage.
int run_matrix_command(const std::vector<std::string>& args, const std::string& default_file, std::ostream& out,
                       std::ostream& err);

// Compiles FILE at run time for `--matrix FILE` (same validation as the
// build). The returned object owns the table's strings: keep it alive while
// an engine uses `table()`. Throws matrix::MatrixError with every problem.
std::unique_ptr<matrix::MatrixFile> load_matrix_option(const std::string& file);
// The same for a file's text already read; `name` names it in problems.
std::unique_ptr<matrix::MatrixFile> parse_matrix_option(const std::string& text, const std::string& name);

}  // namespace pathlock::cli
