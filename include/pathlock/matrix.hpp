// pathlock/matrix.hpp: everything a program needs to work with a matrix file
// (matrix/README.md): load and check it, list its problems as structured
// values, compile it into the MatrixTable engines read, and write what the
// tools write from it (the C++ table, the Redis Functions library, the test
// cases, the Markdown and HTML grids, the product doc, lint, explain and
// diff reports, scaffolded operations). pathlock-matrixc, `pathlock
// matrix ...`, the console's matrix editor, the stress tool and the Python
// binding use only this header for matrix work.
//
// A MatrixFile is a parsed, validated matrix with its compiled table; it is
// immutable and cheap to copy (copies share one compiled matrix), so any
// number of threads may read it. Every function is deterministic: the same
// file gives the same bytes.
//
// Linking: the functions live in libpathlock_matrix.a (CMake target
// pathlock::matrix; pkg-config's Libs list it), built from src/matrix; it
// needs no other pathlock library.
#pragma once

#include <pathlock/matrix_table.hpp>

#include <array>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace pathlock::matrix {

// ---- problems ---------------------------------------------------------------

enum class Severity { error, warning };
std::string_view severity_name(Severity s);  // "error", "warning"

// One problem of a matrix file, where it was found. `text` is the whole line
// the tools print ("FILE: operation 'X', cell 'Y', role 'r': what is wrong");
// the other fields locate it without reading the text.
struct Problem {
  std::string operation;  // the operation entry or grid row (held operation); "" for the file as a whole
  std::string cell;       // the requested operation of the cell (grid column); "" unless in a cell
  std::string role;       // the role: of the held operation in a cell, else of the operation; "" if none
  Severity severity = Severity::error;
  std::string text;
};

// A matrix file that cannot be compiled (or a file that cannot be read or
// written). what() is the problems' texts joined by newlines.
class MatrixError : public std::runtime_error {
 public:
  explicit MatrixError(const std::string& problem);                // a problem of the file as a whole
  explicit MatrixError(std::vector<std::string> problems);         // idem, several
  explicit MatrixError(std::vector<Problem> problems);
  // Every problem found, in file order; never empty.
  const std::vector<std::string>& problems() const { return texts_; }
  const std::vector<Problem>& details() const { return details_; }

 private:
  std::vector<std::string> texts_;
  std::vector<Problem> details_;
};

// ---- the grid as people read it ---------------------------------------------

struct RoleView {
  std::string name;
  std::vector<std::string> symbols;  // the marks the grid writes for it ("A")
};
struct OpView {
  std::string name, label, example;
  std::vector<RoleView> roles;
};

// One piece of a cell's text, as every rendering spells it: its kind is
// "grid", "decision", "owner", "review" or "asymmetric" (the legend says
// what each means).
struct PieceView {
  std::string kind, text;
};
struct LegendLine {
  PieceView sample;
  std::string meaning;
};

// Where one verdict comes from: "grid", "decision" or "owner", and why.
struct CreditView {
  std::string origin, decision;
};

// One cell: held operation (row) x requested operation (column).
struct CellSummary {
  std::string tone;  // "allow", "deny", "unrelated" or "mixed"
  bool asymmetric = false;
  bool review = false;
  std::string explain;           // `pathlock matrix explain` text
  std::vector<PieceView> pieces;  // the notation, e.g. {A(src(√above ×else) ×else)}
  // The cell in words for a product owner: one sentence per line, e.g. "a
  // held move_file (src) blocks a requested upload at the same path and
  // below; allows it above".
  std::vector<std::string> words;
  // [held role][requested role][relation]: "allow", "deny", "unrelated",
  // and where each comes from.
  std::vector<std::vector<std::array<std::string, kRelationCount>>> verdicts;
  std::vector<std::vector<std::array<CreditView, kRelationCount>>> credits;
};

// ---- a matrix file ------------------------------------------------------------

struct ScaffoldRequest;

class MatrixFile {
 public:
  // Parses and validates matrix JSON; `source` names it in problems. Throws
  // MatrixError holding every problem of the text.
  static MatrixFile parse(const std::string& json_text, const std::string& source);
  // Reads and parses a file. Throws MatrixError (also when it cannot be read).
  static MatrixFile load(const std::string& path);

  const std::string& name() const;
  const std::string& version() const;
  const std::string& source() const;
  std::string fingerprint() const;
  // The compiled table; valid as long as any copy of this MatrixFile lives.
  const MatrixTable& table() const;
  std::shared_ptr<const MatrixTable> shared_table() const;  // keeps the file alive with it

  int op_index(std::string_view op) const;  // -1 if none
  std::vector<OpView> ops() const;
  CellSummary cell(int held_op, int requested_op) const;

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  explicit MatrixFile(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

// A file's bytes. Throws MatrixError "PATH: cannot open".
std::string read_text_file(const std::string& path);

// Rules still marked "review" (severity warning), located.
std::vector<Problem> warnings(const MatrixFile& m);
// `pathlock matrix lint`: summary, warnings and asymmetric pairs.
std::string lint_report(const MatrixFile& m);
// A problem when the rules of `now` differ from `old`'s while "version" stayed.
std::optional<std::string> version_problem(const MatrixFile& old, const MatrixFile& now);
// `pathlock matrix explain`: why a held operation blocks a requested one.
std::string explain(const MatrixFile& m, int held_op, int requested_op);
// "the original grid", "shipped decision: WHY", "owner's rule[: WHY]" for
// the verdict of held code `held` against requested code `requested` at `rel`.
std::string origin_phrase(const MatrixFile& m, int held_code, int requested_code, Relation rel);
// "on the same path", "requested inside the held path", ...
std::string relation_phrase(Relation rel);

// One line of `pathlock matrix diff OLD NEW`, with the cell it names
// (operation: held, cell: requested; empty for lines about no one cell).
std::vector<Problem> diff_lines(const MatrixFile& before, const MatrixFile& after);
std::string diff_report(const MatrixFile& before, const MatrixFile& after);

// What pathlock-matrixc writes.
std::string emit_header(const MatrixFile& m, const std::string& cxx_namespace);
std::string emit_cases(const MatrixFile& m);
std::string emit_cases_json(const MatrixFile& m);
// conversion_cases.inc (added in 1.1): the conversion scenarios derived from the matrix.
std::string emit_conversion_cases(const MatrixFile& m);
std::string emit_markdown(const MatrixFile& m);
std::string emit_html(const MatrixFile& m);
// The Redis Functions library of a table (docs/lua-protocol.md).
std::string lua_library(const MatrixTable& table);
// `doc` with its generated sections (docs/matrix.md) rewritten.
std::string update_doc(const MatrixFile& m, const std::string& doc);
// The legend of the cell notation.
std::vector<LegendLine> legend_lines();

// `pathlock matrix scaffold`: adds an operation to the text of a valid file.
struct ScaffoldRequest {
  std::string op;
  std::vector<std::string> roles;
  std::string label;
  std::string example;
  std::vector<std::vector<std::string>> symbols = {};  // one entry per role, or empty for the defaults
};
std::string scaffold(const std::string& json_text, const std::string& source, const ScaffoldRequest& request);

// `json_text` with the value at `path` (object keys from the top, e.g.
// {"grid", "move_file", "upload"}) replaced by `value_json`, written on one
// line ({ "src": "deny", "dst": "allow" }); every other byte of the text is
// kept, so the diff of a one-cell edit is that cell's line(s). Throws
// MatrixError (naming `source`) if the text is not a JSON object, the path
// does not exist, or `value_json` is not JSON. The result is not validated
// as a matrix: check it with MatrixFile::parse.
std::string replace_value(const std::string& json_text, const std::vector<std::string>& path,
                          const std::string& value_json, const std::string& source);

}  // namespace pathlock::matrix
