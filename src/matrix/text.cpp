// Text helpers shared by the emitters (see text.hpp).
#include "matrix/text.hpp"

#include "core/quoted.hpp"

#include <fmt/format.h>

#include <array>
#include <map>
#include <optional>

namespace pathlock::matrix {

std::string cxx_string(std::string_view s) {
  // A split literal after each \x escape: the next character is never taken as a hex digit.
  return core::quoted(s, [](unsigned char c) { return fmt::format("\\x{:02x}\"\"", c); });
}

std::string html_escape(std::string_view s) {
  std::string out;
  for (const char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string markdown_grid(const Matrix& m, const std::function<std::string(std::size_t h, std::size_t r)>& cell) {
  std::string out = "| held \\ requested |";
  for (const OpDef& op : m.ops) out += " " + op.name + " |";
  out += "\n|---|";
  for (std::size_t i = 0; i < m.ops.size(); ++i) out += "---|";
  out += "\n";
  for (std::size_t h = 0; h < m.ops.size(); ++h) {
    out += fmt::format("| {}{} |", m.ops[h].name, m.ops[h].example.empty() ? "" : " `" + m.ops[h].example + "`");
    for (std::size_t r = 0; r < m.ops.size(); ++r) out += " " + cell(h, r) + " |";
    out += "\n";
  }
  return out;
}

std::string relation_phrase(Relation rel) {
  static constexpr std::array<std::string_view, kRelationCount> kPhrases{
      "on the same path", "requested inside the held path", "requested on an ancestor of the held path"};
  return std::string(kPhrases.at(static_cast<std::size_t>(rel)));
}

std::string relations_phrase(const std::vector<Relation>& rels) {
  if (rels.size() == kRelationCount) return "wherever the paths overlap";
  std::string out;
  for (const Relation r : rels) out += (out.empty() ? "" : ", ") + relation_phrase(r);
  return out;
}

std::string_view relation_word(Relation rel) {
  static constexpr std::array<std::string_view, kRelationCount> kWords{"same", "inside", "above"};
  return kWords.at(static_cast<std::size_t>(rel));
}

namespace {

// "√inside ×else": the relation refinements of a rule, then its own verdict.
std::string relation_items(const std::map<Relation, Verdict>& by_relation, const std::optional<Verdict>& otherwise) {
  std::string out;
  for (const auto& [rel, v] : by_relation)
    out += fmt::format("{}{}{}", out.empty() ? "" : " ", verdict_mark(v), relation_word(rel));
  if (otherwise) out += fmt::format("{}{}{}", out.empty() ? "" : " ", verdict_mark(*otherwise), kElseWord);
  return out;
}

}  // namespace

std::string rule_label(const Matrix& m, const RoleDef& held_role, const Rule& rule, int requested_op) {
  std::string text;
  const OpDef& req = m.ops[static_cast<std::size_t>(requested_op)];
  for (const std::string& sym : held_role.symbols) {
    if (!rule.refined() && rule.verdict) {
      text += sym + std::string(verdict_mark(*rule.verdict));
      continue;
    }
    std::string parts;
    for (const auto& [role, sub] : rule.by_requested_role) {
      const std::string& name = req.roles[static_cast<std::size_t>(role)].name;
      if (sub.by_relation.empty())
        parts += fmt::format("{}{}{}", parts.empty() ? "" : " ", sub.verdict ? verdict_mark(*sub.verdict) : "", name);
      else
        parts += fmt::format("{}{}({})", parts.empty() ? "" : " ", name, relation_items(sub.by_relation, sub.verdict));
    }
    const std::string rest = relation_items(rule.by_relation, rule.verdict);
    if (!rest.empty()) parts += (parts.empty() ? "" : " ") + rest;
    text += fmt::format("{}({})", sym, parts);
  }
  return text;
}

std::string asymmetry_text(const Matrix& m, const Asymmetry& a) {
  return fmt::format("{} held, {} requested: {}; the other way round: {} ({})", m.code_name(a.first),
                     m.code_name(a.second), verdict_name(a.forward), verdict_name(a.backward),
                     relations_phrase(a.relations));
}

}  // namespace pathlock::matrix
