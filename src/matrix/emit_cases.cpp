// Matrix-derived test scenarios (see emit_cases.hpp).
//
// Scenario layout: the held target under test sits at /t/h/x; the held
// lock's other targets at /t/held_other/ROLE, the request's other targets at
// /t/req_other/ROLE, so only the pair under test can overlap. The requested
// path is /t/h/x (same), /t/h/x/y (inside the held path) or /t/h (an
// ancestor of it). The expected outcome is Matrix::verdict(), the same
// resolution build_table() folds into the engines' bitmasks.
#include "matrix/emit_cases.hpp"

#include <fmt/format.h>

namespace pathlock::matrix {

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

}  // namespace pathlock::matrix
