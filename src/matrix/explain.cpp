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

std::string origin_phrase(const Rule& rule) {
  std::string out;
  switch (rule.origin) {
    case Origin::grid:
      out = "the original grid";
      break;
    case Origin::decision:
      out = "shipped decision: " + rule.decision;
      break;
    case Origin::owner:
      out = rule.decision.empty() ? "owner's rule" : "owner's rule: " + rule.decision;
      break;
  }
  if (!rule.review.empty()) out += "; review: " + rule.review;
  return out;
}

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
    for (std::size_t rr = 0; rr < req.roles.size(); ++rr) {
      const int rc = m.code_of(requested_op, static_cast<int>(rr));
      // Group the relations by verdict, in relation order.
      std::vector<std::pair<Verdict, std::vector<Relation>>> groups;
      for (std::size_t rel = 0; rel < kRelationCount; ++rel) {
        const Verdict v = m.verdict(hc, rc, static_cast<Relation>(rel));
        auto it = groups.begin();
        while (it != groups.end() && it->first != v) ++it;
        if (it == groups.end())
          groups.push_back({v, {static_cast<Relation>(rel)}});
        else
          it->second.push_back(static_cast<Relation>(rel));
      }
      for (const auto& [v, rels] : groups)
        out += fmt::format("  held {} vs requested {}, {}: {} ({})\n", held.roles[hr].name, req.roles[rr].name,
                           relations_phrase(rels), verdict_name(v), origin_phrase(rule));
    }
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
