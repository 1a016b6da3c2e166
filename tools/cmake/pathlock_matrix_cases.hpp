// The cases derived from one compiled matrix (matrix_cases.inc, written by
// pathlock-matrixc next to the generated header) and the two helpers every
// runner of them needs. Installed beside pathlock_matrix_check.cpp, which
// includes it; pathlock's own suite (tests/conformance/matrix_cases_test.cpp)
// includes the same file, so both runners read the cases one way.
//
// Include it only where the matrix's output directory (which holds
// matrix_cases.inc) is on the include path. Header-only: consumers compile
// it with the runner and need nothing but the pathlock headers.
#pragma once

#include <pathlock/engine.hpp>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

namespace pathlock::matrix_cases {

// One line of matrix_cases.inc: a lock of held_op on held_targets, then a
// request of req_op on req_targets whose target of role req_role stands in
// `relation` to the held one; `granted` is the matrix's verdict. A refusal
// names the held lock's held_role at held_path.
struct MatrixCase {
  const char* held_op;
  const char* held_targets;
  const char* held_role;
  const char* held_path;
  const char* req_op;
  const char* req_targets;
  const char* req_role;
  const char* relation;
  bool granted;
};

inline const MatrixCase kCases[] = {
#define PATHLOCK_MATRIX_CASE(ho, ht, hr, hp, ro, rt, rr, rel, g) {ho, ht, hr, hp, ro, rt, rr, rel, g},
#include "matrix_cases.inc"
#undef PATHLOCK_MATRIX_CASE
};

// "src=/a,dst=/b" -> {{"src", "/a"}, {"dst", "/b"}}
inline std::vector<Target> parse_targets(const std::string& text) {
  std::vector<Target> out;
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t comma = std::min(text.find(',', i), text.size());
    const std::string part = text.substr(i, comma - i);
    const std::size_t eq = part.find('=');
    out.push_back(Target{part.substr(0, eq), part.substr(eq + 1)});
    i = comma + 1;
  }
  return out;
}

// The same targets with the one of role `role` moved beside /t/h (where
// every case puts its target under test): the same request never conflicts
// there.
inline std::vector<Target> beside(std::vector<Target> targets, const std::string& role) {
  for (Target& t : targets)
    if (t.role == role) t.path = "/t/beside" + t.path.substr(std::string("/t/h").size());
  return targets;
}

// Conversion cases (docs/design.md#conversion): the case's held lock, then a
// lock of operation `from` on targets of its own (under /c, apart from every
// case's paths) converted to the case's request. The conversion's verdict is
// the matrix's for acquiring the request beside the held lock, a refusal
// names what the acquire's refusal names and leaves the converting lock as
// it was, and a grant keeps the lock's id with a fence above every other.
// Returns what went wrong ("" if nothing); `refused` says whether it was.
inline std::string conversion_case(LockEngine& engine, const MatrixCase& c, const OpInfo& from, const std::string& ns,
                                   bool& refused) {
  std::ostringstream why;
  const AcquireResult held = engine.acquire(LockRequest{ns, "holder", c.held_op, parse_targets(c.held_targets)});
  std::vector<Target> own;
  for (std::size_t r = 0; r < from.role_count; ++r)
    own.push_back(Target{std::string(from.roles[r]), "/c/" + std::string(from.roles[r])});
  const AcquireResult mine = engine.acquire(LockRequest{ns, "converter", std::string(from.name), own});
  if (!held.granted() || !mine.granted()) return "the held or the converting lock was refused on an empty namespace";
  const std::vector<Target> req_targets = parse_targets(c.req_targets);
  const AcquireResult got = engine.convert(ConvertRequest::of(ns, mine.grant, c.req_op, req_targets));
  refused = !got.granted();
  const std::vector<LockInfo> listed = engine.list(ns, "/c");
  if (got.granted() != c.granted) {
    why << "expected " << (c.granted ? "granted" : "refused") << ", got " << (got.granted() ? "granted" : "refused");
    if (!got.granted()) why << " by " << got.conflict.op << "/" << got.conflict.role << " at " << got.conflict.path;
    why << "; ";
  } else if (got.granted()) {
    if (got.grant.id != mine.grant.id || got.grant.fence <= std::max(held.grant.fence, mine.grant.fence))
      why << "the converted lock has another id or a fence not above every other; ";
  } else {
    const Conflict& k = got.conflict;
    if (!got.conflicted() || k.id != held.grant.id || k.op != c.held_op || k.role != c.held_role ||
        k.path != c.held_path || k.requested_role != c.req_role || relation_name(k.relation) != c.relation || k.queued)
      why << "the refusal names " << k.op << "/" << k.role << " at " << k.path << " (" << relation_name(k.relation)
          << "), not what the acquire's names; ";
    if (listed.size() != 1 || listed[0].op != from.name || listed[0].fence != mine.grant.fence)
      why << "the refused conversion changed its lock; ";
  }
  if (!engine.release(ns, mine.grant.id, mine.grant.token) || !engine.release(ns, held.grant.id, held.grant.token))
    why << "a release failed; ";
  if (!engine.list(ns).empty()) why << "locks left after both releases; ";
  return why.str();
}

}  // namespace pathlock::matrix_cases
