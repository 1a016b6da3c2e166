// Lua emission for the Redis backend's scripts (see emit_lua.hpp). The
// functions below were moved here unchanged from emit.cpp.
#include "matrix/emit_lua.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace pathlock::matrix {
namespace {

constexpr std::string_view kLuaMarker = "-- @PATHLOCK_MATRIX@";

std::string lua_string(std::string_view s) {
  std::string out = "\"";
  for (const unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7F) {
      out += fmt::format("\\{:03d}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

}  // namespace

std::string emit_lua_tables(const Matrix& m) {
  // The data are string constants (interned once when Redis compiles the
  // script); PL_OPS, PL_CODE_NAMES and PL_BLOCKERS decode on first use, per
  // call, just the entries that call needs, instead of running a table
  // constructor for the whole matrix on every call. Operation and role names
  // are identifiers ([a-z][a-z0-9_]*), so they need no escaping in patterns.
  std::string out = fmt::format(
      "-- Compiled from matrix '{}' version {} by pathlock-matrixc. Do not edit.\n"
      "local PL_MATRIX_NAME = {}\nlocal PL_MATRIX_VERSION = {}\nlocal PL_FINGERPRINT = \"{}\"\n"
      "local PL_CODE_COUNT = {}\n",
      m.name, m.version, lua_string(m.name), lua_string(m.version), m.fingerprint(), m.codes.size());
  std::string ops = "\n";
  for (std::size_t o = 0; o < m.ops.size(); ++o) {
    const OpDef& op = m.ops[o];
    std::string roles, ni;
    for (const RoleDef& r : op.roles) roles += fmt::format("{}{}", roles.empty() ? "" : ",", r.name);
    for (const auto& [inner, outer] : op.not_inside) ni += fmt::format("{}>{};", inner + 1, outer + 1);
    ops += fmt::format("{} {} {} {}\n", op.name, m.code_of(static_cast<int>(o), 0), roles, ni);
  }
  std::string names = "\n";
  for (std::size_t c = 0; c < m.codes.size(); ++c) {
    const OpDef& op = m.ops[static_cast<std::size_t>(m.codes[c].op)];
    names += fmt::format("{} {} {}\n", c, op.name, op.roles[static_cast<std::size_t>(m.codes[c].role)].name);
  }
  std::string blockers;
  std::vector<std::string> rel_data;
  for (std::size_t rel = 0; rel < kRelationCount; ++rel) {
    std::string data = "\n";
    for (std::size_t r = 0; r < m.codes.size(); ++r) {
      std::string held;
      for (std::size_t h = 0; h < m.codes.size(); ++h)
        if (m.verdict(static_cast<int>(h), static_cast<int>(r), static_cast<Relation>(rel)) == Verdict::deny)
          held += fmt::format("{},", h);
      data += fmt::format("{}:{}\n", r, held);
    }
    // A relation with the same lists as an earlier one shares its table
    // (and so its decoded lists and, in the scripts, their field names).
    const auto same = std::find(rel_data.begin(), rel_data.end(), data);
    if (same != rel_data.end()) {
      blockers += fmt::format("PL_BLOCKERS[{}] = PL_BLOCKERS[{}]\n", rel, same - rel_data.begin());
    } else {
      blockers += fmt::format(
          "PL_BLOCKERS[{}] = setmetatable({{}}, {{ __index = function(t, code) return pl_codes(t, code, {}) end }})\n",
          rel, lua_string(data));
    }
    rel_data.push_back(data);
  }
  out += "-- The rest of the line of `data` that starts with `head` (which\n"
         "-- begins with a newline), from the last byte of head on; plain searches.\n"
         "local function pl_line(data, head)\n"
         "  local at = string.find(data, head, 1, true)\n"
         "  if not at then return nil end\n"
         "  at = at + #head - 1\n"
         "  return string.sub(data, at, string.find(data, \"\\n\", at, true) - 1)\n"
         "end\n";
  out += "-- PL_OPS[name] = { first = first code, roles = { role names }, not_inside = { {inner, outer} } }\n"
         "-- (role positions are 1-based, codes are 0-based); data: \"name first role,role inner>outer;\"\n"
         "local PL_OPS = setmetatable({}, { __index = function(t, name)\n"
         "  if type(name) ~= \"string\" or not string.find(name, \"^[a-z][a-z0-9_]*$\") then return nil end\n"
         "  local first, roles, ni = string.match(pl_line(" +
         lua_string(ops) +
         ", \"\\n\" .. name .. \" \") or \"\", \"^ (%d+) ([^ ]*) (.*)$\")\n"
         "  if not first then return nil end\n"
         "  local op = { first = tonumber(first), roles = {}, not_inside = {} }\n"
         "  for r in string.gmatch(roles, \"[^,]+\") do op.roles[#op.roles + 1] = r end\n"
         "  for i, o in string.gmatch(ni, \"(%d+)>(%d+)\") do op.not_inside[#op.not_inside + 1] = { tonumber(i), tonumber(o) } end\n"
         "  t[name] = op\n"
         "  return op\n"
         "end })\n"
         "-- PL_CODE_NAMES[code] = { op, role }; data: \"code op role\"\n"
         "local PL_CODE_NAMES = setmetatable({}, { __index = function(t, code)\n"
         "  if type(code) ~= \"number\" then return nil end\n"
         "  local o, r = string.match(pl_line(" +
         lua_string(names) +
         ", \"\\n\" .. code .. \" \") or \"\", \"^ (%S+) (%S+)$\")\n"
         "  if not o then return nil end\n"
         "  t[code] = { o, r }\n"
         "  return t[code]\n"
         "end })\n"
         "-- PL_BLOCKERS[relation][requested code] = { held codes that refuse it, ascending }\n"
         "-- relation: 0 same path, 1 held path is an ancestor, 2 held path is a descendant\n"
         "-- data per relation: \"requested:held,held,\"\n"
         "local function pl_codes(t, code, data)\n"
         "  if type(code) ~= \"number\" then return nil end\n"
         "  local list = pl_line(data, \"\\n\" .. code .. \":\")\n"
         "  if not list then return nil end\n"
         "  local codes = {}\n"
         "  for c in string.gmatch(list, \"%d+\") do codes[#codes + 1] = tonumber(c) end\n"
         "  t[code] = codes\n"
         "  return codes\n"
         "end\n"
         "local PL_BLOCKERS = {}\n" +
         blockers;
  return out;
}

std::string emit_lua(const Matrix& m, const LuaTemplate& tmpl, const std::vector<LuaTemplate>& includes) {
  const std::size_t at = tmpl.text.find(kLuaMarker);
  if (at == std::string::npos)
    throw MatrixError(fmt::format("lua template '{}' has no line '{}'", tmpl.name, kLuaMarker));
  std::string text = tmpl.text.substr(0, at) + emit_lua_tables(m) + tmpl.text.substr(at + kLuaMarker.size());
  constexpr std::string_view kInclude = "-- @PATHLOCK_INCLUDE ";
  for (std::size_t pos; (pos = text.find(kInclude)) != std::string::npos;) {
    const std::size_t name_at = pos + kInclude.size();
    const std::size_t end = text.find('@', name_at);
    if (end == std::string::npos)
      throw MatrixError(fmt::format("lua template '{}': unterminated include line", tmpl.name));
    const std::string name = text.substr(name_at, end - name_at);
    const auto inc = std::find_if(includes.begin(), includes.end(), [&](const LuaTemplate& i) { return i.name == name; });
    if (inc == includes.end())
      throw MatrixError(fmt::format("lua template '{}' includes unknown '{}' (expected lua/{}.luainc)", tmpl.name, name, name));
    if (inc->text.find(kInclude) != std::string::npos)
      throw MatrixError(fmt::format("lua include '{}' includes another file; includes do not nest", name));
    text.replace(pos, end + 1 - pos, inc->text);
  }
  return fmt::format("-- Generated from lua/{}.lua and matrix '{}' by pathlock-matrixc. Do not edit.\n", tmpl.name,
                     m.name) +
         text;
}

}  // namespace pathlock::matrix
