// pathlock/matrix_table.hpp: the compiled form of a compatibility matrix.
//
// A MatrixTable is plain constant data. The generator `pathlock-matrixc`
// compiles a matrix JSON file (see matrix/README.md) into a header holding one
// `inline constexpr MatrixTable`; engines read it and never parse JSON at run
// time. Thread safety: immutable, safe to share between any number of threads.
//
// Vocabulary. An operation (create, move_folder, ...) has one or more roles
// (target, src, dst). Each (operation, role) pair is a *code*, numbered
// 0..code_count-1 in the order the matrix lists operations and their roles.
// For a requested code r and a relation between the held path and the
// requested path, `blockers[relation][r]` is the bitmask of held codes whose
// lock refuses the request.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace pathlock {

// How a held lock's path relates to a requested path. Paths that do not
// overlap (neither equal nor one inside the other) never conflict.
enum class Relation : std::uint8_t {
  same = 0,             // the two paths are equal
  held_ancestor = 1,    // the held path contains the requested path
  held_descendant = 2,  // the held path lies inside the requested path
};
inline constexpr std::size_t kRelationCount = 3;

// "same", "held_ancestor" or "held_descendant".
constexpr std::string_view relation_name(Relation relation) {
  switch (relation) {
    case Relation::same: return "same";
    case Relation::held_ancestor: return "held_ancestor";
    case Relation::held_descendant: return "held_descendant";
  }
  return "?";
}

inline constexpr std::size_t kMaxOps = 32;
inline constexpr std::size_t kMaxCodes = 64;  // codes are bits of a uint64_t
inline constexpr std::size_t kMaxRolesPerOp = 4;

using CodeMask = std::uint64_t;

struct OpInfo {
  std::string_view name;   // API name, e.g. "move_folder"
  std::string_view label;  // product owners' label, e.g. "移动文件夹"
  std::uint8_t first_code = 0;
  std::uint8_t role_count = 0;
  std::array<std::string_view, kMaxRolesPerOp> roles{};
  // not_inside: pairs (inner role index, outer role index): the inner
  // target's path may be neither the outer target's path nor inside it.
  std::uint8_t not_inside_count = 0;
  std::array<std::array<std::uint8_t, 2>, kMaxRolesPerOp> not_inside{};
};

struct CodeInfo {
  std::uint8_t op = 0;  // index into MatrixTable::ops
  std::uint8_t role = 0;  // index into OpInfo::roles
};

struct MatrixTable {
  std::string_view name;
  std::string_view version;
  // Hex digest of the rules (operations, roles, constraints and every deny
  // verdict); two tables with the same fingerprint enforce the same rules.
  std::string_view fingerprint;

  std::uint8_t op_count = 0;
  std::array<OpInfo, kMaxOps> ops{};
  std::uint8_t code_count = 0;
  std::array<CodeInfo, kMaxCodes> codes{};
  // blockers[relation][requested code] = mask of held codes that refuse it.
  std::array<std::array<CodeMask, kMaxCodes>, kRelationCount> blockers{};

  // Returns the index of operation `op`, or -1 if the matrix has none.
  constexpr int op_index(std::string_view op) const {
    for (int i = 0; i < op_count; ++i)
      if (ops[static_cast<std::size_t>(i)].name == op) return i;
    return -1;
  }
  // Returns the code of role `role` of operation index `op`, or -1.
  constexpr int code_of(int op, std::string_view role) const {
    const OpInfo& info = ops[static_cast<std::size_t>(op)];
    for (int r = 0; r < info.role_count; ++r)
      if (info.roles[static_cast<std::size_t>(r)] == role) return info.first_code + r;
    return -1;
  }
  constexpr std::string_view op_name_of_code(int code) const {
    return ops[codes[static_cast<std::size_t>(code)].op].name;
  }
  constexpr std::string_view role_name_of_code(int code) const {
    const CodeInfo& c = codes[static_cast<std::size_t>(code)];
    return ops[c.op].roles[c.role];
  }
  // True if a lock holding `held` refuses a request for `requested`.
  constexpr bool refuses(Relation rel, int held, int requested) const {
    return (blockers[static_cast<std::size_t>(rel)][static_cast<std::size_t>(requested)] >>
            held) & 1u;
  }
};

// The matrix shipped with pathlock (matrix/cloud-drive.json).
const MatrixTable& default_matrix();

}  // namespace pathlock
