// Code, tests and documents generated from a Matrix.
//
// Layout of the generated C++ header: enums for readable call sites, then one
// constexpr MatrixTable built by a constexpr lambda. The deny verdicts are
// folded into blockers[relation][requested code] bitmasks, which is all an
// engine needs at run time. (The Redis backend builds its Lua library from
// the table at run time: src/redis/library.cpp.)
#include "matrix/emit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace pathlock::matrix {
namespace {

std::string cxx_string(std::string_view s) {
  std::string out = "\"";
  for (const unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7F) {
      out += fmt::format("\\x{:02x}\"\"", c);  // split literal: next char is never a hex digit
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string html_escape(std::string_view s) {
  std::string out;
  for (const char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

CodeMask blocker_mask(const Matrix& m, Relation rel, int requested) {
  CodeMask mask = 0;
  for (std::size_t h = 0; h < m.codes.size(); ++h)
    if (m.verdict(static_cast<int>(h), requested, rel) == Verdict::deny) mask |= CodeMask{1} << h;
  return mask;
}

std::string rule_label(const Matrix& m, const RoleDef& held_role, const Rule& rule, int requested_op) {
  std::string text;
  for (const std::string& sym : held_role.symbols) {
    if (!rule.refined() && rule.verdict) {
      text += sym + std::string(verdict_mark(*rule.verdict));
      continue;
    }
    std::string parts;
    const OpDef& req = m.ops[static_cast<std::size_t>(requested_op)];
    for (const auto& [role, sub] : rule.by_requested_role) {
      parts += fmt::format("{}{}{}", parts.empty() ? "" : " ", sub.verdict ? verdict_mark(*sub.verdict) : "",
                           req.roles[static_cast<std::size_t>(role)].name);
      for (const auto& [rel, v] : sub.by_relation) parts += fmt::format(" {}{}", verdict_mark(v), relation_name(rel));
    }
    for (const auto& [rel, v] : rule.by_relation)
      parts += fmt::format("{}{}{}", parts.empty() ? "" : " ", verdict_mark(v), relation_name(rel));
    if (rule.verdict) parts += fmt::format(" {}otherwise", verdict_mark(*rule.verdict));
    text += fmt::format("{}({})", sym, parts);
  }
  return text;
}

std::string cell_text(const Matrix& m, int held_op, int requested_op, bool decisions) {
  const OpDef& held = m.ops[static_cast<std::size_t>(held_op)];
  const Cell& cell = m.grid[static_cast<std::size_t>(held_op)][static_cast<std::size_t>(requested_op)];
  if (cell.bare) {
    if (decisions) return "";
    const Rule& r = cell.held_roles.front();
    if (!r.refined() && r.verdict) return std::string(verdict_mark(*r.verdict));
    return rule_label(m, RoleDef{"", {""}}, r, requested_op);
  }
  std::string text;
  for (std::size_t hr = 0; hr < held.roles.size(); ++hr) {
    const Rule& rule = cell.held_roles[hr];
    if (rule.decision.empty() == decisions) continue;
    text += rule_label(m, held.roles[hr], rule, requested_op);
  }
  return text;
}

std::string relation_phrase(Relation rel);

std::string relations_phrase(const std::vector<Relation>& rels) {
  if (rels.size() == kRelationCount) return "wherever the paths overlap";
  std::string out;
  for (const Relation r : rels) out += (out.empty() ? "" : ", ") + relation_phrase(r);
  return out;
}

std::string asymmetry_text(const Matrix& m, const Asymmetry& a) {
  return fmt::format("{} held, {} requested: {}; the other way round: {} ({})", m.code_name(a.first),
                     m.code_name(a.second), verdict_name(a.forward), verdict_name(a.backward),
                     relations_phrase(a.relations));
}

std::string relation_phrase(Relation rel) {
  switch (rel) {
    case Relation::same: return "on the same path";
    case Relation::held_ancestor: return "requested inside the held path";
    case Relation::held_descendant: return "requested on an ancestor of the held path";
  }
  return "";
}

}  // namespace

std::string original_label(const Matrix& m, int held_op, int requested_op) {
  return cell_text(m, held_op, requested_op, false);
}

std::string decision_label(const Matrix& m, int held_op, int requested_op) {
  return cell_text(m, held_op, requested_op, true);
}

std::string emit_header(const Matrix& m, const std::string& cxx_namespace) {
  std::string out = fmt::format(
      "// Generated from {} (matrix '{}' version {}) by pathlock-matrixc. Do not edit.\n"
      "#pragma once\n\n#include <pathlock/matrix_table.hpp>\n\n#include <cstdint>\n\nnamespace {} {{\n\n",
      m.source, m.name, m.version, cxx_namespace);
  out += "enum class Op : std::uint8_t {\n";
  for (std::size_t o = 0; o < m.ops.size(); ++o) out += fmt::format("  {} = {},\n", m.ops[o].name, o);
  out += "};\n\nenum class Code : std::uint8_t {\n";
  for (std::size_t c = 0; c < m.codes.size(); ++c) {
    const OpDef& op = m.ops[static_cast<std::size_t>(m.codes[c].op)];
    out += fmt::format("  {}_{} = {},\n", op.name, op.roles[static_cast<std::size_t>(m.codes[c].role)].name, c);
  }
  out += "};\n\n";
  out += "inline constexpr pathlock::MatrixTable kMatrix = [] {\n  pathlock::MatrixTable t{};\n";
  out += fmt::format("  t.name = {};\n  t.version = {};\n  t.fingerprint = \"{}\";\n", cxx_string(m.name),
                     cxx_string(m.version), m.fingerprint());
  out += fmt::format("  t.op_count = {};\n", m.ops.size());
  for (std::size_t o = 0; o < m.ops.size(); ++o) {
    const OpDef& op = m.ops[o];
    out += fmt::format("  t.ops[{}].name = {};\n  t.ops[{}].label = {};\n", o, cxx_string(op.name), o,
                       cxx_string(op.label));
    out += fmt::format("  t.ops[{}].first_code = {};\n  t.ops[{}].role_count = {};\n", o,
                       m.code_of(static_cast<int>(o), 0), o, op.roles.size());
    for (std::size_t r = 0; r < op.roles.size(); ++r)
      out += fmt::format("  t.ops[{}].roles[{}] = {};\n", o, r, cxx_string(op.roles[r].name));
    out += fmt::format("  t.ops[{}].not_inside_count = {};\n", o, op.not_inside.size());
    for (std::size_t k = 0; k < op.not_inside.size(); ++k)
      out += fmt::format("  t.ops[{}].not_inside[{}] = {{{}, {}}};\n", o, k, op.not_inside[k].first,
                         op.not_inside[k].second);
  }
  out += fmt::format("  t.code_count = {};\n", m.codes.size());
  for (std::size_t c = 0; c < m.codes.size(); ++c)
    out += fmt::format("  t.codes[{}] = {{{}, {}}};  // {}\n", c, m.codes[c].op, m.codes[c].role,
                       m.code_name(static_cast<int>(c)));
  for (std::size_t rel = 0; rel < kRelationCount; ++rel)
    for (std::size_t r = 0; r < m.codes.size(); ++r)
      out += fmt::format("  t.blockers[{}][{}] = 0x{:016x}ULL;\n", rel, r,
                         blocker_mask(m, static_cast<Relation>(rel), static_cast<int>(r)));
  out += "  return t;\n}();\n\n}  // namespace " + cxx_namespace + "\n";
  return out;
}

std::string emit_cases(const Matrix& m) {
  // Scenario layout: the held target under test sits at /t/h/x; the held
  // lock's other targets at /t/held_other/ROLE, the request's other targets
  // at /t/req_other/ROLE, so only the pair under test can overlap.
  std::string out = fmt::format(
      "// Generated from {} by pathlock-matrixc. Do not edit.\n"
      "// PATHLOCK_MATRIX_CASE(held op, held targets, held role, held path,\n"
      "//                      requested op, requested targets, requested role, relation, granted)\n",
      m.source);
  const char* req_path[kRelationCount] = {"/t/h/x", "/t/h/x/y", "/t/h"};
  for (std::size_t h = 0; h < m.codes.size(); ++h) {
    const OpDef& hop = m.ops[static_cast<std::size_t>(m.codes[h].op)];
    const auto hrole = static_cast<std::size_t>(m.codes[h].role);
    std::string held;
    for (std::size_t r = 0; r < hop.roles.size(); ++r)
      held += fmt::format("{}{}={}", held.empty() ? "" : ",", hop.roles[r].name,
                          r == hrole ? std::string("/t/h/x") : "/t/held_other/" + hop.roles[r].name);
    for (std::size_t q = 0; q < m.codes.size(); ++q) {
      const OpDef& rop = m.ops[static_cast<std::size_t>(m.codes[q].op)];
      const auto rrole = static_cast<std::size_t>(m.codes[q].role);
      for (std::size_t rel = 0; rel < kRelationCount; ++rel) {
        std::string req;
        for (std::size_t r = 0; r < rop.roles.size(); ++r)
          req += fmt::format("{}{}={}", req.empty() ? "" : ",", rop.roles[r].name,
                             r == rrole ? std::string(req_path[rel]) : "/t/req_other/" + rop.roles[r].name);
        const bool granted =
            m.verdict(static_cast<int>(h), static_cast<int>(q), static_cast<Relation>(rel)) != Verdict::deny;
        out += fmt::format("PATHLOCK_MATRIX_CASE(\"{}\", \"{}\", \"{}\", \"/t/h/x\", \"{}\", \"{}\", \"{}\", \"{}\", {})\n",
                           hop.name, held, hop.roles[hrole].name, rop.name, req, rop.roles[rrole].name,
                           relation_name(static_cast<Relation>(rel)), granted ? "true" : "false");
      }
    }
  }
  return out;
}

std::string emit_markdown(const Matrix& m) {
  std::string out = fmt::format(
      "<!-- Generated from {} by pathlock-matrixc. Do not edit. -->\n"
      "# Matrix `{}` version {}\n\n{}\n\nFingerprint: `{}`\n\n"
      "Row = operation holding its lock; column = operation requested afterwards.\n"
      "`√` allowed · `×` refused · `/` the two do not interact (allowed).\n"
      "A letter names the held operation's target the verdict is about.\n"
      "**[bracketed]** entries are shipped decisions where the original grid is silent.\n\n",
      m.source, m.name, m.version, m.description, m.fingerprint());
  out += "| held \\ requested |";
  for (const OpDef& op : m.ops) out += " " + op.name + " |";
  out += "\n|---|";
  for (std::size_t i = 0; i < m.ops.size(); ++i) out += "---|";
  out += "\n";
  for (std::size_t h = 0; h < m.ops.size(); ++h) {
    out += fmt::format("| {} `{}` |", m.ops[h].name, m.ops[h].example);
    for (std::size_t r = 0; r < m.ops.size(); ++r) {
      const std::string orig = original_label(m, static_cast<int>(h), static_cast<int>(r));
      const std::string dec = decision_label(m, static_cast<int>(h), static_cast<int>(r));
      out += " " + orig + (dec.empty() ? "" : (orig.empty() ? "" : " ") + ("**[" + dec + "]**")) + " |";
    }
    out += "\n";
  }
  out += "\n## Operations\n\n| op | label | roles |\n|---|---|---|\n";
  for (const OpDef& op : m.ops) {
    std::string roles;
    for (const RoleDef& r : op.roles) {
      std::string syms;
      for (const auto& s : r.symbols) syms += (syms.empty() ? "" : ", ") + s;
      roles += fmt::format("{}`{}` ({})", roles.empty() ? "" : "; ", r.name, syms);
    }
    for (const auto& [inner, outer] : op.not_inside)
      roles += fmt::format("; `{}` may not be `{}` or inside it", op.roles[static_cast<std::size_t>(inner)].name,
                           op.roles[static_cast<std::size_t>(outer)].name);
    out += fmt::format("| `{}` | {} | {} |\n", op.name, op.label, roles);
  }
  out += "\n## Shipped decisions where the grid is silent\n\n| held op, target | requested op | decision | why |\n|---|---|---|---|\n";
  for (std::size_t h = 0; h < m.ops.size(); ++h)
    for (std::size_t r = 0; r < m.ops.size(); ++r) {
      const Cell& cell = m.grid[h][r];
      for (std::size_t hr = 0; hr < cell.held_roles.size(); ++hr) {
        const Rule& rule = cell.held_roles[hr];
        if (rule.decision.empty()) continue;
        out += fmt::format("| {} `{}` | {} | {} | {} |\n", m.ops[h].name, m.ops[h].roles[hr].name, m.ops[r].name,
                           rule_label(m, m.ops[h].roles[hr], rule, static_cast<int>(r)), rule.decision);
      }
    }
  const auto asym = asymmetric_pairs(m);
  out += "\n## Asymmetric pairs\n\nThe outcome depends on which operation came first. "
         "Each line: A held and B requested, then B held and A requested.\n\n";
  for (const Asymmetry& a : asym) out += "- " + asymmetry_text(m, a) + "\n";
  return out;
}

std::string emit_html(const Matrix& m) {
  std::string out = fmt::format(
      "<!DOCTYPE html>\n<!-- Generated from {} by pathlock-matrixc. Do not edit. -->\n"
      "<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Matrix {} {}</title>\n<style>\n"
      "body{{font-family:system-ui,sans-serif;margin:2em;color:#222}}\n"
      "table{{border-collapse:collapse}}td,th{{border:1px solid #bbb;padding:.3em .5em;text-align:center}}\n"
      "th.row{{text-align:left;white-space:nowrap}}.allow{{background:#e3f6e3}}.deny{{background:#fbe1e1}}\n"
      ".unrelated{{background:#eee;color:#777}}.mixed{{background:#fff4d6}}.decision{{font-style:italic;color:#7a4b00}}\n"
      "</style></head><body>\n<h1>Matrix <code>{}</code> version {}</h1>\n<p>{}</p>\n<p>Fingerprint <code>{}</code></p>\n"
      "<p>Row: the operation holding its lock. Column: the operation requested afterwards. "
      "√ allowed, × refused, / do not interact (allowed). "
      "<span class=\"decision\">[Italic, bracketed]</span>: shipped decision where the original grid is silent.</p>\n"
      "<table>\n<tr><th>held \\ requested</th>",
      html_escape(m.source), html_escape(m.name), html_escape(m.version), html_escape(m.name), html_escape(m.version),
      html_escape(m.description), m.fingerprint());
  for (const OpDef& op : m.ops)
    out += fmt::format("<th>{}<br><small>{}</small></th>", html_escape(op.name), html_escape(op.label));
  out += "</tr>\n";
  for (std::size_t h = 0; h < m.ops.size(); ++h) {
    out += fmt::format("<tr><th class=\"row\">{} <code>{}</code><br><small>{}</small></th>", html_escape(m.ops[h].name),
                       html_escape(m.ops[h].example), html_escape(m.ops[h].label));
    for (std::size_t r = 0; r < m.ops.size(); ++r) {
      std::set<Verdict> seen;
      for (std::size_t hc = 0; hc < m.codes.size(); ++hc)
        if (static_cast<std::size_t>(m.codes[hc].op) == h)
          for (std::size_t rc = 0; rc < m.codes.size(); ++rc)
            if (static_cast<std::size_t>(m.codes[rc].op) == r)
              for (std::size_t rel = 0; rel < kRelationCount; ++rel)
                seen.insert(m.verdict(static_cast<int>(hc), static_cast<int>(rc), static_cast<Relation>(rel)));
      const char* cls = seen.size() == 1 ? (seen.count(Verdict::allow) ? "allow" : seen.count(Verdict::deny) ? "deny" : "unrelated")
                                         : "mixed";
      const std::string orig = original_label(m, static_cast<int>(h), static_cast<int>(r));
      const std::string dec = decision_label(m, static_cast<int>(h), static_cast<int>(r));
      out += fmt::format("<td class=\"{}\">{}{}</td>", cls, html_escape(orig),
                         dec.empty() ? "" : " <span class=\"decision\">[" + html_escape(dec) + "]</span>");
    }
    out += "</tr>\n";
  }
  out += "</table>\n<h2>Shipped decisions</h2>\n<ul>\n";
  for (std::size_t h = 0; h < m.ops.size(); ++h)
    for (std::size_t r = 0; r < m.ops.size(); ++r)
      for (std::size_t hr = 0; hr < m.grid[h][r].held_roles.size(); ++hr) {
        const Rule& rule = m.grid[h][r].held_roles[hr];
        if (!rule.decision.empty())
          out += fmt::format("<li>{} <code>{}</code> held, {} requested: <b>{}</b>: {}</li>\n", html_escape(m.ops[h].name),
                             html_escape(m.ops[h].roles[hr].name), html_escape(m.ops[r].name),
                             html_escape(rule_label(m, m.ops[h].roles[hr], rule, static_cast<int>(r))),
                             html_escape(rule.decision));
      }
  out += "</ul>\n<h2>Asymmetric pairs</h2>\n<ul>\n";
  for (const Asymmetry& a : asymmetric_pairs(m)) out += "<li>" + html_escape(asymmetry_text(m, a)) + "</li>\n";
  out += "</ul>\n</body></html>\n";
  return out;
}

std::string explain(const Matrix& m, int held_op, int requested_op) {
  const OpDef& held = m.ops[static_cast<std::size_t>(held_op)];
  const OpDef& req = m.ops[static_cast<std::size_t>(requested_op)];
  const std::string orig = original_label(m, held_op, requested_op);
  const std::string dec = decision_label(m, held_op, requested_op);
  std::string out = fmt::format("held {} ({}), requested {} ({}): grid cell \"{}\"{}\n", held.name, held.label, req.name,
                                req.label, orig, dec.empty() ? "" : ", shipped decision [" + dec + "]");
  for (std::size_t hr = 0; hr < held.roles.size(); ++hr) {
    const Rule& rule = m.grid[static_cast<std::size_t>(held_op)][static_cast<std::size_t>(requested_op)].held_roles[hr];
    const int hc = m.code_of(held_op, static_cast<int>(hr));
    for (std::size_t rr = 0; rr < req.roles.size(); ++rr) {
      const int rc = m.code_of(requested_op, static_cast<int>(rr));
      for (std::size_t rel = 0; rel < kRelationCount; ++rel) {
        const Verdict v = m.verdict(hc, rc, static_cast<Relation>(rel));
        out += fmt::format("  held {} vs requested {}, {}: {} ({})\n", held.roles[hr].name, req.roles[rr].name,
                           relation_phrase(static_cast<Relation>(rel)), verdict_name(v),
                           rule.decision.empty() ? "original grid" : "decision: " + rule.decision);
      }
    }
  }
  return out;
}

std::string lint_report(const Matrix& m) {
  std::size_t decisions = 0, refined = 0;
  for (const auto& row : m.grid)
    for (const Cell& cell : row)
      for (const Rule& rule : cell.held_roles) {
        decisions += !rule.decision.empty();
        refined += rule.refined();
      }
  const auto asym = asymmetric_pairs(m);
  std::string out = fmt::format(
      "{}: matrix '{}' version {} is valid\n  {} operations, {} (operation, role) codes, {} cells\n"
      "  {} shipped decisions, {} refined rules\n  fingerprint {}\n  {} asymmetric pairs:\n",
      m.source, m.name, m.version, m.ops.size(), m.codes.size(), m.ops.size() * m.ops.size(), decisions, refined,
      m.fingerprint(), asym.size());
  for (const Asymmetry& a : asym) out += "    " + asymmetry_text(m, a) + "\n";
  return out;
}

}  // namespace pathlock::matrix
