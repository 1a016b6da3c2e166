// The matrix as the generator and the CLI see it: parsed from JSON,
// validated, and resolved into one verdict per (held code, requested code,
// relation). Engines never use this; they use the compiled MatrixTable.
//
// Format: matrix/README.md. Private to pathlock's tools.
#pragma once

#include <pathlock/matrix.hpp>
#include <pathlock/matrix_table.hpp>

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace pathlock::matrix {

enum class Verdict { allow, deny, unrelated };

// Where a rule comes from, as the matrix file states it ("origin"):
//   grid      the article's original grid (docs/matrix.md),
//   decision  a shipped decision where the grid is silent (says why),
//   owner     the matrix owner's own rule.
enum class Origin { grid, decision, owner };
std::string_view origin_name(Origin o);

std::string_view verdict_name(Verdict v);
std::string_view verdict_mark(Verdict v);  // √ × /

// A role's symbols are the short marks the grid writes for it ("A", "a").
// Each is 1..kMaxSymbolChars characters (Unicode code points) of UTF-8.
inline constexpr std::size_t kMaxSymbolChars = 8;
// Why `symbol` cannot be a symbol ("is empty", ...), or "" when it can. The
// parser and `scaffold` check symbols with this one function.
std::string symbol_problem(std::string_view symbol);

struct RoleDef {
  std::string name;
  std::vector<std::string> symbols;  // letters used by the grid, e.g. "A"
  std::string about;                 // what the path names, for the docs (optional)
};

struct OpDef {
  std::string name;
  std::string label;
  std::string example;
  std::vector<RoleDef> roles;
  std::vector<std::pair<int, int>> not_inside;  // (inner role, outer role)
};

// Where a verdict comes from, and why.
struct Credit {
  Origin origin = Origin::owner;
  std::string decision;
};

// The rule for one held role in one cell.
struct Rule {
  std::optional<Verdict> verdict;
  // A sub-rule (requested_role) shares its rule's origin and decision unless
  // it states its own (own_credit); so does a relation's verdict unless it
  // is written as {verdict, origin, decision} (relation_credit).
  Origin origin = Origin::owner;
  std::string decision;  // why (required for Origin::decision)
  bool own_credit = false;
  std::string review;    // non-empty: written for review (scaffold); lint warns until removed
  std::map<int, Rule> by_requested_role;  // requested role index -> rule
  std::map<Relation, Verdict> by_relation;
  std::map<Relation, Credit> relation_credit;  // relations whose verdict states its own origin
  bool refined() const { return !by_requested_role.empty() || !by_relation.empty(); }
};

// The verdict `rule` gives a request of role `requested_role` (index into the
// requested operation's roles) for relation `rel`, or nullopt if the rule
// does not say (validation refuses such rules).
std::optional<Verdict> resolve_rule(const Rule& rule, int requested_role, Relation rel);
// Where that verdict comes from: the relation's own credit, else the
// sub-rule's, else the rule's.
Credit resolve_credit(const Rule& rule, int requested_role, Relation rel);

struct Cell {
  bool bare = false;              // one verdict for all held roles
  std::vector<Rule> held_roles;   // one rule per held role (also when bare)
};

struct Code {
  int op = 0;
  int role = 0;
};

struct Matrix {
  std::string source;  // file name, for messages
  std::string name;
  std::string version;
  std::string description;
  Origin default_origin = Origin::owner;  // "origin" at the top of the file
  std::vector<OpDef> ops;
  std::vector<std::vector<Cell>> grid;  // [held op][requested op]
  std::vector<Code> codes;              // code -> (op, role)

  int op_index(std::string_view name) const;
  int code_of(int op, int role) const;
  std::string code_name(int code) const;  // "move_file.src"

  // The verdict for a request of code `requested` against a lock holding
  // code `held`, when the held path relates to the requested one as `rel`.
  Verdict verdict(int held, int requested, Relation rel) const;
  // The rule that decided it (for explain and rendering).
  const Rule& rule(int held, int requested) const;
  // Hex digest of the rules: operations, roles, constraints, deny verdicts.
  std::string fingerprint() const;
};

// Parses and validates matrix JSON. `source` names the file in messages.
// Throws MatrixError holding every problem of the file: one run of
// `pathlock matrix lint` lists them all (a broken operation does not also
// report the cells that name it).
Matrix parse_matrix(const std::string& json_text, const std::string& source);
// Reads and parses a file. Throws MatrixError.
Matrix load_matrix(const std::string& path);
// A file's bytes (a matrix, or a document the tools rewrite). Throws
// MatrixError "PATH: cannot open".
std::string read_text_file(const std::string& path);

// An asymmetric pair: whether the request is refused changes when the two
// codes swap places (held <-> requested), for the listed relations (seen
// from the first code held).
struct Asymmetry {
  int first = 0;   // code held first
  int second = 0;  // code requested second
  std::vector<Relation> relations;
  Verdict forward = Verdict::allow;   // first held, second requested
  Verdict backward = Verdict::allow;  // second held, first requested
};
std::vector<Asymmetry> asymmetric_pairs(const Matrix& m);

Relation mirror(Relation rel);

// Something valid but not finished, e.g. a rule still marked "review".
// Lines read "FILE: operation 'X', cell 'Y', role 'r': review: TEXT".
std::vector<std::string> warnings(const Matrix& m);
// The same, located (severity warning).
std::vector<Problem> warning_problems(const Matrix& m);

}  // namespace pathlock::matrix
