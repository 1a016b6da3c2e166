// Generated sections of docs/matrix.md (see product_doc.hpp).
#include "matrix/product_doc.hpp"

#include <fmt/format.h>

#include "matrix/cells.hpp"
#include "matrix/text.hpp"

namespace pathlock::matrix {
namespace {

std::string symbols_of(const RoleDef& r) {
  std::string out;
  for (const auto& s : r.symbols) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::string identity(const Matrix& m) {
  return fmt::format("Matrix `{}`, version {}, fingerprint `{}`: {} operations, {} (operation, role) codes.\n", m.name,
                     m.version, m.fingerprint(), m.ops.size(), m.codes.size());
}

std::string operations(const Matrix& m) {
  std::string out = "| op name (API) | original label | example | targets (roles) |\n|---|---|---|---|\n";
  for (const OpDef& op : m.ops) {
    std::string roles;
    for (const RoleDef& r : op.roles)
      roles += fmt::format("{}`{}`: {}({})", roles.empty() ? "" : "; ", r.name, r.about.empty() ? "" : r.about + " ",
                           symbols_of(r));
    for (const auto& [inner, outer] : op.not_inside)
      roles += fmt::format("; `{}` may not be `{}` or inside it", op.roles[static_cast<std::size_t>(inner)].name,
                           op.roles[static_cast<std::size_t>(outer)].name);
    out += fmt::format("| `{}` | {} | `{}` | {} |\n", op.name, op.label, op.example, roles);
  }
  return out;
}

std::string original_grid(const Matrix& m) {
  return markdown_grid(m, [&](std::size_t h, std::size_t r) {
    const std::string label = original_label(m, static_cast<int>(h), static_cast<int>(r));
    return label.empty() ? std::string("(silent)") : label;
  });
}

std::string decisions(const Matrix& m) {
  std::string out = "| held op, silent target | requested op | decision | why |\n|---|---|---|---|\n";
  for (std::size_t h = 0; h < m.ops.size(); ++h)
    for (std::size_t r = 0; r < m.ops.size(); ++r) {
      const Cell& cell = m.grid[h][r];
      for (std::size_t hr = 0; hr < cell.held_roles.size(); ++hr) {
        const Rule& rule = cell.held_roles[hr];
        if (rule.origin != Origin::decision) continue;
        const RoleDef& role = cell.bare ? RoleDef{"", {""}, ""} : m.ops[h].roles[hr];
        out += fmt::format("| {} `{}` | {} | {} | {} |\n", m.ops[h].name, cell.bare ? "all" : symbols_of(role),
                           m.ops[r].name, rule_label(m, role, rule, static_cast<int>(r)), rule.decision);
        if (cell.bare) break;
      }
    }
  return out;
}

std::string asymmetric(const Matrix& m) {
  std::string out;
  for (const Asymmetry& a : asymmetric_pairs(m)) out += "- " + asymmetry_text(m, a) + "\n";
  return out.empty() ? "(none)\n" : out;
}

std::string section(const Matrix& m, const std::string& name) {
  if (name == "identity") return identity(m);
  if (name == "operations") return operations(m);
  if (name == "grid") return original_grid(m);
  if (name == "decisions") return decisions(m);
  if (name == "asymmetric") return asymmetric(m);
  throw MatrixError(
      fmt::format("unknown generated section '{}' (identity, operations, grid, decisions, asymmetric)", name));
}

}  // namespace

std::string update_doc(const Matrix& m, const std::string& doc) {
  constexpr std::string_view kOpen = "<!-- matrix:", kClose = "<!-- /matrix:";
  std::string out;
  std::size_t pos = 0;
  while (true) {
    const std::size_t begin = doc.find(kOpen, pos);
    if (begin == std::string::npos) break;
    const std::size_t name_at = begin + kOpen.size();
    const std::size_t name_end = doc.find(" -->", name_at);
    if (name_end == std::string::npos) throw MatrixError("unterminated marker '<!-- matrix:'");
    const std::string name = doc.substr(name_at, name_end - name_at);
    const std::string close = std::string(kClose) + name + " -->";
    const std::size_t end = doc.find(close, name_end);
    if (end == std::string::npos) throw MatrixError(fmt::format("section '{}' has no line '{}'", name, close));
    out += doc.substr(pos, name_end + 4 - pos) + "\n" + section(m, name);
    out += close;
    pos = end + close.size();
  }
  return out + doc.substr(pos);
}

}  // namespace pathlock::matrix
