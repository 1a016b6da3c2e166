// The generated C++ header (see emit_cpp.hpp).
//
// Layout: enums for readable call sites, then one constexpr MatrixTable
// built by a constexpr lambda. The
// lambda spells, field by field, the table build_table() returns (table.cpp),
// so the build-time table and a run-time compiled one cannot drift apart.
#include "matrix/emit_cpp.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <deque>
#include <string_view>

#include "matrix/table.hpp"
#include "matrix/text.hpp"

namespace pathlock::matrix {

namespace {

// C++20's keywords and alternative tokens ([lex.key], [lex.digraph]) that
// the matrix naming rule [a-z][a-z0-9_]* lets through, and the lowercase
// macros GCC and Clang predefine in their default GNU modes. Sorted.
constexpr std::array<std::string_view, 94> kReserved = {
    "alignas",      "alignof",      "and",           "and_eq",
    "asm",          "auto",         "bitand",        "bitor",
    "bool",         "break",        "case",          "catch",
    "char",         "char16_t",     "char32_t",      "char8_t",
    "class",        "co_await",     "co_return",     "co_yield",
    "compl",        "concept",      "const",         "const_cast",
    "consteval",    "constexpr",    "constinit",     "continue",
    "decltype",     "default",      "delete",        "do",
    "double",       "dynamic_cast", "else",          "enum",
    "explicit",     "export",       "extern",        "false",
    "float",        "for",          "friend",        "goto",
    "if",           "inline",       "int",           "linux",
    "long",         "mutable",      "namespace",     "new",
    "noexcept",     "not",          "not_eq",        "nullptr",
    "operator",     "or",           "or_eq",         "private",
    "protected",    "public",       "register",      "reinterpret_cast",
    "requires",     "return",       "short",         "signed",
    "sizeof",       "static",       "static_assert", "static_cast",
    "struct",       "switch",       "template",      "this",
    "thread_local", "throw",        "true",          "try",
    "typedef",      "typeid",       "typename",      "union",
    "unix",         "unsigned",     "using",         "virtual",
    "void",         "volatile",     "wchar_t",       "while",
    "xor",          "xor_eq"};

static_assert(std::is_sorted(kReserved.begin(), kReserved.end()));

bool reserved(std::string_view name) {
  return std::binary_search(kReserved.begin(), kReserved.end(), name);
}

}  // namespace

std::vector<std::string> cxx_name_problems(const Matrix& m) {
  std::vector<std::string> out;
  for (const OpDef& op : m.ops) {
    if (reserved(op.name))
      out.push_back(fmt::format(
          "{}: operation '{}': the name is a C++ keyword or predefined macro, and pathlock-matrixc makes every "
          "operation name an enumerator of Op in the generated header; rename the operation (e.g. '{}_op')",
          m.source, op.name, op.name));
    for (const RoleDef& role : op.roles)
      if (const std::string code = op.name + "_" + role.name; reserved(code))
        out.push_back(fmt::format(
            "{}: operation '{}' role '{}': the code name '{}' is a C++ keyword or predefined macro, and "
            "pathlock-matrixc makes every operation_role an enumerator of Code in the generated header; rename "
            "the operation or the role",
            m.source, op.name, role.name, code));
  }
  return out;
}

std::string emit_header(const Matrix& m, const std::string& cxx_namespace) {
  if (std::vector<std::string> problems = cxx_name_problems(m); !problems.empty())
    throw MatrixError(std::move(problems));
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
