// Matrix-derived conversion scenarios (see emit_cases.hpp), in four kinds:
//
//   beside    a lock of `from` converted to `to` beside a held lock, at
//             every relation of their paths (same, held_ancestor,
//             held_descendant, disjoint): the verdict and the refusal of
//             acquiring `to` there. The converting lock stands on the path
//             under test itself where the matrix lets it (so a conversion
//             judged against its own lock would fail), else apart, at /c.
//   ahead     a waiter its converting lock refuses (`other`, waiting for
//             that lock): the conversion goes before it and is granted; the
//             waiter then gets in iff `to` lets it (`other_granted`).
//   behind    a waiter another held lock refuses, the converting lock apart:
//             a fair conversion is refused by the held lock, else by the
//             waiter's place; an unfair one by the held lock only.
//   deadlock  two locks on one path (`held`, `from`); `from` waits to
//             convert to `to`, refused by `held`; `held` then converting to
//             `other`, refused by `from`, is answered would_deadlock; the
//             waiting conversion is cancelled, its lock as it was.
//
// Every path under test is /t/h/x (the held lock's as in the acquire cases);
// the other roles of each lock sit apart (/t/ROLE_OF_LOCK/ROLE).
#include "matrix/emit_cases.hpp"

#include <fmt/format.h>

namespace pathlock::matrix {

namespace {

constexpr int kDisjoint = static_cast<int>(kRelationCount);  // the relation after the matrix's three

struct Codes {
  const Matrix& m;
  int size() const { return static_cast<int>(m.codes.size()); }
  bool denies(int held, int requested, int rel = 0) const {
    return rel != kDisjoint && m.verdict(held, requested, static_cast<Relation>(rel)) == Verdict::deny;
  }
  // The first code `held` refuses on the same path (or -1).
  int first_refused_by(int held) const {
    for (int q = 0; q < size(); ++q)
      if (denies(held, q)) return q;
    return -1;
  }
  // The first code that refuses `requested` on the same path (or -1).
  int first_refusing(int requested) const {
    for (int h = 0; h < size(); ++h)
      if (denies(h, requested)) return h;
    return -1;
  }
  // Targets of code `c` with its role at `path`.
  std::string at(int c, const std::string& path, const std::string& prefix) const {
    const Code& k = m.codes[static_cast<std::size_t>(c)];
    return targets_text(m, k.op, k.role, path, prefix);
  }
  std::string op(int c) const { return m.ops[static_cast<std::size_t>(m.codes[static_cast<std::size_t>(c)].op)].name; }
  std::string role(int c) const {
    const Code& k = m.codes[static_cast<std::size_t>(c)];
    return m.ops[static_cast<std::size_t>(k.op)].roles[static_cast<std::size_t>(k.role)].name;
  }
};

constexpr const char* kPath = "/t/h/x";

void beside(const Codes& k, std::vector<ConversionScenario>& out) {
  const char* req_path[kRelationCount + 1] = {"/t/h/x", "/t/h/x/y", "/t/h", "/u/x"};
  const int ops = static_cast<int>(k.m.ops.size());
  int turn = 0;
  for (int h = 0; h < k.size(); ++h)
    for (int q = 0; q < k.size(); ++q)
      for (int rel = 0; rel <= kDisjoint; ++rel, ++turn) {
        const int from_op = turn % ops, from_code = k.m.code_of(from_op, 0);
        const bool in_place = rel != kDisjoint && !k.denies(h, from_code, rel);
        ConversionScenario s;
        s.kind = "beside";
        s.held_op = k.op(h), s.held = k.at(h, kPath, "/t/held"), s.held_role = k.role(h);
        s.from_op = k.op(from_code);
        s.from = in_place ? k.at(from_code, req_path[rel], "/t/from") : targets_text(k.m, from_op, -1, "", "/c");
        s.to_op = k.op(q), s.to = k.at(q, req_path[rel], "/t/to"), s.to_role = k.role(q);
        s.relation = rel == kDisjoint ? "disjoint" : std::string(relation_name(static_cast<Relation>(rel)));
        const bool refused = k.denies(h, q, rel);
        s.outcome = refused ? "refused" : "granted";
        s.names = refused ? "held" : "";
        out.push_back(std::move(s));
      }
}

void ahead(const Codes& k, std::vector<ConversionScenario>& out) {
  for (int c = 0; c < k.size(); ++c)
    for (int d = 0; d < k.size(); ++d) {
      if (!k.denies(c, d)) continue;
      const int b = (c + d) % k.size();
      ConversionScenario s;
      s.kind = "ahead";
      s.other_op = k.op(d), s.other = k.at(d, kPath, "/t/other");
      s.from_op = k.op(c), s.from = k.at(c, kPath, "/t/from");
      s.to_op = k.op(b), s.to = k.at(b, kPath, "/t/to"), s.to_role = k.role(b);
      s.outcome = "granted";
      s.other_granted = !k.denies(b, d);
      out.push_back(std::move(s));
    }
}

void behind(const Codes& k, std::vector<ConversionScenario>& out) {
  const int ops = static_cast<int>(k.m.ops.size());
  for (int d = 0; d < k.size(); ++d) {
    const int e = k.first_refusing(d);
    if (e < 0) continue;
    for (int b = 0; b < k.size(); ++b) {
      ConversionScenario s;
      s.kind = "behind";
      s.held_op = k.op(e), s.held = k.at(e, kPath, "/t/held"), s.held_role = k.role(e);
      s.other_op = k.op(d), s.other = k.at(d, kPath, "/t/other");
      const int from_op = (d + b) % ops;
      s.from_op = k.m.ops[static_cast<std::size_t>(from_op)].name, s.from = targets_text(k.m, from_op, -1, "", "/c");
      s.to_op = k.op(b), s.to = k.at(b, kPath, "/t/to"), s.to_role = k.role(b);
      s.fair = (d + b) % 2 == 0;
      s.names = k.denies(e, b) ? "held" : s.fair && k.denies(d, b) ? "other" : "";
      s.outcome = s.names.empty() ? "granted" : "refused";
      out.push_back(std::move(s));
    }
  }
}

void deadlock(const Codes& k, std::vector<ConversionScenario>& out) {
  for (int c1 = 0; c1 < k.size(); ++c1)
    for (int c2 = 0; c2 < k.size(); ++c2) {
      const int b1 = k.first_refused_by(c2), b2 = k.first_refused_by(c1);
      if (k.denies(c2, c1) || b1 < 0 || b2 < 0) continue;
      ConversionScenario s;
      s.kind = "deadlock";
      s.held_op = k.op(c2), s.held = k.at(c2, kPath, "/t/held"), s.held_role = k.role(c2);
      s.from_op = k.op(c1), s.from = k.at(c1, kPath, "/t/from");
      s.to_op = k.op(b1), s.to = k.at(b1, kPath, "/t/to"), s.to_role = k.role(b1);
      s.other_op = k.op(b2), s.other = k.at(b2, kPath, "/t/other");
      s.outcome = "would_deadlock";
      s.names = "from";
      out.push_back(std::move(s));
    }
}

}  // namespace

std::vector<ConversionScenario> conversion_scenarios(const Matrix& m) {
  const Codes k{m};
  std::vector<ConversionScenario> out;
  beside(k, out);
  ahead(k, out);
  behind(k, out);
  deadlock(k, out);
  return out;
}

std::string emit_conversion_cases(const Matrix& m) {
  std::string out = fmt::format(
      "// Generated from {} by pathlock-matrixc. Do not edit.\n"
      "// PATHLOCK_CONVERSION_CASE(kind, held op, held targets, held role, other op, other targets,\n"
      "//                          from op, from targets, to op, to targets, to role, relation, fair,\n"
      "//                          outcome, names, other granted)\n",
      m.source);
  for (const ConversionScenario& s : conversion_scenarios(m))
    out += fmt::format(
        "PATHLOCK_CONVERSION_CASE(\"{}\", \"{}\", \"{}\", \"{}\", \"{}\", \"{}\", \"{}\", \"{}\", \"{}\", \"{}\", \"{}\", "
        "\"{}\", {}, \"{}\", \"{}\", {})\n",
        s.kind, s.held_op, s.held, s.held_role, s.other_op, s.other, s.from_op, s.from, s.to_op, s.to, s.to_role,
        s.relation, s.fair, s.outcome, s.names, s.other_granted);
  return out;
}

}  // namespace pathlock::matrix
