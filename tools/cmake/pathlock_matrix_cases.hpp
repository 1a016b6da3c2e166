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

}  // namespace pathlock::matrix_cases
