// Markdown and HTML renderings of the grid (see render.hpp).
//
// The text of a cell and the legend come from the cell model (cells.hpp:
// CellView::pieces, legend()); here each kind of piece only gets its style,
// the same in both outputs:
//   grid        plain               A×B√
//   decision    bold / italic brown [a√]
//   owner       italic / bold blue  {a√}
//   review, asymmetric              ⚑ ⇄
// HTML adds the colour of the cell (Tone), and links each cell to its
// explain() text, listed and numbered below the grid (also the cell's
// tooltip; the number shows on paper). Adding a fact: cells.hpp, then its
// style here.
#include "matrix/render.hpp"

#include <fmt/format.h>

#include "matrix/cells.hpp"
#include "matrix/text.hpp"

namespace pathlock::matrix {
namespace {

// A piece of cell text in Markdown.
std::string markdown_piece(const CellPiece& p) {
  switch (p.kind) {
    case PieceKind::decision:
      return "**" + p.text + "**";
    case PieceKind::owner:
      return "*" + p.text + "*";
    case PieceKind::grid:
    case PieceKind::review:
    case PieceKind::asymmetric:
      break;
  }
  return p.text;
}

// A piece of cell text in HTML (escaped).
std::string html_piece(const CellPiece& p) {
  switch (p.kind) {
    case PieceKind::grid:
      return html_escape(p.text);
    case PieceKind::decision:
      return "<span class=\"decision\">" + html_escape(p.text) + "</span>";
    case PieceKind::owner:
      return "<span class=\"owner\">" + html_escape(p.text) + "</span>";
    case PieceKind::review:
      return "<span class=\"review\">" + html_escape(p.text) + "</span>";
    case PieceKind::asymmetric:
      return "<span class=\"asym\">" + html_escape(p.text) + "</span>";
  }
  return html_escape(p.text);
}

template <typename Spell>
std::string joined_pieces(const std::vector<CellPiece>& pieces, Spell&& spell) {
  std::string out;
  for (const CellPiece& p : pieces) out += (out.empty() ? "" : " ") + spell(p);
  return out;
}

std::string roles_text(const OpDef& op) {
  std::string roles;
  for (const RoleDef& r : op.roles) {
    std::string syms;
    for (const auto& s : r.symbols) syms += (syms.empty() ? "" : ", ") + s;
    roles += fmt::format("{}`{}` ({})", roles.empty() ? "" : "; ", r.name, syms);
  }
  for (const auto& [inner, outer] : op.not_inside)
    roles += fmt::format("; `{}` may not be `{}` or inside it", op.roles[static_cast<std::size_t>(inner)].name,
                         op.roles[static_cast<std::size_t>(outer)].name);
  return roles;
}

// Calls fn(held op, requested op, held role, rule) for every rule of origin `o`.
template <typename Fn>
void for_rules(const Matrix& m, Origin o, Fn&& fn) {
  for (std::size_t h = 0; h < m.ops.size(); ++h)
    for (std::size_t r = 0; r < m.ops.size(); ++r) {
      const Cell& cell = m.grid[h][r];
      for (std::size_t hr = 0; hr < cell.held_roles.size(); ++hr) {
        if (cell.held_roles[hr].origin == o) fn(h, r, hr, cell.held_roles[hr]);
        if (cell.bare) break;  // one rule for every role
      }
    }
}

// "move_file `src`" (Markdown) or "move_file <code>src</code>" (HTML, escaped).
std::string held_target(const Matrix& m, std::size_t h, std::size_t hr, const Cell& cell, bool html = false) {
  if (cell.bare) return html ? html_escape(m.ops[h].name) : m.ops[h].name;
  if (html) return fmt::format("{} <code>{}</code>", html_escape(m.ops[h].name), html_escape(m.ops[h].roles[hr].name));
  return fmt::format("{} `{}`", m.ops[h].name, m.ops[h].roles[hr].name);
}

std::string markdown_cell(const CellView& v) {
  return joined_pieces(v.pieces, markdown_piece);
}

}  // namespace

std::string emit_markdown(const Matrix& m) {
  const auto views = cell_views(m);
  std::string out = fmt::format(
      "<!-- Generated from {} by pathlock-matrixc. Do not edit. -->\n"
      "# Matrix `{}` version {}\n\n{}\n\nFingerprint: `{}`\n\n"
      "Row = operation holding its lock; column = operation requested afterwards.\n"
      "What each cell means is defined in [matrix.md](matrix.md); "
      "`pathlock matrix explain HELD REQUESTED` explains one cell, and the HTML rendering "
      "(`pathlock matrix render --format html`) links each cell to that explanation.\n\n"
      "Legend:\n\n",
      m.source, m.name, m.version, m.description, m.fingerprint());
  for (const LegendEntry& e : legend()) out += fmt::format("- {} = {}\n", markdown_piece(e.sample), e.meaning);
  out += "\n";
  out += markdown_grid(m, [&](std::size_t h, std::size_t r) { return markdown_cell(views[h][r]); });
  out += "\n## Operations\n\n| op | label | roles |\n|---|---|---|\n";
  for (const OpDef& op : m.ops) out += fmt::format("| `{}` | {} | {} |\n", op.name, op.label, roles_text(op));
  struct Section {
    Origin origin;
    const char* title;
  };
  for (const Section& s : {Section{Origin::decision, "Shipped decisions where the grid is silent"},
                           Section{Origin::owner, "The owner's own rules"}}) {
    std::string rows;
    for_rules(m, s.origin, [&](std::size_t h, std::size_t r, std::size_t hr, const Rule& rule) {
      rows += fmt::format(
          "| {} | {} | {} | {} |\n", held_target(m, h, hr, m.grid[h][r]), m.ops[r].name,
          rule_label(m, m.grid[h][r].bare ? RoleDef{"", {""}, ""} : m.ops[h].roles[hr], rule, static_cast<int>(r)),
          rule.decision);
    });
    if (rows.empty() && s.origin == Origin::owner) continue;
    out +=
        fmt::format("\n## {}\n\n| held op, target | requested op | rule | why |\n|---|---|---|---|\n{}", s.title, rows);
  }
  const auto review = warnings(m);
  if (!review.empty()) {
    out += fmt::format("\n## Marked for review {}\n\n", kReviewMark);
    for (const std::string& w : review) out += "- " + w + "\n";
  }
  out += fmt::format(
      "\n## Asymmetric pairs {}\n\nThe outcome depends on which operation came first. "
      "Each line: A held and B requested, then B held and A requested.\n\n",
      kAsymmetricMark);
  for (const Asymmetry& a : asymmetric_pairs(m)) out += "- " + asymmetry_text(m, a) + "\n";
  return out;
}

namespace {

// The page's style. Sized so that the shipped matrix plus two operations (13
// columns) fits a 1600 px window: headers wrap (label, then the op name,
// breakable after each '_'), cell text wraps between its pieces, small
// padding. :target highlights the cell or explanation a link leads to; on
// paper each cell shows the number of its explanation.
std::string html_style() {
  return fmt::format(
      "body{{font-family:{};margin:1em;color:#222}}\n"
      "table{{border-collapse:collapse}}td,th{{border:1px solid #bbb;padding:.25em .6em;text-align:center}}\n"
      "table.grid{{font-size:13px}}table.grid th{{font-weight:normal;vertical-align:bottom}}\n"
      "table.grid th.row{{text-align:left;vertical-align:middle}}\n"
      "th .op{{display:block;font-size:11px;color:#555}}th .ex{{font-size:11px;color:#555}}"
      "th.row .op{{display:inline;margin-right:.4em}}th.row .label{{display:block}}\n"
      "td .piece{{white-space:nowrap}}td .piece+.piece{{margin-left:.15em}}\n"
      "td a{{color:inherit;text-decoration:none}}td a:hover{{text-decoration:underline}}\n"
      ".allow{{background:#e3f6e3}}.deny{{background:#fbe1e1}}.unrelated{{background:#eee;color:#777}}"
      ".mixed{{background:#fff4d6}}\n"
      ".decision{{font-style:italic;color:#7a4b00}}.owner{{color:#1a4fa0;font-weight:bold}}\n"
      ".review{{color:#c00}}.asym{{color:#6a1b9a;font-weight:bold}}.asymmetric{{outline:2px dashed "
      "#6a1b9a;outline-offset:-3px}}\n"
      "ul.legend{{font-size:13px;columns:2 36em;column-gap:2em;list-style:none;padding:0;margin:0 0 1em}}\n"
      "ul.legend li{{break-inside:avoid;margin:0 0 .25em 9em;text-indent:-9em}}\n"
      ".sample{{display:inline-block;min-width:8.5em;text-indent:0;font-weight:normal}}\n"
      ".swatch{{display:inline-block;width:8em;height:1em;vertical-align:middle;border:1px solid #bbb;"
      "text-indent:0}}\n"
      "td{{scroll-margin-top:30vh}}td:target{{outline:3px solid #e08a00;outline-offset:-3px}}\n"
      "ol.explanations pre{{white-space:pre-wrap;margin:.2em 0;font-family:inherit;font-size:13px;line-height:1.4}}\n"
      ".back{{float:right;font-size:12px;margin-left:1em}}\n"
      "ol.explanations li{{margin-bottom:.3em}}ol.explanations li:target{{background:#fff4d6;outline:2px solid "
      "#e08a00}}\n"
      ".n{{display:none}}@media print{{.n{{display:inline;font-size:9px;color:#555}}.back{{display:none}}"
      "td,.swatch{{-webkit-print-color-adjust:exact;print-color-adjust:exact}}}}\n",
      kMatrixFontFamily);
}

// An operation's name with a break opportunity after each '_' (escaped).
std::string breakable_name(const std::string& name) {
  std::string out;
  for (const char c : name) out += c == '_' ? std::string("_<wbr>") : html_escape(std::string(1, c));
  return out;
}

// The colours (HTML only), then legend(): one list, in two columns.
std::string html_legend() {
  std::string out =
      "<ul class=\"legend\">\n"
      "<li><span class=\"swatch allow\"></span> every role pair and path relation allowed</li>\n"
      "<li><span class=\"swatch deny\"></span> every role pair and path relation refused</li>\n"
      "<li><span class=\"swatch unrelated\"></span> the two do not interact (allowed)</li>\n"
      "<li><span class=\"swatch mixed\"></span> mixed: depends on the target (A, a, B) or the path relation</li>\n"
      "<li><span class=\"swatch asymmetric\"></span> part of an asymmetric pair (dashed frame)</li>\n";
  for (const LegendEntry& e : legend())
    out += fmt::format("<li><b class=\"sample\">{}</b> {}</li>\n", html_piece(e.sample), html_escape(e.meaning));
  return out + "</ul>\n";
}

// The anchors of cell (h, r) and of its explanation.
std::string cell_id(std::size_t h, std::size_t r) { return fmt::format("c-{}-{}", h, r); }
std::string explanation_id(std::size_t h, std::size_t r) { return fmt::format("x-{}-{}", h, r); }

std::string html_head(const Matrix& m) {
  return fmt::format(
      "<!DOCTYPE html>\n<!-- Generated from {} by pathlock-matrixc. Do not edit. -->\n"
      "<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>Matrix {} {}</title>\n"
      "<style>\n{}</style></head><body>\n<h1>Matrix <code>{}</code> version {}</h1>\n<p>{}</p>\n<p>Fingerprint "
      "<code>{}</code></p>\n"
      "<p>Row: the operation holding its lock. Column: the operation requested afterwards. "
      "Click or tap a cell for its explanation, listed <a href=\"#explanations\">below the grid</a> "
      "(<code>pathlock matrix explain HELD REQUESTED</code>); on paper, each cell's small number is its "
      "explanation's.</p>\n",
      html_escape(m.source), html_escape(m.name), html_escape(m.version), html_style(), html_escape(m.name),
      html_escape(m.version), html_escape(m.description), m.fingerprint());
}

std::string html_op_heading(const OpDef& op) {
  const std::string name = "<code class=\"op\">" + breakable_name(op.name) + "</code>";
  return op.label == op.name ? name : "<span class=\"label\">" + html_escape(op.label) + "</span>" + name;
}

// One <td> of the grid: the cell's pieces, linked to its explanation.
std::string html_cell(const CellView& v, std::size_t h, std::size_t r, std::size_t n) {
  std::string text;
  for (const CellPiece& p : v.pieces)
    text += (text.empty() ? "" : " ") + std::string("<span class=\"piece\">") + html_piece(p) + "</span>";
  return fmt::format("<td id=\"{}\" class=\"{}{}\" title=\"{}\"><a href=\"#{}\">{}</a><sup class=\"n\">{}</sup></td>",
                     cell_id(h, r), tone_name(v.tone), v.asymmetric ? " asymmetric" : "", html_escape(v.explain),
                     explanation_id(h, r), text, h * n + r + 1);
}

std::string html_grid(const Matrix& m, const std::vector<std::vector<CellView>>& views) {
  const std::size_t n = m.ops.size();
  std::string out = "<table class=\"grid\">\n<tr><th>held \\ requested</th>";
  for (const OpDef& op : m.ops) out += "<th scope=\"col\">" + html_op_heading(op) + "</th>";
  out += "</tr>\n";
  for (std::size_t h = 0; h < n; ++h) {
    out += "<tr><th class=\"row\" scope=\"row\">" + html_op_heading(m.ops[h]);
    if (!m.ops[h].example.empty()) out += "<code class=\"ex\">" + html_escape(m.ops[h].example) + "</code>";
    out += "</th>";
    for (std::size_t r = 0; r < n; ++r) out += html_cell(views[h][r], h, r, n);
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

// The shipped decisions and the owner's rules (when there are any), as lists.
std::string html_rule_lists(const Matrix& m) {
  std::string out;
  for (const Origin o : {Origin::decision, Origin::owner}) {
    std::string items;
    for_rules(m, o, [&](std::size_t h, std::size_t r, std::size_t hr, const Rule& rule) {
      items += fmt::format("<li>{} held, {} requested: <b>{}</b>{}</li>\n", held_target(m, h, hr, m.grid[h][r], true),
                           html_escape(m.ops[r].name),
                           html_escape(rule_label(m, m.grid[h][r].bare ? RoleDef{"", {""}, ""} : m.ops[h].roles[hr],
                                                  rule, static_cast<int>(r))),
                           rule.decision.empty() ? "" : ": " + html_escape(rule.decision));
    });
    if (items.empty() && o == Origin::owner) continue;
    out += fmt::format("<h2>{}</h2>\n<ul>\n{}</ul>\n",
                       o == Origin::decision ? "Shipped decisions" : "The owner's own rules", items);
  }
  return out;
}

// The rules marked for review, the asymmetric pairs, and every cell's explanation.
std::string html_notes(const Matrix& m, const std::vector<std::vector<CellView>>& views) {
  std::string out;
  if (const auto review = warnings(m); !review.empty()) {
    out += fmt::format("<h2>Marked for review <span class=\"review\">{}</span></h2>\n<ul>\n", kReviewMark);
    for (const std::string& w : review) out += "<li>" + html_escape(w) + "</li>\n";
    out += "</ul>\n";
  }
  out += fmt::format("<h2>Asymmetric pairs <span class=\"asym\">{}</span></h2>\n<ul>\n", kAsymmetricMark);
  for (const Asymmetry& a : asymmetric_pairs(m)) out += "<li>" + html_escape(asymmetry_text(m, a)) + "</li>\n";
  out += "</ul>\n<h2 id=\"explanations\">Explanations, cell by cell</h2>\n<ol class=\"explanations\">\n";
  for (std::size_t h = 0; h < m.ops.size(); ++h)
    for (std::size_t r = 0; r < m.ops.size(); ++r)
      out += fmt::format("<li id=\"{}\"><a class=\"back\" href=\"#{}\">back to the cell</a><pre>{}</pre></li>\n",
                         explanation_id(h, r), cell_id(h, r), html_escape(views[h][r].explain));
  return out + "</ol>\n";
}

}  // namespace

std::string emit_html(const Matrix& m) {
  const auto views = cell_views(m);
  return html_head(m) + html_legend() + html_grid(m, views) + html_rule_lists(m) + html_notes(m, views) +
         "</body></html>\n";
}

}  // namespace pathlock::matrix
