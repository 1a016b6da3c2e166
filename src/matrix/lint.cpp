// The lint report and the version check (see lint.hpp).
#include "matrix/lint.hpp"

#include <fmt/format.h>

#include "matrix/diff.hpp"
#include "matrix/emit_cpp.hpp"
#include "matrix/text.hpp"

namespace pathlock::matrix {

std::string lint_report(const Matrix& m) {
  std::size_t decisions = 0, owner = 0, refined = 0;
  for (const auto& row : m.grid)
    for (const Cell& cell : row)
      for (const Rule& rule : cell.held_roles) {
        decisions += rule.origin == Origin::decision;
        owner += rule.origin == Origin::owner;
        refined += rule.refined();
      }
  const auto asym = asymmetric_pairs(m);
  auto warn = warnings(m);
  for (const std::string& p : cxx_name_problems(m)) warn.push_back("pathlock-matrixc refuses it: " + p);
  std::string out = fmt::format(
      "{}: matrix '{}' version {} is valid\n  {} operations, {} (operation, role) codes, {} cells\n"
      "  {} shipped decisions, {} owner's rules, {} refined rules\n  fingerprint {}\n",
      m.source, m.name, m.version, m.ops.size(), m.codes.size(), m.ops.size() * m.ops.size(), decisions, owner, refined,
      m.fingerprint());
  out += fmt::format("  {} warning(s){}\n", warn.size(), warn.empty() ? "" : ":");
  for (const std::string& w : warn) out += "    warning: " + w + "\n";
  out += fmt::format("  {} asymmetric pairs:\n", asym.size());
  for (const Asymmetry& a : asym) out += "    " + asymmetry_text(m, a) + "\n";
  return out;
}

std::optional<std::string> version_problem(const Matrix& old, const Matrix& now) {
  if (old.fingerprint() == now.fingerprint() || old.version != now.version) return std::nullopt;
  const MatrixDiff d = diff_matrices(old, now);
  return fmt::format(
      "{}: the rules changed since {} (fingerprint {} -> {}; {} operation(s) added, {} removed, {} changed cell "
      "line(s), {} added rule line(s), {} removed rule line(s)) but \"version\" is still \"{}\": bump \"version\" "
      "(see `pathlock matrix diff {} {}`)",
      now.source, old.source, old.fingerprint(), now.fingerprint(), d.added_ops.size(), d.removed_ops.size(),
      d.cells.size(), d.added_rules.size(), d.removed_rules.size(), now.version, old.source, now.source);
}

}  // namespace pathlock::matrix
