// The Matrix model: resolution of rules into verdicts, the fingerprint, the
// asymmetric pairs and the warnings. Parsing and validation: parse.cpp.
//
// Resolution order for one rule: the rule for the request's role
// (requested_role), then the rule for the relation of the two paths, then
// the plain verdict. Validation guarantees that every (held role, requested
// role, relation) resolves, so verdict() never fails on a parsed Matrix.
#include "matrix/model.hpp"

#include <fmt/format.h>

namespace pathlock::matrix {
namespace {

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += (out.empty() ? "" : "\n") + l;
  return out;
}

std::vector<Problem> of_file(const std::vector<std::string>& texts) {
  std::vector<Problem> out;
  for (const std::string& t : texts) out.push_back(Problem{"", "", "", Severity::error, t});
  return out;
}

std::vector<std::string> texts_of(const std::vector<Problem>& problems) {
  std::vector<std::string> out;
  for (const Problem& p : problems) out.push_back(p.text);
  return out;
}

}  // namespace

std::string_view severity_name(Severity s) { return s == Severity::error ? "error" : "warning"; }

MatrixError::MatrixError(const std::string& problem)
    : std::runtime_error(problem), texts_{problem}, details_{Problem{"", "", "", Severity::error, problem}} {}

MatrixError::MatrixError(std::vector<std::string> problems)
    : std::runtime_error(join_lines(problems)), texts_(std::move(problems)), details_(of_file(texts_)) {}

MatrixError::MatrixError(std::vector<Problem> problems)
    : std::runtime_error(join_lines(texts_of(problems))), texts_(texts_of(problems)), details_(std::move(problems)) {}

std::optional<Verdict> resolve_rule(const Rule& rule, int requested_role, Relation rel) {
  if (const auto it = rule.by_requested_role.find(requested_role); it != rule.by_requested_role.end())
    if (const auto v = resolve_rule(it->second, requested_role, rel)) return v;
  if (const auto it = rule.by_relation.find(rel); it != rule.by_relation.end()) return it->second;
  return rule.verdict;
}

Credit resolve_credit(const Rule& rule, int requested_role, Relation rel) {
  if (const auto it = rule.by_requested_role.find(requested_role);
      it != rule.by_requested_role.end() && resolve_rule(it->second, requested_role, rel))
    return resolve_credit(it->second, requested_role, rel);
  if (const auto it = rule.relation_credit.find(rel); it != rule.relation_credit.end()) return it->second;
  return Credit{rule.origin, rule.decision};
}

std::string_view origin_name(Origin o) {
  switch (o) {
    case Origin::grid: return "grid";
    case Origin::decision: return "decision";
    case Origin::owner: return "owner";
  }
  return "?";
}

namespace {

// A verdict's two spellings: its name in the JSON and its mark in the grid.
struct VerdictSpelling {
  std::string_view name;
  std::string_view mark;
};

VerdictSpelling verdict_spelling(Verdict v) {
  switch (v) {
    case Verdict::allow: return {"allow", "√"};
    case Verdict::deny: return {"deny", "×"};
    case Verdict::unrelated: return {"unrelated", "/"};
  }
  return {"?", "?"};
}

}  // namespace

std::string_view verdict_name(Verdict v) { return verdict_spelling(v).name; }

std::string_view verdict_mark(Verdict v) { return verdict_spelling(v).mark; }

std::string symbol_problem(std::string_view symbol) {
  if (symbol.empty()) return "is empty";
  std::size_t chars = 0;
  for (std::size_t i = 0; i < symbol.size(); ++chars) {
    const auto lead = static_cast<unsigned char>(symbol[i]);
    if (lead < 0x20 || lead == 0x7F) return "holds a control character";
    const std::size_t len = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || i + len > symbol.size()) return "is not valid UTF-8";
    for (std::size_t k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(symbol[i + k]) >> 6) != 0x2) return "is not valid UTF-8";
    i += len;
  }
  if (chars > kMaxSymbolChars) return fmt::format("is longer than {} characters", kMaxSymbolChars);
  return "";
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
  return *resolve_rule(rule(held, requested), codes[static_cast<std::size_t>(requested)].role, rel);
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

std::vector<Problem> warning_problems(const Matrix& m) {
  std::vector<Problem> out;
  for (std::size_t h = 0; h < m.ops.size(); ++h)
    for (std::size_t r = 0; r < m.ops.size(); ++r) {
      const Cell& cell = m.grid[h][r];
      for (std::size_t hr = 0; hr < cell.held_roles.size(); ++hr) {
        const Rule& rule = cell.held_roles[hr];
        if (rule.review.empty()) continue;
        const std::string& role = m.ops[h].roles[hr].name;
        out.push_back(Problem{m.ops[h].name, m.ops[r].name, role, Severity::warning,
                              fmt::format("{}: operation '{}', cell '{}', role '{}': review: {} (remove \"review\" once "
                                          "decided)",
                                          m.source, m.ops[h].name, m.ops[r].name, role, rule.review)});
        if (cell.bare) break;  // one rule for every role: one warning
      }
    }
  return out;
}

std::vector<std::string> warnings(const Matrix& m) {
  std::vector<std::string> out;
  for (const Problem& p : warning_problems(m)) out.push_back(p.text);
  return out;
}

}  // namespace pathlock::matrix
