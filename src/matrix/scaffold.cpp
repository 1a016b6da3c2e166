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

#include "matrix/model.hpp"

namespace pathlock::matrix {
namespace {

struct Member {
  std::string key;
  std::size_t key_at = 0;       // offset of the key's opening quote
  std::size_t value_begin = 0;  // offset of the value's first byte
  std::size_t value_end = 0;    // one past the value's last byte
};

class Scanner {
 public:
  explicit Scanner(const std::string& text) : s_(text) {}

  std::size_t skip_ws(std::size_t i) const {
    while (i < s_.size() && (s_[i] == ' ' || s_[i] == '\t' || s_[i] == '\n' || s_[i] == '\r')) ++i;
    return i;
  }
  std::size_t skip_string(std::size_t i) const {  // i at the opening quote
    for (++i; i < s_.size() && s_[i] != '"'; ++i)
      if (s_[i] == '\\') ++i;
    return i + 1;
  }
  std::size_t skip_value(std::size_t i) const {
    if (s_[i] == '"') return skip_string(i);
    if (s_[i] == '{' || s_[i] == '[') {
      int depth = 0;
      for (; i < s_.size(); ++i) {
        if (s_[i] == '"') {
          i = skip_string(i) - 1;
        } else if (s_[i] == '{' || s_[i] == '[') {
          ++depth;
        } else if (s_[i] == '}' || s_[i] == ']') {
          if (--depth == 0) return i + 1;
        }
      }
      return i;
    }
    while (i < s_.size() && s_[i] != ',' && s_[i] != '}' && s_[i] != ']' && s_[i] != ' ' && s_[i] != '\n') ++i;
    return i;
  }
  // The members of the object whose '{' is at `open`.
  std::vector<Member> members(std::size_t open) const {
    std::vector<Member> out;
    std::size_t i = skip_ws(open + 1);
    while (i < s_.size() && s_[i] == '"') {
      Member m;
      m.key_at = i;
      const std::size_t key_end = skip_string(i);
      m.key = nlohmann::json::parse(s_.substr(i, key_end - i)).get<std::string>();
      i = skip_ws(skip_ws(key_end) + 1);  // past ':'
      m.value_begin = i;
      m.value_end = skip_value(i);
      out.push_back(m);
      i = skip_ws(m.value_end);
      if (i < s_.size() && s_[i] == ',') i = skip_ws(i + 1);
    }
    return out;
  }
  // The indentation of the line holding offset `at`.
  std::string indent_of(std::size_t at) const {
    const std::size_t line = s_.rfind('\n', at);
    const std::size_t begin = line == std::string::npos ? 0 : line + 1;
    std::size_t end = begin;
    while (end < s_.size() && (s_[end] == ' ' || s_[end] == '\t')) ++end;
    return s_.substr(begin, end - begin);
  }

 private:
  const std::string& s_;
};

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
  const std::vector<std::vector<std::string>> symbols = symbols_for(m, req, where);

  const Scanner scan(json_text);
  const std::vector<Member> top = scan.members(scan.skip_ws(0));
  auto find = [&](const std::vector<Member>& ms, const std::string& key) -> const Member& {
    for (const Member& mb : ms)
      if (mb.key == key) return mb;
    throw MatrixError(fmt::format("{}: no \"{}\"", where, key));
  };
  const Member& ops = find(top, "operations");
  const Member& grid = find(top, "grid");
  const std::vector<Member> rows = scan.members(grid.value_begin);

  struct Insert {
    std::size_t at;
    std::string text;
  };
  std::vector<Insert> inserts;
  // The operation entry, after the last one.
  {
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
    inserts.push_back({last, ",\n" + scan.indent_of(entry_line == std::string::npos ? 0 : entry_line + 1) + entry});
  }
  // A cell in every existing row, then the new row after the last row.
  std::vector<std::string> existing_names;
  for (const OpDef& op : m.ops) existing_names.push_back(op.name);
  for (const Member& row : rows) {
    const int h = m.op_index(row.key);
    if (h < 0) continue;
    std::vector<std::string> held_roles;
    for (const RoleDef& r : m.ops[static_cast<std::size_t>(h)].roles) held_roles.push_back(r.name);
    const std::vector<Member> cells = scan.members(row.value_begin);
    const Member& last = cells.back();
    inserts.push_back({last.value_end, ",\n" + scan.indent_of(last.key_at) + json_quote(req.op) + ": " +
                                           new_cell(held_roles, row.key, req.op)});
  }
  {
    const Member& last_row = rows.back();
    const std::string row_indent = scan.indent_of(last_row.key_at), cell_indent = row_indent + "  ";
    std::string row = json_quote(req.op) + ": {";
    existing_names.push_back(req.op);
    for (std::size_t i = 0; i < existing_names.size(); ++i)
      row += fmt::format("{}\n{}{}: {}", i ? "," : "", cell_indent, json_quote(existing_names[i]),
                         new_cell(req.roles, req.op, existing_names[i]));
    row += "\n" + row_indent + "}";
    inserts.push_back({last_row.value_end, ",\n" + row_indent + row});
  }
  std::sort(inserts.begin(), inserts.end(), [](const Insert& a, const Insert& b) { return a.at > b.at; });
  std::string out = json_text;
  for (const Insert& ins : inserts) out.insert(ins.at, ins.text);
  (void)parse_matrix(out, source);  // never hand back an invalid file
  return out;
}

}  // namespace pathlock::matrix
