// Differences between two matrices (see diff.hpp).
#include "matrix/diff.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "matrix/text.hpp"

namespace pathlock::matrix {
namespace {

int code_by_name(const Matrix& m, const std::string& name) {
  for (std::size_t c = 0; c < m.codes.size(); ++c)
    if (m.code_name(static_cast<int>(c)) == name) return static_cast<int>(c);
  return -1;
}

std::set<std::string> not_inside_words(const OpDef& op) {
  std::set<std::string> out;
  for (const auto& [inner, outer] : op.not_inside)
    out.insert(fmt::format("{}: {} may not be {} or inside it", op.name, op.roles[static_cast<std::size_t>(inner)].name,
                           op.roles[static_cast<std::size_t>(outer)].name));
  return out;
}

const char* direction(Verdict before, Verdict after) {
  const bool was = before == Verdict::deny, now = after == Verdict::deny;
  if (!was && now) return "stricter";
  if (was && !now) return "looser";
  return "no effect on locking";
}

// Every rule of `m` naming a code c with only_here[c]: one line per (held
// code, requested code, verdict), over the relations giving that verdict.
std::vector<RuleLine> rules_naming(const Matrix& m, const std::vector<bool>& only_here) {
  std::vector<RuleLine> out;
  for (std::size_t h = 0; h < m.codes.size(); ++h)
    for (std::size_t r = 0; r < m.codes.size(); ++r) {
      if (!only_here[h] && !only_here[r]) continue;
      const int held = static_cast<int>(h), req = static_cast<int>(r);
      const Rule& rule = m.rule(held, req);
      const std::size_t first = out.size();
      for (std::size_t rel = 0; rel < kRelationCount; ++rel) {
        const auto relation = static_cast<Relation>(rel);
        const Verdict v = m.verdict(held, req, relation);
        auto same = std::find_if(out.begin() + static_cast<long>(first), out.end(),
                                 [&](const RuleLine& l) { return l.verdict == v; });
        if (same != out.end())
          same->relations.push_back(relation);
        else
          out.push_back(RuleLine{{m.code_name(held), m.code_name(req), {relation}}, v, rule.origin, rule.review});
      }
    }
  return out;
}

// For each code of `m`: true when `other` has no code of that name.
std::vector<bool> codes_missing_from(const Matrix& m, const Matrix& other) {
  std::vector<bool> out;
  for (std::size_t c = 0; c < m.codes.size(); ++c)
    out.push_back(code_by_name(other, m.code_name(static_cast<int>(c))) < 0);
  return out;
}

// Notes in `d.credited_to_grid` a changed or added rule of `after` whose
// verdict at one of `rels` is still credited to the original grid.
void note_grid_credit(const Matrix& after, const std::string& held, const std::string& req,
                      const std::vector<Relation>& rels, MatrixDiff& d) {
  const std::string pair = held + " held, " + req + " requested";
  const int hc = code_by_name(after, held), rc = code_by_name(after, req);
  const int rr = after.codes[static_cast<std::size_t>(rc)].role;
  const bool grid = std::any_of(rels.begin(), rels.end(), [&](Relation rel) {
    return resolve_credit(after.rule(hc, rc), rr, rel).origin == Origin::grid;
  });
  if (!grid || std::find(d.credited_to_grid.begin(), d.credited_to_grid.end(), pair) != d.credited_to_grid.end()) return;
  d.credited_to_grid.push_back(pair);
  d.credited_codes.emplace_back(held, req);
}

}  // namespace

std::string added_rule_text(const RuleLine& r) {
  return fmt::format("added: {} held, {} requested, {}: {}{}", r.held, r.requested, relations_phrase(r.relations),
                     verdict_name(r.verdict), r.review.empty() ? "" : " (review: " + r.review + ")");
}

std::string removed_rule_text(const RuleLine& r) {
  return fmt::format("removed: {} held, {} requested, {}: was {}", r.held, r.requested, relations_phrase(r.relations),
                     verdict_name(r.verdict));
}

MatrixDiff diff_matrices(const Matrix& before, const Matrix& after) {
  MatrixDiff d;
  for (const OpDef& op : before.ops)
    if (after.op_index(op.name) < 0) d.removed_ops.push_back(op.name);
  for (const OpDef& op : after.ops) {
    const int old = before.op_index(op.name);
    if (old < 0) {
      d.added_ops.push_back(op.name);
      continue;
    }
    const OpDef& was = before.ops[static_cast<std::size_t>(old)];
    for (const RoleDef& r : op.roles)
      if (code_by_name(before, op.name + "." + r.name) < 0) d.added_roles.push_back(op.name + "." + r.name);
    for (const RoleDef& r : was.roles)
      if (code_by_name(after, op.name + "." + r.name) < 0) d.removed_roles.push_back(op.name + "." + r.name);
    const auto old_ni = not_inside_words(was), new_ni = not_inside_words(op);
    for (const auto& w : old_ni)
      if (!new_ni.count(w)) d.constraints.push_back("removed: " + w);
    for (const auto& w : new_ni)
      if (!old_ni.count(w)) d.constraints.push_back("added: " + w);
  }
  for (std::size_t h = 0; h < after.codes.size(); ++h) {
    const std::string held = after.code_name(static_cast<int>(h));
    const int oh = code_by_name(before, held);
    if (oh < 0) continue;
    for (std::size_t r = 0; r < after.codes.size(); ++r) {
      const std::string req = after.code_name(static_cast<int>(r));
      const int orq = code_by_name(before, req);
      if (orq < 0) continue;
      for (std::size_t rel = 0; rel < kRelationCount; ++rel) {
        const auto relation = static_cast<Relation>(rel);
        const Verdict b = before.verdict(oh, orq, relation),
                      a = after.verdict(static_cast<int>(h), static_cast<int>(r), relation);
        if (a == b) continue;
        if (!d.cells.empty() && d.cells.back().held == held && d.cells.back().requested == req &&
            d.cells.back().before == b && d.cells.back().after == a)
          d.cells.back().relations.push_back(relation);
        else
          d.cells.push_back(CellChange{{held, req, {relation}}, b, a});
      }
    }
  }
  d.added_rules = rules_naming(after, codes_missing_from(after, before));
  d.removed_rules = rules_naming(before, codes_missing_from(before, after));
  for (const CellChange& c : d.cells) note_grid_credit(after, c.held, c.requested, c.relations, d);
  for (const RuleLine& r : d.added_rules) note_grid_credit(after, r.held, r.requested, r.relations, d);
  return d;
}

namespace {

// A line of the report about no one cell.
Problem plain_line(std::string text) { return Problem{"", "", "", Severity::error, std::move(text)}; }

// A line about the cell of held code `held` and requested code `requested`
// ("op.role" names): located by them, never by its text.
Problem cell_line(const std::string& held, const std::string& requested, std::string text, Severity s = Severity::error) {
  const std::size_t dot = held.find('.');
  return Problem{held.substr(0, dot), requested.substr(0, requested.find('.')),
                 dot == std::string::npos ? "" : held.substr(dot + 1), s, std::move(text)};
}

std::string summary_line(const MatrixDiff& d, std::size_t stricter, std::size_t looser) {
  if (d.empty()) return "no changes to operations, roles or verdicts";
  return fmt::format(
      "{} operation(s) added, {} removed; {} changed cell line(s): {} stricter, {} looser; {} added rule line(s), "
      "{} removed rule line(s)",
      d.added_ops.size(), d.removed_ops.size(), d.cells.size(), stricter, looser, d.added_rules.size(),
      d.removed_rules.size());
}

}  // namespace

std::vector<Problem> diff_lines(const Matrix& before, const Matrix& after, const MatrixDiff& d) {
  std::vector<Problem> out;
  out.push_back(plain_line(
      fmt::format("{} (version {}) -> {} (version {})", before.source, before.version, after.source, after.version)));
  const std::string fb = before.fingerprint(), fa = after.fingerprint();
  out.push_back(plain_line(fb == fa ? fmt::format("fingerprint {} (unchanged: the same rules)", fa)
                                    : fmt::format("fingerprint {} -> {} (the rules changed)", fb, fa)));
  for (const auto& op : d.added_ops) out.push_back(Problem{op, "", "", Severity::error, "added operation: " + op});
  for (const auto& op : d.removed_ops) out.push_back(Problem{op, "", "", Severity::error, "removed operation: " + op});
  for (const auto& r : d.added_roles) out.push_back(plain_line("added role: " + r));
  for (const auto& r : d.removed_roles) out.push_back(plain_line("removed role: " + r));
  for (const auto& c : d.constraints) out.push_back(plain_line("constraint " + c));
  std::size_t stricter = 0, looser = 0;
  for (const CellChange& c : d.cells) {
    const char* dir = direction(c.before, c.after);
    stricter += std::string_view(dir) == "stricter";
    looser += std::string_view(dir) == "looser";
    out.push_back(cell_line(c.held, c.requested,
                            fmt::format("changed: {} held, {} requested, {}: {} -> {} ({})", c.held, c.requested,
                                        relations_phrase(c.relations), verdict_name(c.before), verdict_name(c.after), dir)));
  }
  for (const RuleLine& r : d.added_rules) out.push_back(cell_line(r.held, r.requested, added_rule_text(r)));
  for (const RuleLine& r : d.removed_rules) out.push_back(cell_line(r.held, r.requested, removed_rule_text(r)));
  out.push_back(plain_line(summary_line(d, stricter, looser)));
  for (std::size_t i = 0; i < d.credited_to_grid.size(); ++i)
    out.push_back(cell_line(
        d.credited_codes[i].first, d.credited_codes[i].second,
        fmt::format("warning: {}: changed or added, but credited to the original grid (\"origin\": \"grid\", maybe "
                    "the file's default): give the rule \"origin\": \"owner\" (or \"decision\" with its \"decision\" "
                    "text)",
                    d.credited_to_grid[i]),
        Severity::warning));
  if (fb != fa && before.version == after.version)
    out.push_back(Problem{"", "", "", Severity::warning,
                          fmt::format("warning: the rules changed but \"version\" is still {}", after.version)});
  return out;
}

std::string diff_report(const Matrix& before, const Matrix& after, const MatrixDiff& d) {
  std::string out;
  for (const Problem& line : diff_lines(before, after, d)) out += line.text + "\n";
  return out;
}

}  // namespace pathlock::matrix
