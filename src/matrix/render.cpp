// Markdown and HTML renderings of the grid (see render.hpp).
//
// The text of a cell and the legend come from the cell model (cells.hpp:
// CellView::pieces, legend()); here each kind of piece only gets its style,
// the same in both outputs:
//   grid        plain               A×B√
//   decision    bold / italic brown [a√]
//   owner       italic / bold blue  {a√}
//   review, asymmetric              ⚑ ⇄
// HTML adds the colour of the cell (Tone) and the explain() text as the
// cell's tooltip (title attribute). Adding a fact: cells.hpp, then its style
// here.
#include "matrix/render.hpp"

#include <fmt/format.h>

#include "matrix/cells.hpp"
#include "matrix/text.hpp"

namespace pathlock::matrix {
namespace {

constexpr std::string_view kAsymMark = kAsymmetricMark;

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
      "(`pathlock matrix render --format html`) shows that explanation when you point at a cell.\n\n"
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
      kAsymMark);
  for (const Asymmetry& a : asymmetric_pairs(m)) out += "- " + asymmetry_text(m, a) + "\n";
  return out;
}

std::string emit_html(const Matrix& m) {
  std::string out = fmt::format(
      "<!DOCTYPE html>\n<!-- Generated from {} by pathlock-matrixc. Do not edit. -->\n"
      "<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Matrix {} {}</title>\n<style>\n"
      "body{{font-family:system-ui,\"Noto Sans CJK SC\",\"Source Han Sans SC\",\"PingFang SC\",\"Microsoft YaHei\","
      "\"WenQuanYi Zen Hei\",sans-serif;margin:2em;color:#222}}\n"
      "table{{border-collapse:collapse}}td,th{{border:1px solid #bbb;padding:.25em .35em;text-align:center}}\n"
      "table.grid{{font-size:14px}}\n"
      "td{{cursor:help;white-space:nowrap}}th.row{{text-align:left;white-space:nowrap}}\n"
      ".allow{{background:#e3f6e3}}.deny{{background:#fbe1e1}}.unrelated{{background:#eee;color:#777}}"
      ".mixed{{background:#fff4d6}}\n"
      ".decision{{font-style:italic;color:#7a4b00}}.owner{{color:#1a4fa0;font-weight:bold}}\n"
      ".review{{color:#c00}}.asym{{color:#6a1b9a;font-weight:bold}}td.asymmetric{{outline:2px dashed "
      "#6a1b9a;outline-offset:-3px}}\n"
      ".legend td{{text-align:left;cursor:auto}}.swatch{{width:2.5em}}\n"
      "</style></head><body>\n<h1>Matrix <code>{}</code> version {}</h1>\n<p>{}</p>\n<p>Fingerprint "
      "<code>{}</code></p>\n"
      "<p>Row: the operation holding its lock. Column: the operation requested afterwards. "
      "Point at a cell for its explanation (<code>pathlock matrix explain HELD REQUESTED</code>).</p>\n",
      html_escape(m.source), html_escape(m.name), html_escape(m.version), html_escape(m.name), html_escape(m.version),
      html_escape(m.description), m.fingerprint());
  out +=
      "<table class=\"legend\">\n"
      "<tr><td class=\"swatch allow\"></td><td>every role pair and path relation allowed</td></tr>\n"
      "<tr><td class=\"swatch deny\"></td><td>every role pair and path relation refused</td></tr>\n"
      "<tr><td class=\"swatch unrelated\"></td><td>the two do not interact (allowed)</td></tr>\n"
      "<tr><td class=\"swatch mixed\"></td><td>mixed: depends on the target (A, a, B) or the path relation</td></tr>\n"
      "<tr><td class=\"swatch asymmetric\"></td><td>part of an asymmetric pair (dashed frame)</td></tr>\n";
  for (const LegendEntry& e : legend())
    out += fmt::format("<tr><td>{}</td><td>{}</td></tr>\n", html_piece(e.sample), html_escape(e.meaning));
  out += "</table>\n<p></p>\n";
  const auto views = cell_views(m);
  out += "<table class=\"grid\">\n<tr><th>held \\ requested</th>";
  for (const OpDef& op : m.ops)
    out += fmt::format("<th>{}<br><small>{}</small></th>", html_escape(op.name), html_escape(op.label));
  out += "</tr>\n";
  for (std::size_t h = 0; h < m.ops.size(); ++h) {
    out += fmt::format("<tr><th class=\"row\">{}{}<br><small>{}</small></th>", html_escape(m.ops[h].name),
                       m.ops[h].example.empty() ? "" : " <code>" + html_escape(m.ops[h].example) + "</code>",
                       html_escape(m.ops[h].label));
    for (std::size_t r = 0; r < m.ops.size(); ++r) {
      const CellView& v = views[h][r];
      const std::string text = joined_pieces(v.pieces, html_piece);
      out += fmt::format("<td class=\"{}{}\" title=\"{}\">{}</td>", tone_name(v.tone),
                         v.asymmetric ? " asymmetric" : "", html_escape(v.explain), text);
    }
    out += "</tr>\n";
  }
  out += "</table>\n";
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
  if (const auto review = warnings(m); !review.empty()) {
    out += fmt::format("<h2>Marked for review <span class=\"review\">{}</span></h2>\n<ul>\n", kReviewMark);
    for (const std::string& w : review) out += "<li>" + html_escape(w) + "</li>\n";
    out += "</ul>\n";
  }
  out += fmt::format("<h2>Asymmetric pairs <span class=\"asym\">{}</span></h2>\n<ul>\n", kAsymMark);
  for (const Asymmetry& a : asymmetric_pairs(m)) out += "<li>" + html_escape(asymmetry_text(m, a)) + "</li>\n";
  out += "</ul>\n</body></html>\n";
  return out;
}

}  // namespace pathlock::matrix
