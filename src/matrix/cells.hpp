// The one cell model both renderings (Markdown and HTML) and the product
// doc are drawn from: per cell of the grid, its label split by origin, its
// colour, whether it is part of an asymmetric pair, whether a rule still
// waits for review, and its explanation.
//
// Which facts a cell has, and the text that spells each (`pieces`: "A×B√",
// "[a√]", "{A×}", "⚑", "⇄"), are decided here, once; a renderer decides only
// how to style each kind of piece (Markdown emphasis, HTML classes). The
// legend of every rendering is legend(). Adding a fact: add it to CellView,
// fill it in cell_view(), give it a piece and a legend entry here.
#pragma once

#include <string>
#include <vector>

#include "matrix/model.hpp"

namespace pathlock::matrix {

// The colour of a cell: every (role, role, relation) of the cell allows,
// refuses, does not interact, or the cell mixes verdicts.
enum class Tone { allow, deny, unrelated, mixed };
std::string_view tone_name(Tone t);

struct CellPart {
  std::string label;  // "A×", "a(×src √dst)", or "√" for a bare cell
  Origin origin = Origin::owner;
  std::string why;     // the rule's "decision" text
  std::string review;  // non-empty while marked for review
};

// The marks of the two cell facts that are not labels.
inline constexpr std::string_view kReviewMark = "⚑";      // a rule still marked for review
inline constexpr std::string_view kAsymmetricMark = "⇄";  // part of an asymmetric pair

// One piece of a cell's text, in reading order. Its kind says what it is
// (and so how a renderer styles it); its text is already spelled:
//   grid        the original grid's label, plain     A×B√
//   decision    a shipped decision, in brackets      [a√]
//   owner       the owner's rule, in braces          {A×}
//   review      kReviewMark                          ⚑
//   asymmetric  kAsymmetricMark                      ⇄
enum class PieceKind { grid, decision, owner, review, asymmetric };
struct CellPiece {
  PieceKind kind = PieceKind::grid;
  std::string text;
};
std::string_view piece_kind_name(PieceKind k);  // grid, decision, owner, review, asymmetric

struct CellView {
  int held_op = 0;
  int requested_op = 0;
  std::vector<CellPart> parts;  // in held-role order; one part for a bare cell
  Tone tone = Tone::allow;
  bool asymmetric = false;  // some role pair gives a different outcome the other way round
  bool review = false;      // some rule of the cell is marked "review"
  std::string explain;      // explain() text
  std::vector<CellPiece> pieces;  // the cell's text, in order (never empty: a cell always has a label)

  // The labels of the parts of origin `o`, concatenated ("" if none).
  std::string label(Origin o) const;
};

// The labelled parts of one cell (what cell_view() puts in `parts`).
std::vector<CellPart> cell_parts(const Matrix& m, int held_op, int requested_op);
// The labels of the parts of origin `o`, concatenated ("" if none).
std::string parts_label(const std::vector<CellPart>& parts, Origin o);

// The view of one cell; `asym` is asymmetric_pairs(m).
CellView cell_view(const Matrix& m, int held_op, int requested_op, const std::vector<Asymmetry>& asym);
// Every cell, [held op][requested op].
std::vector<std::vector<CellView>> cell_views(const Matrix& m);

// The cell as the original grid writes it ("A×B√"): the parts of origin grid.
std::string original_label(const Matrix& m, int held_op, int requested_op);

// The pieces a cell shows, from its parts and marks (what cell_view() puts
// in `pieces`).
std::vector<CellPiece> cell_pieces(const CellView& v);

// One line of the legend every rendering shows: a sample spelled as cells
// spell it, and what it means.
struct LegendEntry {
  CellPiece sample;
  std::string meaning;
};
// The legend of the cell text: verdict marks, targets, refinements and the
// words inside parentheses, origins, and the two marks.
std::vector<LegendEntry> legend();

}  // namespace pathlock::matrix
