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
#include <nlohmann/json.hpp>

#include <algorithm>

namespace pathlock::matrix {

namespace {

// One scenario per (held code, requested code, relation), in a fixed order;
// both emitters below print the same list.
struct Scenario {
  std::string_view held_op, held_role, req_op, req_role, relation;
  std::string held, req;
  bool granted;
};

template <class Fn>
void for_each_case(const Matrix& m, Fn&& fn) {
  // Scenario layout: the held target under test sits at /t/h/x; the held
  // lock's other targets at /t/held_other/ROLE, the request's other targets
  // at /t/req_other/ROLE, so only the pair under test can overlap.
  const char* req_path[kRelationCount] = {"/t/h/x", "/t/h/x/y", "/t/h"};
  for (std::size_t h = 0; h < m.codes.size(); ++h) {
    const OpDef& hop = m.ops[static_cast<std::size_t>(m.codes[h].op)];
    const auto hrole = static_cast<std::size_t>(m.codes[h].role);
    const std::string held = targets_text(m, m.codes[h].op, m.codes[h].role, "/t/h/x", "/t/held_other");
    for (std::size_t q = 0; q < m.codes.size(); ++q) {
      const OpDef& rop = m.ops[static_cast<std::size_t>(m.codes[q].op)];
      const auto rrole = static_cast<std::size_t>(m.codes[q].role);
      for (std::size_t rel = 0; rel < kRelationCount; ++rel) {
        const std::string req = targets_text(m, m.codes[q].op, m.codes[q].role, req_path[rel], "/t/req_other");
        const bool granted =
            m.verdict(static_cast<int>(h), static_cast<int>(q), static_cast<Relation>(rel)) != Verdict::deny;
        fn(Scenario{hop.name, hop.roles[hrole].name, rop.name, rop.roles[rrole].name,
                    relation_name(static_cast<Relation>(rel)), held, req, granted});
      }
    }
  }
}

// "src=/a,dst=/b" as a JSON object {"src": "/a", "dst": "/b"} (role order kept).
nlohmann::ordered_json targets_json(const std::string& text) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t comma = std::min(text.find(',', i), text.size());
    const std::string part = text.substr(i, comma - i);
    const std::size_t eq = part.find('=');
    out[part.substr(0, eq)] = part.substr(eq + 1);
    i = comma + 1;
  }
  return out;
}

// The conversion scenarios for matrix_cases.json; fields without a value
// (no such lock, no refusal) are left out.
nlohmann::ordered_json conversion_cases_json(const Matrix& m) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const ConversionScenario& s : conversion_scenarios(m)) {
    nlohmann::ordered_json c = {{"kind", s.kind}};
    const auto lock = [&](const char* name, const std::string& op, const std::string& targets) {
      if (op.empty()) return;
      c[fmt::format("{}_op", name)] = op;
      c[fmt::format("{}_targets", name)] = targets_json(targets);
    };
    lock("held", s.held_op, s.held);
    if (!s.held_role.empty()) c["held_role"] = s.held_role;
    lock("other", s.other_op, s.other);
    lock("from", s.from_op, s.from);
    lock("to", s.to_op, s.to);
    c["to_role"] = s.to_role;
    c["relation"] = s.relation;
    c["fair"] = s.fair;
    c["outcome"] = s.outcome;
    if (!s.names.empty()) c["names"] = s.names;
    if (s.kind == "ahead") c["other_granted"] = s.other_granted;
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

std::string targets_text(const Matrix& m, int op, int role, const std::string& path, const std::string& prefix) {
  std::string out;
  const OpDef& d = m.ops[static_cast<std::size_t>(op)];
  for (std::size_t r = 0; r < d.roles.size(); ++r)
    out += fmt::format("{}{}={}", out.empty() ? "" : ",", d.roles[r].name,
                       static_cast<int>(r) == role ? path : prefix + "/" + d.roles[r].name);
  return out;
}

std::string emit_cases(const Matrix& m) {
  std::string out = fmt::format(
      "// Generated from {} by pathlock-matrixc. Do not edit.\n"
      "// PATHLOCK_MATRIX_CASE(held op, held targets, held role, held path,\n"
      "//                      requested op, requested targets, requested role, relation, granted)\n",
      m.source);
  for_each_case(m, [&](const Scenario& c) {
    out += fmt::format("PATHLOCK_MATRIX_CASE(\"{}\", \"{}\", \"{}\", \"/t/h/x\", \"{}\", \"{}\", \"{}\", \"{}\", {})\n",
                       c.held_op, c.held, c.held_role, c.req_op, c.req, c.req_role, c.relation,
                       c.granted ? "true" : "false");
  });
  return out;
}

std::string emit_cases_json(const Matrix& m) {
  nlohmann::ordered_json cases = nlohmann::ordered_json::array();
  for_each_case(m, [&](const Scenario& c) {
    cases.push_back({{"held_op", c.held_op},
                     {"held_targets", targets_json(c.held)},
                     {"held_role", c.held_role},
                     {"held_path", "/t/h/x"},
                     {"requested_op", c.req_op},
                     {"requested_targets", targets_json(c.req)},
                     {"requested_role", c.req_role},
                     {"relation", c.relation},
                     {"granted", c.granted}});
  });
  nlohmann::ordered_json doc = {{"generated_from", m.source},
                                {"matrix", m.name},
                                {"fingerprint", m.fingerprint()},
                                {"cases", std::move(cases)},
                                {"conversion_cases", conversion_cases_json(m)}};
  return doc.dump(1) + "\n";
}

}  // namespace pathlock::matrix
