// The cell model of the renderings (see cells.hpp).
#include "matrix/cells.hpp"

#include <array>
#include <set>

#include "matrix/explain.hpp"
#include "matrix/text.hpp"

namespace pathlock::matrix {

// Names in the order of the enumerators (cells.hpp).
std::string_view tone_name(Tone t) {
  static constexpr std::array<std::string_view, 4> kNames{"allow", "deny", "unrelated", "mixed"};
  return kNames.at(static_cast<std::size_t>(t));
}

std::string_view piece_kind_name(PieceKind k) {
  static constexpr std::array<std::string_view, 5> kNames{"grid", "decision", "owner", "review", "asymmetric"};
  return kNames.at(static_cast<std::size_t>(k));
}

std::string parts_label(const std::vector<CellPart>& parts, Origin o) {
  std::string out;
  for (const CellPart& p : parts)
    if (p.origin == o) out += p.label;
  return out;
}

std::string CellView::label(Origin o) const {
  return parts_label(parts, o);
}

namespace {

// The part of one held role's rule. A rule whose verdicts state origins of
// their own (an owner's change to some verdicts only) is shown as the most
// specific of them: the owner's, else a shipped decision, with its reason.
CellPart rule_part(const Matrix& m, const RoleDef& role, const Rule& r, int requested_op) {
  CellPart part{rule_label(m, role, r, requested_op), r.origin, r.decision, r.review};
  const OpDef& req = m.ops[static_cast<std::size_t>(requested_op)];
  for (const Origin o : {Origin::owner, Origin::decision}) {
    if (part.origin == o) return part;
    for (std::size_t rr = 0; rr < req.roles.size(); ++rr)
      for (std::size_t rel = 0; rel < kRelationCount; ++rel)
        if (const Credit c = resolve_credit(r, static_cast<int>(rr), static_cast<Relation>(rel)); c.origin == o) {
          part.origin = o;
          part.why = c.decision;
          return part;
        }
  }
  return part;
}

}  // namespace

std::vector<CellPart> cell_parts(const Matrix& m, int held_op, int requested_op) {
  std::vector<CellPart> parts;
  const OpDef& held = m.ops[static_cast<std::size_t>(held_op)];
  const Cell& cell = m.grid[static_cast<std::size_t>(held_op)][static_cast<std::size_t>(requested_op)];
  if (cell.bare) {  // a plain verdict is spelled "√", refinements "(×src √dst)"
    parts.push_back(rule_part(m, RoleDef{"", {""}, ""}, cell.held_roles.front(), requested_op));
  } else {
    for (std::size_t hr = 0; hr < held.roles.size(); ++hr)
      parts.push_back(rule_part(m, held.roles[hr], cell.held_roles[hr], requested_op));
  }
  return parts;
}

CellView cell_view(const Matrix& m, int held_op, int requested_op, const std::vector<Asymmetry>& asym) {
  CellView v;
  v.held_op = held_op;
  v.requested_op = requested_op;
  v.parts = cell_parts(m, held_op, requested_op);
  for (const CellPart& p : v.parts) v.review = v.review || !p.review.empty();

  std::set<Verdict> seen;
  for (std::size_t hc = 0; hc < m.codes.size(); ++hc)
    if (m.codes[hc].op == held_op)
      for (std::size_t rc = 0; rc < m.codes.size(); ++rc)
        if (m.codes[rc].op == requested_op)
          for (std::size_t rel = 0; rel < kRelationCount; ++rel)
            seen.insert(m.verdict(static_cast<int>(hc), static_cast<int>(rc), static_cast<Relation>(rel)));
  v.tone = seen.size() != 1             ? Tone::mixed
           : seen.count(Verdict::allow) ? Tone::allow
           : seen.count(Verdict::deny)  ? Tone::deny
                                        : Tone::unrelated;
  for (const Asymmetry& a : asym) {
    const int fo = m.codes[static_cast<std::size_t>(a.first)].op, so = m.codes[static_cast<std::size_t>(a.second)].op;
    v.asymmetric = v.asymmetric || (fo == held_op && so == requested_op) || (fo == requested_op && so == held_op);
  }
  v.explain = explain(m, held_op, requested_op, asym);
  v.pieces = cell_pieces(v);
  return v;
}

std::vector<CellPiece> cell_pieces(const CellView& v) {
  std::vector<CellPiece> out;
  if (const std::string g = v.label(Origin::grid); !g.empty()) out.push_back({PieceKind::grid, g});
  if (const std::string d = v.label(Origin::decision); !d.empty()) out.push_back({PieceKind::decision, "[" + d + "]"});
  if (const std::string o = v.label(Origin::owner); !o.empty()) out.push_back({PieceKind::owner, "{" + o + "}"});
  if (v.review) out.push_back({PieceKind::review, std::string(kReviewMark)});
  if (v.asymmetric) out.push_back({PieceKind::asymmetric, std::string(kAsymmetricMark)});
  return out;
}

std::vector<LegendEntry> legend() {
  const std::string same(relation_word(Relation::same)), inside(relation_word(Relation::held_ancestor)),
      above(relation_word(Relation::held_descendant)), otherwise(kElseWord);
  return {
      {{PieceKind::grid, "√"}, "allowed"},
      {{PieceKind::grid, "×"}, "refused"},
      {{PieceKind::grid, "/"}, "the two do not interact (allowed)"},
      {{PieceKind::grid, "A×B√"},
       "a verdict per target (role) of the held operation, named by the role's symbols: refused where the request "
       "touches the held A, allowed where it touches B; a bare mark covers every target"},
      {{PieceKind::grid, "a(×src √dst)"},
       "by the request's role: refused where its src overlaps the held a, allowed where its dst does"},
      {{PieceKind::grid, "A(√" + inside + " ×" + otherwise + ")"},
       "by how the paths relate (" + same + ": the same path; " + inside + ": the request is inside the held path; " +
           above + ": the request is on an ancestor of the held path; " + otherwise + ": every other case)"},
      {{PieceKind::grid, "A×"}, "plain, from the original grid"},
      {{PieceKind::decision, "[a√]"}, "a shipped decision where the original grid is silent"},
      {{PieceKind::owner, "{a√}"}, "the matrix owner's own rule"},
      {{PieceKind::review, std::string(kReviewMark)}, "a rule still marked for review (\"review\" in the file)"},
      {{PieceKind::asymmetric, std::string(kAsymmetricMark)},
       "asymmetric: the outcome depends on which operation came first"},
  };
}

std::vector<std::vector<CellView>> cell_views(const Matrix& m) {
  const auto asym = asymmetric_pairs(m);
  std::vector<std::vector<CellView>> out(m.ops.size());
  for (std::size_t h = 0; h < m.ops.size(); ++h)
    for (std::size_t r = 0; r < m.ops.size(); ++r)
      out[h].push_back(cell_view(m, static_cast<int>(h), static_cast<int>(r), asym));
  return out;
}

std::string original_label(const Matrix& m, int held_op, int requested_op) {
  return parts_label(cell_parts(m, held_op, requested_op), Origin::grid);
}

}  // namespace pathlock::matrix
