// Explanations of single cells (see explain.hpp).
//
// The origin of each verdict is read from the rule ("origin" in the file,
// or the file's top-level "origin"); nothing is inferred from which keys a
// rule happens to have. Relations with the same verdict are written on one
// line, so a plain cell reads as one line per role pair.
#include "matrix/explain.hpp"

#include <fmt/format.h>

#include "matrix/cells.hpp"
#include "matrix/text.hpp"

namespace pathlock::matrix {

std::string credit_phrase(const Credit& credit, const std::string& review) {
  std::string out;
  switch (credit.origin) {
    case Origin::grid:
      out = "the original grid";
      break;
    case Origin::decision:
      out = "shipped decision: " + credit.decision;
      break;
    case Origin::owner:
      out = credit.decision.empty() ? "owner's rule" : "owner's rule: " + credit.decision;
      break;
  }
  if (!review.empty()) out += "; review: " + review;
  return out;
}

std::string origin_phrase(const Rule& rule) { return credit_phrase(Credit{rule.origin, rule.decision}, rule.review); }

std::string origin_phrase(const Rule& rule, int requested_role, Relation rel) {
  return credit_phrase(resolve_credit(rule, requested_role, rel), rule.review);
}

namespace {

// The lines of one (held role, requested role): relations grouped by verdict
// and origin, in relation order.
std::string role_pair_lines(const Matrix& m, const Rule& rule, int hc, int rc, const std::string& names) {
  struct Group {
    Verdict verdict;
    std::string origin;
    std::vector<Relation> relations;
  };
  std::vector<Group> groups;
  const int rr = m.codes[static_cast<std::size_t>(rc)].role;
  for (std::size_t i = 0; i < kRelationCount; ++i) {
    const auto rel = static_cast<Relation>(i);
    const Verdict v = m.verdict(hc, rc, rel);
    const std::string origin = origin_phrase(rule, rr, rel);
    auto it = groups.begin();
    while (it != groups.end() && (it->verdict != v || it->origin != origin)) ++it;
    if (it == groups.end())
      groups.push_back({v, origin, {rel}});
    else
      it->relations.push_back(rel);
  }
  std::string out;
  for (const Group& g : groups)
    out += fmt::format("  {}, {}: {} ({})\n", names, relations_phrase(g.relations), verdict_name(g.verdict), g.origin);
  return out;
}

}  // namespace

std::string explain(const Matrix& m, int held_op, int requested_op, const std::vector<Asymmetry>& asym) {
  const OpDef& held = m.ops[static_cast<std::size_t>(held_op)];
  const OpDef& req = m.ops[static_cast<std::size_t>(requested_op)];
  const std::vector<CellPart> parts = cell_parts(m, held_op, requested_op);
  std::string labels;
  for (const Origin o : {Origin::grid, Origin::decision, Origin::owner}) {
    const std::string l = parts_label(parts, o);
    if (l.empty()) continue;
    const char* what = o == Origin::grid       ? "original grid"
                       : o == Origin::decision ? "shipped decision"
                                               : "owner's rule";
    labels += fmt::format("{}{} \"{}\"", labels.empty() ? "" : ", ", what, l);
  }
  std::string out =
      fmt::format("held {} ({}), requested {} ({}): {}\n", held.name, held.label, req.name, req.label, labels);
  const Cell& cell = m.grid[static_cast<std::size_t>(held_op)][static_cast<std::size_t>(requested_op)];
  for (std::size_t hr = 0; hr < held.roles.size(); ++hr) {
    const Rule& rule = cell.held_roles[hr];
    const int hc = m.code_of(held_op, static_cast<int>(hr));
    for (std::size_t rr = 0; rr < req.roles.size(); ++rr)
      out += role_pair_lines(m, rule, hc, m.code_of(requested_op, static_cast<int>(rr)),
                             fmt::format("held {} vs requested {}", held.roles[hr].name, req.roles[rr].name));
  }
  for (const Asymmetry& a : asym) {
    const int fo = m.codes[static_cast<std::size_t>(a.first)].op, so = m.codes[static_cast<std::size_t>(a.second)].op;
    if ((fo == held_op && so == requested_op) || (fo == requested_op && so == held_op))
      out += "  asymmetric: " + asymmetry_text(m, a) + "\n";
  }
  return out;
}

std::string explain(const Matrix& m, int held_op, int requested_op) {
  return explain(m, held_op, requested_op, asymmetric_pairs(m));
}

}  // namespace pathlock::matrix
