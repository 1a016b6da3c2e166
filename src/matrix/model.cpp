// Parsing and validation of matrix JSON files.
//
// The parser keeps a stack of object keys while nlohmann/json reads the text,
// so a duplicate key is reported with its full location ("grid.move_file").
// Validation then walks the document once and turns every problem into a
// MatrixError that names the file, the operation, the cell and the role.
#include "matrix/model.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <set>
#include <sstream>

namespace pathlock::matrix {
namespace {

using json = nlohmann::json;

struct Where {
  std::string source;
  std::string text;
  [[noreturn]] void fail(const std::string& what) const {
    throw MatrixError(fmt::format("{}: {}{}{}", source, text, text.empty() ? "" : ": ", what));
  }
  Where at(const std::string& more) const { return Where{source, text.empty() ? more : text + ", " + more}; }
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

Rule parse_rule(const json& j, const OpDef& requested, const Where& where, bool top) {
  Rule rule;
  if (j.is_string()) {
    rule.verdict = parse_verdict(j, where);
    return rule;
  }
  if (!j.is_object()) where.fail(fmt::format("a rule is a verdict string or an object, got {}", j.dump()));
  if (top)
    only_keys(j, {"verdict", "decision", "requested_role", "relation"}, where);
  else
    only_keys(j, {"verdict", "relation"}, where);
  if (j.contains("verdict")) rule.verdict = parse_verdict(j.at("verdict"), where.at("verdict"));
  if (j.contains("decision")) {
    rule.decision = need_string(j, "decision", where);
    if (rule.decision.empty()) where.fail("\"decision\" must say why (it is empty)");
  }
  if (j.contains("requested_role")) {
    const json& rr = j.at("requested_role");
    if (!rr.is_object() || rr.empty()) where.fail("\"requested_role\" must be a non-empty object of role -> rule");
    for (const auto& [role, sub] : rr.items()) {
      int idx = -1;
      for (std::size_t r = 0; r < requested.roles.size(); ++r)
        if (requested.roles[r].name == role) idx = static_cast<int>(r);
      if (idx < 0) where.fail(fmt::format("requested operation '{}' has no role '{}'", requested.name, role));
      rule.by_requested_role[idx] = parse_rule(sub, requested, where.at(fmt::format("requested role '{}'", role)), false);
    }
  }
  if (j.contains("relation")) {
    const json& rel = j.at("relation");
    if (!rel.is_object() || rel.empty()) where.fail("\"relation\" must be a non-empty object of relation -> verdict");
    for (const auto& [name, v] : rel.items()) {
      const auto r = parse_relation_name(name);
      if (!r) where.fail(fmt::format("unknown relation \"{}\" (use \"same\", \"held_ancestor\", \"held_descendant\")", name));
      rule.by_relation[*r] = parse_verdict(v, where.at(fmt::format("relation '{}'", name)));
    }
  }
  return rule;
}

std::optional<Verdict> resolve(const Rule& rule, int requested_role, Relation rel) {
  if (const auto it = rule.by_requested_role.find(requested_role); it != rule.by_requested_role.end())
    if (const auto v = resolve(it->second, requested_role, rel)) return v;
  if (const auto it = rule.by_relation.find(rel); it != rule.by_relation.end()) return it->second;
  return rule.verdict;
}

// nlohmann/json keeps the last of two equal keys; we refuse them instead.
json parse_strict(const std::string& text, const Where& where) {
  std::vector<std::set<std::string>> keys;
  std::vector<std::string> path;  // key path of the current value
  std::string last_key;
  auto callback = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        keys.emplace_back();
        path.push_back(last_key);
        break;
      case json::parse_event_t::object_end:
        keys.pop_back();
        path.pop_back();
        break;
      case json::parse_event_t::key: {
        last_key = parsed.get<std::string>();
        if (!keys.back().insert(last_key).second) {
          std::string at;
          for (const auto& p : path)
            if (!p.empty()) at += (at.empty() ? "" : ".") + p;
          where.fail(fmt::format("duplicate key \"{}\"{}", last_key, at.empty() ? "" : " in " + at));
        }
        break;
      }
      case json::parse_event_t::array_start:
        path.push_back(last_key);
        last_key.clear();
        break;
      case json::parse_event_t::array_end:
        path.pop_back();
        break;
      case json::parse_event_t::value:
        break;
    }
    return true;
  };
  try {
    return json::parse(text, callback);
  } catch (const json::parse_error& e) {
    where.fail(fmt::format("not valid JSON: {}", e.what()));
  }
}

}  // namespace

std::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::allow: return "allow";
    case Verdict::deny: return "deny";
    case Verdict::unrelated: return "unrelated";
  }
  return "?";
}

std::string_view verdict_mark(Verdict v) {
  switch (v) {
    case Verdict::allow: return "√";
    case Verdict::deny: return "×";
    case Verdict::unrelated: return "/";
  }
  return "?";
}

Relation mirror(Relation rel) {
  switch (rel) {
    case Relation::held_ancestor: return Relation::held_descendant;
    case Relation::held_descendant: return Relation::held_ancestor;
    case Relation::same: break;
  }
  return Relation::same;
}

int Matrix::op_index(std::string_view op_name) const {
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (ops[i].name == op_name) return static_cast<int>(i);
  return -1;
}

int Matrix::code_of(int op, int role) const {
  for (std::size_t c = 0; c < codes.size(); ++c)
    if (codes[c].op == op && codes[c].role == role) return static_cast<int>(c);
  return -1;
}

std::string Matrix::code_name(int code) const {
  const Code& c = codes[static_cast<std::size_t>(code)];
  const OpDef& op = ops[static_cast<std::size_t>(c.op)];
  return op.name + "." + op.roles[static_cast<std::size_t>(c.role)].name;
}

const Rule& Matrix::rule(int held, int requested) const {
  const Code& h = codes[static_cast<std::size_t>(held)];
  const Code& r = codes[static_cast<std::size_t>(requested)];
  return grid[static_cast<std::size_t>(h.op)][static_cast<std::size_t>(r.op)]
      .held_roles[static_cast<std::size_t>(h.role)];
}

Verdict Matrix::verdict(int held, int requested, Relation rel) const {
  // Validation guarantees every combination resolves.
  return *resolve(rule(held, requested), codes[static_cast<std::size_t>(requested)].role, rel);
}

std::string Matrix::fingerprint() const {
  std::string canon;
  for (const OpDef& op : ops) {
    canon += "op " + op.name;
    for (const RoleDef& r : op.roles) canon += " " + r.name;
    for (const auto& [inner, outer] : op.not_inside) canon += fmt::format(" !{}<{}", inner, outer);
    canon += "\n";
  }
  for (std::size_t rel = 0; rel < kRelationCount; ++rel)
    for (std::size_t h = 0; h < codes.size(); ++h) {
      canon += fmt::format("r{} h{}:", rel, h);
      for (std::size_t r = 0; r < codes.size(); ++r)
        canon += verdict(static_cast<int>(h), static_cast<int>(r), static_cast<Relation>(rel)) == Verdict::deny ? 'x' : '.';
      canon += "\n";
    }
  // FNV-1a, 64 bits, twice with different offsets: a 128-bit identity check,
  // not a cryptographic one.
  auto fnv = [&](std::uint64_t h) {
    for (const unsigned char c : canon) {
      h ^= c;
      h *= 0x100000001b3ULL;
    }
    return h;
  };
  return fmt::format("{:016x}{:016x}", fnv(0xcbf29ce484222325ULL), fnv(0x84222325cbf29ce4ULL));
}

Matrix parse_matrix(const std::string& json_text, const std::string& source) {
  const Where file{source, ""};
  const json doc = parse_strict(json_text, file);
  if (!doc.is_object()) file.fail("the document must be a JSON object");
  only_keys(doc, {"$schema", "name", "version", "description", "operations", "grid"}, file);

  Matrix m;
  m.source = source;
  m.name = need_string(doc, "name", file);
  m.version = need_string(doc, "version", file);
  if (doc.contains("description")) m.description = need_string(doc, "description", file);
  if (m.name.empty()) file.fail("\"name\" is empty");
  for (const char c : m.name)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
      file.fail(fmt::format("\"name\" '{}' may hold only [a-z0-9_-]", m.name));
  if (m.version.empty()) file.fail("\"version\" is empty");

  if (!doc.contains("operations") || !doc.at("operations").is_array() || doc.at("operations").empty())
    file.fail("\"operations\" must be a non-empty array");
  for (const json& o : doc.at("operations")) {
    if (!o.is_object()) file.fail("each entry of \"operations\" must be an object");
    Where where = file.at(fmt::format("operation #{}", m.ops.size() + 1));
    OpDef op;
    op.name = need_string(o, "op", where);
    where = file.at(fmt::format("operation '{}'", op.name));
    only_keys(o, {"op", "label", "example", "roles", "not_inside"}, where);
    if (!is_identifier(op.name)) where.fail("operation names are [a-z][a-z0-9_]*, at most 64 bytes");
    if (m.op_index(op.name) >= 0) where.fail("operation defined twice");
    op.label = o.contains("label") ? need_string(o, "label", where) : op.name;
    op.example = o.contains("example") ? need_string(o, "example", where) : "";
    if (!o.contains("roles") || !o.at("roles").is_array() || o.at("roles").empty())
      where.fail("\"roles\" must be a non-empty array");
    for (const json& r : o.at("roles")) {
      if (!r.is_object()) where.fail("each role must be an object");
      RoleDef role;
      role.name = need_string(r, "role", where);
      const Where rw = where.at(fmt::format("role '{}'", role.name));
      only_keys(r, {"role", "symbols"}, rw);
      if (!is_identifier(role.name)) rw.fail("role names are [a-z][a-z0-9_]*, at most 64 bytes");
      for (const RoleDef& other : op.roles)
        if (other.name == role.name) rw.fail("role defined twice");
      if (r.contains("symbols")) {
        if (!r.at("symbols").is_array()) rw.fail("\"symbols\" must be an array of strings");
        for (const json& s : r.at("symbols")) {
          if (!s.is_string() || s.get<std::string>().empty()) rw.fail("\"symbols\" must be non-empty strings");
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
    }
    for (std::size_t r = 0; r < op.roles.size(); ++r)
      m.codes.push_back(Code{static_cast<int>(m.ops.size()), static_cast<int>(r)});
    m.ops.push_back(std::move(op));
  }
  if (m.ops.size() > kMaxOps) file.fail(fmt::format("{} operations; the limit is {}", m.ops.size(), kMaxOps));
  if (m.codes.size() > kMaxCodes)
    file.fail(fmt::format("{} (operation, role) pairs; the limit is {}", m.codes.size(), kMaxCodes));

  if (!doc.contains("grid") || !doc.at("grid").is_object()) file.fail("\"grid\" must be an object of held operation -> row");
  const json& grid = doc.at("grid");
  for (const auto& [held_name, row] : grid.items())
    if (m.op_index(held_name) < 0) file.fail(fmt::format("grid row '{}' is not an operation", held_name));
  m.grid.resize(m.ops.size());
  for (std::size_t h = 0; h < m.ops.size(); ++h) {
    const OpDef& held = m.ops[h];
    const Where rw = file.at(fmt::format("operation '{}'", held.name));
    if (!grid.contains(held.name)) rw.fail("no grid row (every operation needs a row)");
    const json& row = grid.at(held.name);
    if (!row.is_object()) rw.fail("a grid row must be an object of requested operation -> cell");
    for (const auto& [req_name, cell] : row.items())
      if (m.op_index(req_name) < 0) rw.fail(fmt::format("cell '{}' is not an operation", req_name));
    for (std::size_t r = 0; r < m.ops.size(); ++r) {
      const OpDef& req = m.ops[r];
      const Where cw = rw.at(fmt::format("cell '{}'", req.name));
      if (!row.contains(req.name)) cw.fail("missing cell (every cell must be given; no default)");
      const json& cj = row.at(req.name);
      Cell cell;
      if (cj.is_string()) {
        cell.bare = true;
        cell.held_roles.assign(held.roles.size(), parse_rule(cj, req, cw, true));
      } else if (cj.is_object()) {
        for (const auto& [role, v] : cj.items()) {
          bool known = false;
          for (const RoleDef& hr : held.roles) known = known || hr.name == role;
          if (!known) cw.fail(fmt::format("held operation '{}' has no role '{}'", held.name, role));
        }
        for (const RoleDef& hr : held.roles) {
          const Where hw = cw.at(fmt::format("role '{}'", hr.name));
          if (!cj.contains(hr.name)) hw.fail("missing (a cell given per role must give every held role)");
          cell.held_roles.push_back(parse_rule(cj.at(hr.name), req, hw, true));
        }
      } else {
        cw.fail(fmt::format("a cell is a verdict string or an object of held role -> rule, got {}", cj.dump()));
      }
      for (std::size_t hr = 0; hr < cell.held_roles.size(); ++hr)
        for (std::size_t rr = 0; rr < req.roles.size(); ++rr)
          for (std::size_t rel = 0; rel < kRelationCount; ++rel)
            if (!resolve(cell.held_roles[hr], static_cast<int>(rr), static_cast<Relation>(rel)))
              cw.at(fmt::format("role '{}'", held.roles[hr].name))
                  .fail(fmt::format("no verdict for requested role '{}' with relation '{}' (add \"verdict\")",
                                    req.roles[rr].name, relation_name(static_cast<Relation>(rel))));
      m.grid[h].push_back(std::move(cell));
    }
  }
  return m;
}

Matrix load_matrix(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw MatrixError(fmt::format("{}: cannot open", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parse_matrix(buffer.str(), path);
}

std::vector<Asymmetry> asymmetric_pairs(const Matrix& m) {
  std::vector<Asymmetry> out;
  const int n = static_cast<int>(m.codes.size());
  for (int a = 0; a < n; ++a)
    for (int b = a; b < n; ++b)
      for (std::size_t rel = 0; rel < kRelationCount; ++rel) {
        const auto r = static_cast<Relation>(rel);
        if (a == b && r == Relation::held_descendant) continue;  // mirror of held_ancestor
        const Verdict fwd = m.verdict(a, b, r), back = m.verdict(b, a, mirror(r));
        const bool fwd_deny = fwd == Verdict::deny, back_deny = back == Verdict::deny;
        if (fwd_deny == back_deny) continue;
        if (!out.empty() && out.back().first == a && out.back().second == b && out.back().forward == fwd &&
            out.back().backward == back)
          out.back().relations.push_back(r);
        else
          out.push_back(Asymmetry{a, b, {r}, fwd, back});
      }
  return out;
}

}  // namespace pathlock::matrix
