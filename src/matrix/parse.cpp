// Parsing and validation of matrix JSON files (format: matrix/README.md).
//
// The parser keeps a stack of object keys while nlohmann/json reads the text,
// so a duplicate key is reported with its full location ("grid.move_file").
// Validation then walks the document once and turns every problem into a
// message that names the file, the operation, the cell and the role.
//
// Every problem, not just the first: validation recovers at three levels
// (an operation entry, a grid row, a cell). A problem throws out of the unit
// being read; the unit's loop records the message and goes on with the next
// one. At the end all messages are thrown together in one MatrixError. An
// operation that could not be read is remembered by name, so the cells and
// rows that name it are skipped instead of reported a second time. Problems
// of the document itself (not JSON, duplicate keys, no "operations") stop
// at once: nothing below them can be read reliably.
//
// Extending the format: add the key to only_keys() at its level, read it
// here, store it in model.hpp, describe it in matrix/README.md and
// matrix/matrix.schema.json, and add a message test to
// tests/matrix_model_test.cpp.
#include "matrix/model.hpp"
#include "matrix/strict_json.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <set>
#include <sstream>

namespace pathlock::matrix {
namespace {

using json = nlohmann::json;

// Where a problem is: the text that starts its message ("operation 'X',
// cell 'Y', role 'r'") and the same location as fields.
struct Where {
  std::string source;
  std::string text;
  std::string op, cell, role;
  [[noreturn]] void fail(const std::string& what) const { throw MatrixError(std::vector<Problem>{problem(what)}); }
  Problem problem(const std::string& what) const {
    return Problem{op, cell, role, Severity::error,
                   fmt::format("{}: {}{}{}", source, text, text.empty() ? "" : ": ", what)};
  }
  Where at(const std::string& more) const {
    Where w = *this;
    w.text = text.empty() ? more : text + ", " + more;
    return w;
  }
  Where at_op(const std::string& name) const {
    Where w = at(fmt::format("operation '{}'", name));
    w.op = name;
    return w;
  }
  Where at_cell(const std::string& name) const {
    Where w = at(fmt::format("cell '{}'", name));
    w.cell = name;
    return w;
  }
  Where at_role(const std::string& name) const {
    Where w = at(fmt::format("role '{}'", name));
    w.role = name;
    return w;
  }
};

// Collects the problems of the units read so far.
struct Problems {
  std::vector<Problem> lines;
  template <typename Fn>
  bool attempt(Fn&& fn) {  // false if `fn` reported a problem
    try {
      fn();
      return true;
    } catch (const MatrixError& e) {
      lines.insert(lines.end(), e.details().begin(), e.details().end());
      return false;
    }
  }
  void add(const Where& where, const std::string& what) { lines.push_back(where.problem(what)); }
};

std::optional<Verdict> parse_verdict_name(const std::string& s) {
  if (s == "allow") return Verdict::allow;
  if (s == "deny") return Verdict::deny;
  if (s == "unrelated") return Verdict::unrelated;
  return std::nullopt;
}

Verdict parse_verdict(const json& j, const Where& where) {
  if (!j.is_string()) where.fail(fmt::format("verdict must be \"allow\", \"deny\" or \"unrelated\", got {}", j.dump()));
  const auto v = parse_verdict_name(j.get<std::string>());
  if (!v) where.fail(fmt::format("unknown verdict \"{}\" (use \"allow\", \"deny\" or \"unrelated\")", j.get<std::string>()));
  return *v;
}

Origin parse_origin(const json& j, const Where& where) {
  const std::string s = j.is_string() ? j.get<std::string>() : j.dump();
  if (s == "grid") return Origin::grid;
  if (s == "decision") return Origin::decision;
  if (s == "owner") return Origin::owner;
  where.fail(fmt::format("unknown origin \"{}\" (use \"grid\", \"decision\" or \"owner\")", s));
}

std::optional<Relation> parse_relation_name(const std::string& s) {
  if (s == "same") return Relation::same;
  if (s == "held_ancestor") return Relation::held_ancestor;
  if (s == "held_descendant") return Relation::held_descendant;
  return std::nullopt;
}

void only_keys(const json& j, std::initializer_list<const char*> allowed, const Where& where) {
  for (const auto& [key, value] : j.items()) {
    bool ok = false;
    for (const char* a : allowed) ok = ok || key == a;
    if (!ok) {
      std::string list;
      for (const char* a : allowed) list += fmt::format("{}\"{}\"", list.empty() ? "" : ", ", a);
      where.fail(fmt::format("unknown key \"{}\" (allowed: {})", key, list));
    }
  }
}

const std::string& need_string(const json& j, const char* key, const Where& where) {
  if (!j.contains(key)) where.fail(fmt::format("missing \"{}\"", key));
  if (!j.at(key).is_string()) where.fail(fmt::format("\"{}\" must be a string", key));
  return j.at(key).get_ref<const std::string&>();
}

bool is_identifier(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  for (const char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return s[0] >= 'a' && s[0] <= 'z';
}

// "origin" and "decision" of a rule (or of one verdict), checked together.
Credit parse_credit(const json& j, Credit credit, const Where& where) {
  if (j.contains("origin")) credit.origin = parse_origin(j.at("origin"), where);
  if (j.contains("decision")) {
    credit.decision = need_string(j, "decision", where);
    if (credit.decision.empty()) where.fail("\"decision\" must say why (it is empty)");
  } else if (j.contains("origin")) {
    credit.decision.clear();  // a new origin does not inherit the enclosing rule's reason
  }
  if (credit.origin == Origin::decision && credit.decision.empty())
    where.fail("a rule with \"origin\": \"decision\" needs \"decision\" saying why");
  if (credit.origin == Origin::grid && !credit.decision.empty())
    where.fail("\"decision\" on a rule whose origin is the original grid (add \"origin\": \"decision\" or \"owner\")");
  return credit;
}

// "relation": relation -> verdict, or -> {verdict, origin, decision} for a
// verdict with its own origin (the console's editor credits an owner's change
// to the verdicts it changed only).
void parse_relations(const json& rel, Rule& rule, const Where& where) {
  if (!rel.is_object() || rel.empty()) where.fail("\"relation\" must be a non-empty object of relation -> verdict");
  for (const auto& [name, v] : rel.items()) {
    const auto r = parse_relation_name(name);
    if (!r) where.fail(fmt::format("unknown relation \"{}\" (use \"same\", \"held_ancestor\", \"held_descendant\")", name));
    const Where at = where.at(fmt::format("relation '{}'", name));
    if (!v.is_object()) {
      rule.by_relation[*r] = parse_verdict(v, at);
      continue;
    }
    only_keys(v, {"verdict", "origin", "decision"}, at);
    if (!v.contains("verdict")) at.fail("missing \"verdict\"");
    rule.by_relation[*r] = parse_verdict(v.at("verdict"), at.at("verdict"));
    rule.relation_credit[*r] = parse_credit(v, Credit{rule.origin, rule.decision}, at);
  }
}

Rule parse_rule(const json& j, const OpDef& requested, const Where& where, const Credit& inherited, bool top) {
  Rule rule;
  rule.origin = inherited.origin;
  if (!top) rule.decision = inherited.decision;
  if (j.is_string()) {
    rule.verdict = parse_verdict(j, where);
    return rule;
  }
  if (!j.is_object()) where.fail(fmt::format("a rule is a verdict string or an object, got {}", j.dump()));
  if (top)
    only_keys(j, {"verdict", "origin", "decision", "review", "requested_role", "relation"}, where);
  else
    only_keys(j, {"verdict", "relation", "origin", "decision"}, where);
  if (j.contains("verdict")) rule.verdict = parse_verdict(j.at("verdict"), where.at("verdict"));
  const Credit credit = parse_credit(j, Credit{rule.origin, rule.decision}, where);
  rule.own_credit = !top && (j.contains("origin") || j.contains("decision"));
  rule.origin = credit.origin;
  rule.decision = credit.decision;
  if (j.contains("review")) {
    rule.review = need_string(j, "review", where);
    if (rule.review.empty()) where.fail("\"review\" must say what to decide (it is empty; remove it once decided)");
  }
  if (j.contains("requested_role")) {
    const json& rr = j.at("requested_role");
    if (!rr.is_object() || rr.empty()) where.fail("\"requested_role\" must be a non-empty object of role -> rule");
    for (const auto& [role, sub] : rr.items()) {
      int idx = -1;
      for (std::size_t r = 0; r < requested.roles.size(); ++r)
        if (requested.roles[r].name == role) idx = static_cast<int>(r);
      if (idx < 0) where.fail(fmt::format("requested operation '{}' has no role '{}'", requested.name, role));
      rule.by_requested_role[idx] = parse_rule(sub, requested, where.at(fmt::format("requested role '{}'", role)),
                                               Credit{rule.origin, rule.decision}, false);
    }
  }
  if (j.contains("relation")) parse_relations(j.at("relation"), rule, where);
  return rule;
}

OpDef parse_operation(const json& o, const Where& file, std::size_t number, std::string& name_out) {
  if (!o.is_object()) file.fail("each entry of \"operations\" must be an object");
  OpDef op;
  op.name = need_string(o, "op", file.at(fmt::format("operation #{}", number)));
  name_out = op.name;
  const Where where = file.at_op(op.name);
  only_keys(o, {"op", "label", "example", "roles", "not_inside"}, where);
  if (!is_identifier(op.name)) where.fail("operation names are [a-z][a-z0-9_]*, at most 64 bytes");
  op.label = o.contains("label") ? need_string(o, "label", where) : op.name;
  op.example = o.contains("example") ? need_string(o, "example", where) : "";
  if (!o.contains("roles") || !o.at("roles").is_array() || o.at("roles").empty())
    where.fail("\"roles\" must be a non-empty array");
  for (const json& r : o.at("roles")) {
    if (!r.is_object()) where.fail("each role must be an object");
    RoleDef role;
    role.name = need_string(r, "role", where);
    const Where rw = where.at_role(role.name);
    only_keys(r, {"role", "symbols", "about"}, rw);
    if (r.contains("about")) role.about = need_string(r, "about", rw);
    if (!is_identifier(role.name)) rw.fail("role names are [a-z][a-z0-9_]*, at most 64 bytes");
    for (const RoleDef& other : op.roles)
      if (other.name == role.name) rw.fail("role defined twice");
    if (r.contains("symbols")) {
      if (!r.at("symbols").is_array()) rw.fail("\"symbols\" must be an array of strings");
      for (const json& s : r.at("symbols")) {
        if (!s.is_string()) rw.fail("\"symbols\" must be an array of strings");
        if (const std::string problem = symbol_problem(s.get<std::string>()); !problem.empty())
          rw.fail(fmt::format("symbol {} {}", s.dump(), problem));
        role.symbols.push_back(s.get<std::string>());
      }
    }
    if (role.symbols.empty()) role.symbols.push_back(role.name);
    op.roles.push_back(std::move(role));
  }
  if (op.roles.size() > kMaxRolesPerOp) where.fail(fmt::format("at most {} roles per operation", kMaxRolesPerOp));
  if (o.contains("not_inside")) {
    const json& ni = o.at("not_inside");
    if (!ni.is_array()) where.fail("\"not_inside\" must be an array of [inner role, outer role] pairs");
    for (const json& pair : ni) {
      if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string() || !pair[1].is_string())
        where.fail("\"not_inside\" entries are [inner role, outer role]");
      auto role_idx = [&](const std::string& n) {
        for (std::size_t r = 0; r < op.roles.size(); ++r)
          if (op.roles[r].name == n) return static_cast<int>(r);
        where.fail(fmt::format("\"not_inside\" names unknown role '{}'", n));
      };
      const int inner = role_idx(pair[0].get<std::string>()), outer = role_idx(pair[1].get<std::string>());
      if (inner == outer) where.fail("\"not_inside\" pairs a role with itself");
      op.not_inside.emplace_back(inner, outer);
    }
    if (op.not_inside.size() > kMaxRolesPerOp)
      where.fail(fmt::format("at most {} \"not_inside\" pairs per operation", kMaxRolesPerOp));
  }
  return op;
}

Cell parse_cell(const json& cj, const Matrix& m, const OpDef& held, const OpDef& req, const Where& cw) {
  Cell cell;
  if (cj.is_string()) {
    cell.bare = true;
    cell.held_roles.assign(held.roles.size(), parse_rule(cj, req, cw, Credit{m.default_origin, ""}, true));
  } else if (cj.is_object()) {
    for (const auto& [role, v] : cj.items()) {
      bool known = false;
      for (const RoleDef& hr : held.roles) known = known || hr.name == role;
      if (!known) cw.fail(fmt::format("held operation '{}' has no role '{}'", held.name, role));
    }
    for (const RoleDef& hr : held.roles) {
      const Where hw = cw.at_role(hr.name);
      if (!cj.contains(hr.name)) hw.fail("missing (a cell given per role must give every held role)");
      cell.held_roles.push_back(parse_rule(cj.at(hr.name), req, hw, Credit{m.default_origin, ""}, true));
    }
  } else {
    cw.fail(fmt::format("a cell is a verdict string or an object of held role -> rule, got {}", cj.dump()));
  }
  for (std::size_t hr = 0; hr < cell.held_roles.size(); ++hr)
    for (std::size_t rr = 0; rr < req.roles.size(); ++rr)
      for (std::size_t rel = 0; rel < kRelationCount; ++rel)
        if (!resolve_rule(cell.held_roles[hr], static_cast<int>(rr), static_cast<Relation>(rel)))
          cw.at_role(held.roles[hr].name)
              .fail(fmt::format("no verdict for requested role '{}' with relation '{}' (add \"verdict\")",
                                req.roles[rr].name, relation_name(static_cast<Relation>(rel))));
  return cell;
}

// The file's own fields: name, version, description, default origin.
void parse_identity(const json& doc, const Where& file, Matrix& m, Problems& problems) {
  problems.attempt([&] {
    only_keys(doc, {"$schema", "name", "version", "description", "origin", "operations", "grid"}, file);
  });
  problems.attempt([&] {
    m.name = need_string(doc, "name", file);
    if (m.name.empty()) file.fail("\"name\" is empty");
    for (const char c : m.name)
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
        file.fail(fmt::format("\"name\" '{}' may hold only [a-z0-9_-]", m.name));
  });
  problems.attempt([&] {
    m.version = need_string(doc, "version", file);
    if (m.version.empty()) file.fail("\"version\" is empty");
  });
  problems.attempt([&] {
    if (doc.contains("description")) m.description = need_string(doc, "description", file);
  });
  problems.attempt([&] {
    if (doc.contains("origin")) m.default_origin = parse_origin(doc.at("origin"), file.at("\"origin\""));
  });
}

// "operations": every entry read, or its name remembered in `broken`.
void parse_operations(const json& doc, const Where& file, Matrix& m, Problems& problems, std::set<std::string>& broken) {
  if (!doc.contains("operations") || !doc.at("operations").is_array() || doc.at("operations").empty()) {
    problems.add(file, "\"operations\" must be a non-empty array");
    throw MatrixError(std::move(problems.lines));
  }
  for (const json& o : doc.at("operations")) {
    std::string name;
    problems.attempt([&] {
      OpDef op = parse_operation(o, file, m.ops.size() + broken.size() + 1, name);
      if (m.op_index(op.name) >= 0) file.at_op(op.name).fail("operation defined twice");
      for (std::size_t r = 0; r < op.roles.size(); ++r)
        m.codes.push_back(Code{static_cast<int>(m.ops.size()), static_cast<int>(r)});
      m.ops.push_back(std::move(op));
      name.clear();
    });
    if (!name.empty()) broken.insert(name);
  }
  if (m.ops.size() > kMaxOps) problems.add(file, fmt::format("{} operations; the limit is {}", m.ops.size(), kMaxOps));
  if (m.codes.size() > kMaxCodes)
    problems.add(file, fmt::format("{} (operation, role) pairs; the limit is {}", m.codes.size(), kMaxCodes));
}

// The row of held operation `h`: every cell, each read on its own.
void parse_row(const json& grid, const Where& file, std::size_t h, Matrix& m, Problems& problems,
               const std::set<std::string>& broken) {
  const OpDef& held = m.ops[h];
  const Where rw = file.at_op(held.name);
  m.grid[h].resize(m.ops.size());
  const bool row_ok = problems.attempt([&] {
    if (!grid.contains(held.name)) rw.fail("no grid row (every operation needs a row)");
    if (!grid.at(held.name).is_object()) rw.fail("a grid row must be an object of requested operation -> cell");
  });
  if (!row_ok) return;
  const json& row = grid.at(held.name);
  for (const auto& [req_name, cell] : row.items())
    if (m.op_index(req_name) < 0 && !broken.count(req_name)) {
      Where at = rw;
      at.cell = req_name;
      problems.add(at, fmt::format("cell '{}' is not an operation", req_name));
    }
  for (std::size_t r = 0; r < m.ops.size(); ++r) {
    const OpDef& req = m.ops[r];
    const Where cw = rw.at_cell(req.name);
    problems.attempt([&] {
      if (!row.contains(req.name)) cw.fail("missing cell (every cell must be given; no default)");
      m.grid[h][r] = parse_cell(row.at(req.name), m, held, req, cw);
    });
  }
}

// "grid": a row per operation, no row of an unknown one.
void parse_grid(const json& doc, const Where& file, Matrix& m, Problems& problems, const std::set<std::string>& broken) {
  if (!doc.contains("grid") || !doc.at("grid").is_object()) {
    problems.add(file, "\"grid\" must be an object of held operation -> row");
    throw MatrixError(std::move(problems.lines));
  }
  const json& grid = doc.at("grid");
  for (const auto& [held_name, row] : grid.items())
    if (m.op_index(held_name) < 0 && !broken.count(held_name)) {
      Where at = file;
      at.op = held_name;
      problems.add(at, fmt::format("grid row '{}' is not an operation", held_name));
    }
  m.grid.resize(m.ops.size());
  for (std::size_t h = 0; h < m.ops.size(); ++h) parse_row(grid, file, h, m, problems, broken);
}

}  // namespace

Matrix parse_matrix(const std::string& json_text, const std::string& source) {
  const Where file{source, "", "", "", ""};
  const json doc = parse_strict_json(json_text, source);
  if (!doc.is_object()) file.fail("the document must be a JSON object");
  Problems problems;
  Matrix m;
  m.source = source;
  parse_identity(doc, file, m, problems);
  std::set<std::string> broken;  // operations that could not be read
  parse_operations(doc, file, m, problems, broken);
  parse_grid(doc, file, m, problems, broken);
  if (!problems.lines.empty()) throw MatrixError(std::move(problems.lines));
  return m;
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw MatrixError(fmt::format("{}: cannot open", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

Matrix load_matrix(const std::string& path) { return parse_matrix(read_text_file(path), path); }

}  // namespace pathlock::matrix
