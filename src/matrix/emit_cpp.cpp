// The generated C++ header (see emit_cpp.hpp).
//
// Layout: enums for readable call sites, then one constexpr MatrixTable
// built by a constexpr lambda. The
// lambda spells, field by field, the table build_table() returns (table.cpp),
// so the build-time table and a run-time compiled one cannot drift apart.
#include "matrix/emit_cpp.hpp"

#include <fmt/format.h>

#include <deque>

#include "matrix/table.hpp"
#include "matrix/text.hpp"

namespace pathlock::matrix {

std::string emit_header(const Matrix& m, const std::string& cxx_namespace) {
  std::deque<std::string> strings;
  const MatrixTable t =
      build_table(m, [&](const std::string& s) -> std::string_view { return strings.emplace_back(s); });
  std::string out = fmt::format(
      "// Generated from {} (matrix '{}' version {}) by pathlock-matrixc. Do not edit.\n"
      "#pragma once\n\n#include <pathlock/matrix_table.hpp>\n\n#include <cstdint>\n\nnamespace {} {{\n\n",
      m.source, m.name, m.version, cxx_namespace);
  out += "enum class Op : std::uint8_t {\n";
  for (std::size_t o = 0; o < t.op_count; ++o) out += fmt::format("  {} = {},\n", t.ops[o].name, o);
  out += "};\n\nenum class Code : std::uint8_t {\n";
  for (std::size_t c = 0; c < t.code_count; ++c)
    out += fmt::format("  {}_{} = {},\n", t.op_name_of_code(static_cast<int>(c)),
                       t.role_name_of_code(static_cast<int>(c)), c);
  out += "};\n\n";
  out += "inline constexpr pathlock::MatrixTable kMatrix = [] {\n  pathlock::MatrixTable t{};\n";
  out += fmt::format("  t.name = {};\n  t.version = {};\n  t.fingerprint = \"{}\";\n", cxx_string(t.name),
                     cxx_string(t.version), t.fingerprint);
  out += fmt::format("  t.op_count = {};\n", t.op_count);
  for (std::size_t o = 0; o < t.op_count; ++o) {
    const OpInfo& op = t.ops[o];
    out += fmt::format("  t.ops[{}].name = {};\n  t.ops[{}].label = {};\n", o, cxx_string(op.name), o,
                       cxx_string(op.label));
    out +=
        fmt::format("  t.ops[{}].first_code = {};\n  t.ops[{}].role_count = {};\n", o, op.first_code, o, op.role_count);
    for (std::size_t r = 0; r < op.role_count; ++r)
      out += fmt::format("  t.ops[{}].roles[{}] = {};\n", o, r, cxx_string(op.roles[r]));
    out += fmt::format("  t.ops[{}].not_inside_count = {};\n", o, op.not_inside_count);
    for (std::size_t k = 0; k < op.not_inside_count; ++k)
      out += fmt::format("  t.ops[{}].not_inside[{}] = {{{}, {}}};\n", o, k, op.not_inside[k][0], op.not_inside[k][1]);
  }
  out += fmt::format("  t.code_count = {};\n", t.code_count);
  for (std::size_t c = 0; c < t.code_count; ++c)
    out += fmt::format("  t.codes[{}] = {{{}, {}}};  // {}\n", c, t.codes[c].op, t.codes[c].role,
                       m.code_name(static_cast<int>(c)));
  for (std::size_t rel = 0; rel < kRelationCount; ++rel)
    for (std::size_t r = 0; r < t.code_count; ++r)
      out += fmt::format("  t.blockers[{}][{}] = 0x{:016x}ULL;\n", rel, r, t.blockers[rel][r]);
  out += "  return t;\n}();\n\n}  // namespace " + cxx_namespace + "\n";
  return out;
}

}  // namespace pathlock::matrix
