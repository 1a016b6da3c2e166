// Adding an operation to a matrix file by text insertion (see scaffold.hpp).
//
// A small scanner walks the JSON text (already known to be valid, since it
// was parsed first) and records, for the top-level object, the "grid"
// object and each grid row, where the last member's value ends. New members
// are inserted right there (", NEW"), from the end of the text backwards so
// earlier positions stay valid. The result is parsed again before it is
// returned: scaffold never writes an invalid file.
#include "matrix/scaffold.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "matrix/json_text.hpp"
#include "matrix/model.hpp"

namespace pathlock::matrix {
namespace {

bool is_identifier(const std::string& s) {
  if (s.empty() || s.size() > 64 || s[0] < 'a' || s[0] > 'z') return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; });
}

std::string json_quote(const std::string& s) {
  return nlohmann::json(s).dump();
}

std::string review_rule(const std::string& text) {
  return fmt::format(R"({{ "verdict": "deny", "origin": "owner", "review": {} }})", json_quote(text));
}

// One cell: a review rule for each held role.
std::string new_cell(const std::vector<std::string>& held_roles, const std::string& held,
                     const std::string& requested) {
  std::string out = "{ ";
  for (std::size_t i = 0; i < held_roles.size(); ++i)
    out +=
        fmt::format("{}{}: {}", i ? ", " : "", json_quote(held_roles[i]),
                    review_rule(fmt::format("new: decide {}.{} held, {} requested", held, held_roles[i], requested)));
  return out + " }";
}

// The symbols of each role: the request's, checked like the parser checks them, or the defaults.
std::vector<std::vector<std::string>> symbols_for(const Matrix& m, const ScaffoldRequest& req,
                                                  const std::string& where) {
  if (req.symbols.empty()) {
    std::vector<std::vector<std::string>> out;
    for (const std::string& role : req.roles) out.push_back(default_symbols(m, role));
    return out;
  }
  if (req.symbols.size() != req.roles.size())
    throw MatrixError(fmt::format("{}: symbols given for {} role(s), but the operation has {} (one entry per role, in "
                                  "role order, e.g. --symbols A,B)",
                                  where, req.symbols.size(), req.roles.size()));
  for (std::size_t i = 0; i < req.roles.size(); ++i) {
    if (req.symbols[i].empty())
      throw MatrixError(fmt::format("{}: role '{}': no symbol given", where, req.roles[i]));
    for (const std::string& sym : req.symbols[i])
      if (const std::string problem = symbol_problem(sym); !problem.empty())
        throw MatrixError(
            fmt::format("{}: role '{}': symbol {} {}", where, req.roles[i], sym.empty() ? "\"\"" : "'" + sym + "'", problem));
  }
  return req.symbols;
}

// Why the request cannot add an operation to `m` (throws), else nothing.
void check_request(const Matrix& m, const ScaffoldRequest& req, const std::string& where) {
  if (!is_identifier(req.op)) throw MatrixError(where + ": operation names are [a-z][a-z0-9_]*, at most 64 bytes");
  if (m.op_index(req.op) >= 0) throw MatrixError(where + ": the operation exists already");
  if (req.roles.empty()) throw MatrixError(where + ": give at least one role (--roles target or --roles src,dst)");
  if (req.roles.size() > kMaxRolesPerOp) throw MatrixError(fmt::format("{}: at most {} roles", where, kMaxRolesPerOp));
  for (std::size_t i = 0; i < req.roles.size(); ++i) {
    if (!is_identifier(req.roles[i]))
      throw MatrixError(fmt::format("{}: role '{}' is not [a-z][a-z0-9_]*", where, req.roles[i]));
    if (std::find(req.roles.begin(), req.roles.begin() + static_cast<long>(i), req.roles[i]) !=
        req.roles.begin() + static_cast<long>(i))
      throw MatrixError(fmt::format("{}: role '{}' given twice", where, req.roles[i]));
  }
}

struct Insert {
  std::size_t at;
  std::string text;
};

// The new entry of "operations", after the last one, in its indentation.
Insert operation_entry(const std::string& json_text, const JsonScanner& scan, const Member& ops,
                       const ScaffoldRequest& req, const std::vector<std::vector<std::string>>& symbols) {
  std::string roles;
  for (std::size_t i = 0; i < req.roles.size(); ++i) {
    std::string syms;
    for (const std::string& sym : symbols[i]) syms += (syms.empty() ? "" : ", ") + json_quote(sym);
    roles += fmt::format("{}{{ \"role\": {}, \"symbols\": [{}] }}", roles.empty() ? "" : ", ",
                         json_quote(req.roles[i]), syms);
  }
  std::string entry = fmt::format("{{ \"op\": {}", json_quote(req.op));
  if (!req.label.empty()) entry += ", \"label\": " + json_quote(req.label);
  if (!req.example.empty()) entry += ", \"example\": " + json_quote(req.example);
  entry += fmt::format(", \"roles\": [ {} ] }}", roles);
  const std::size_t close = ops.value_end - 1;  // ']'
  std::size_t last = close;
  while (last > ops.value_begin && (json_text[last - 1] == ' ' || json_text[last - 1] == '\n' ||
                                    json_text[last - 1] == '\r' || json_text[last - 1] == '\t'))
    --last;
  // `last` is one past the last entry's '}' (the array is not empty: the file is valid).
  const std::size_t entry_line = json_text.rfind('\n', last - 1);
  return {last, ",\n" + scan.indent_of(entry_line == std::string::npos ? 0 : entry_line + 1) + entry};
}

// A cell in every existing row, then the new row after the last row.
std::vector<Insert> grid_inserts(const Matrix& m, const JsonScanner& scan, const Member& grid, const ScaffoldRequest& req) {
  std::vector<Insert> inserts;
  const std::vector<Member> rows = scan.members(grid.value_begin);
  std::vector<std::string> names;
  for (const OpDef& op : m.ops) names.push_back(op.name);
  for (const Member& row : rows) {
    const int h = m.op_index(row.key);
    if (h < 0) continue;
    std::vector<std::string> held_roles;
    for (const RoleDef& r : m.ops[static_cast<std::size_t>(h)].roles) held_roles.push_back(r.name);
    const Member& last = scan.members(row.value_begin).back();
    inserts.push_back({last.value_end, ",\n" + scan.indent_of(last.key_at) + json_quote(req.op) + ": " +
                                           new_cell(held_roles, row.key, req.op)});
  }
  const Member& last_row = rows.back();
  const std::string row_indent = scan.indent_of(last_row.key_at), cell_indent = row_indent + "  ";
  std::string row = json_quote(req.op) + ": {";
  names.push_back(req.op);
  for (std::size_t i = 0; i < names.size(); ++i)
    row += fmt::format("{}\n{}{}: {}", i ? "," : "", cell_indent, json_quote(names[i]),
                       new_cell(req.roles, req.op, names[i]));
  row += "\n" + row_indent + "}";
  inserts.push_back({last_row.value_end, ",\n" + row_indent + row});
  return inserts;
}

const Member& member_named(const std::vector<Member>& ms, const std::string& key, const std::string& where) {
  for (const Member& mb : ms)
    if (mb.key == key) return mb;
  throw MatrixError(fmt::format("{}: no \"{}\"", where, key));
}

}  // namespace

std::vector<std::string> default_symbols(const Matrix& m, const std::string& role) {
  for (const OpDef& op : m.ops)
    for (const RoleDef& r : op.roles)
      if (r.name == role) return r.symbols;
  if (role.empty()) return {};
  return {std::string(1, static_cast<char>(role[0] >= 'a' && role[0] <= 'z' ? role[0] - 'a' + 'A' : role[0]))};
}

std::string scaffold(const std::string& json_text, const std::string& source, const ScaffoldRequest& req) {
  const Matrix m = parse_matrix(json_text, source);  // throws every problem of an invalid file
  const std::string where = fmt::format("{}: scaffold '{}'", source, req.op);
  check_request(m, req, where);
  const std::vector<std::vector<std::string>> symbols = symbols_for(m, req, where);
  const JsonScanner scan(json_text);
  const std::vector<Member> top = scan.members(scan.skip_ws(0));
  const Member& ops = member_named(top, "operations", where);
  const Member& grid = member_named(top, "grid", where);
  std::vector<Insert> inserts = grid_inserts(m, scan, grid, req);
  inserts.push_back(operation_entry(json_text, scan, ops, req, symbols));
  // From the end backwards, so earlier offsets stay valid.
  std::sort(inserts.begin(), inserts.end(), [](const Insert& a, const Insert& b) { return a.at > b.at; });
  std::string out = json_text;
  for (const Insert& ins : inserts) out.insert(ins.at, ins.text);
  (void)parse_matrix(out, source);  // never hand back an invalid file
  return out;
}

}  // namespace pathlock::matrix
