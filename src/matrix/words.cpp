// A cell in words for product owners (see words.hpp): built from the
// verdicts of the cell, never from its notation.
#include "matrix/words.hpp"

#include <array>

namespace pathlock::matrix {
namespace {

using Verdicts = std::array<Verdict, kRelationCount>;

// Where the requested path is, seen from the held one.
std::string_view where_word(Relation rel) {
  switch (rel) {
    case Relation::same: return "at the same path";
    case Relation::held_ancestor: return "below";  // inside the held path
    case Relation::held_descendant: return "above";  // on a folder holding the held path
  }
  return "?";
}

std::string where_words(const Verdicts& v, Verdict which) {
  std::vector<std::string_view> ws;
  for (std::size_t rel = 0; rel < kRelationCount; ++rel)
    if (v[rel] == which) ws.push_back(where_word(static_cast<Relation>(rel)));
  if (ws.size() == kRelationCount) return "wherever the paths overlap";
  std::string out;
  for (std::size_t i = 0; i < ws.size(); ++i) out += std::string(i == 0 ? "" : i + 1 == ws.size() ? " and " : ", ") + std::string(ws[i]);
  return out;
}

// "blocks a requested upload at the same path and below; allows it above".
std::string sentence(const std::string& subject, const std::string& object, const Verdicts& v) {
  std::string out = subject;
  bool first = true;
  for (const Verdict which : {Verdict::deny, Verdict::allow, Verdict::unrelated}) {
    const std::string where = where_words(v, which);
    if (where.empty()) continue;
    const std::string obj = first ? object : "it";
    if (which == Verdict::deny) out += (first ? " blocks " : "; blocks ") + obj + " " + where;
    if (which == Verdict::allow) out += (first ? " allows " : "; allows ") + obj + " " + where;
    if (which == Verdict::unrelated)
      out += std::string(first ? " does not interact with " : "; does not interact with ") + obj + " " + where;
    first = false;
  }
  return out;
}

std::string named(std::string_view what, const OpDef& op, const RoleDef& role) {
  return std::string(what) + " " + op.name + (op.roles.size() > 1 ? " (" + role.name + ")" : "");
}

}  // namespace

std::vector<std::string> cell_words(const Matrix& m, int held_op, int requested_op) {
  const OpDef& held = m.ops[static_cast<std::size_t>(held_op)];
  const OpDef& req = m.ops[static_cast<std::size_t>(requested_op)];
  std::vector<std::pair<std::pair<std::size_t, std::size_t>, Verdicts>> pairs;
  for (std::size_t hr = 0; hr < held.roles.size(); ++hr)
    for (std::size_t rr = 0; rr < req.roles.size(); ++rr) {
      Verdicts v{};
      for (std::size_t rel = 0; rel < kRelationCount; ++rel)
        v[rel] = m.verdict(m.code_of(held_op, static_cast<int>(hr)), m.code_of(requested_op, static_cast<int>(rr)),
                           static_cast<Relation>(rel));
      pairs.push_back({{hr, rr}, v});
    }
  bool uniform = true;
  for (const auto& p : pairs) uniform = uniform && p.second == pairs.front().second;
  if (uniform) return {sentence("a held " + held.name, "a requested " + req.name, pairs.front().second)};
  std::vector<std::string> out;
  for (const auto& [roles, v] : pairs)
    out.push_back(sentence(named("a held", held, held.roles[roles.first]), named("a requested", req, req.roles[roles.second]), v));
  return out;
}

}  // namespace pathlock::matrix
