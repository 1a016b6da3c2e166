# cmake -DOUT=file.cpp -DFILES="a.lua|b.lua" -P EmbedLua.cmake
#
# Writes a C++ source defining pathlock::redis::lua_sources(): the name and
# text of each Lua file, as raw string literals in a constinit array. The
# array is constant-initialised (no first-use guard): a fork that lands while
# another thread makes its first engine cannot leave a guard held in the
# child (docs/design.md#fork). Run at build time by the
# Redis library target (CMakeLists.txt); OUT is rewritten only when its
# content changes, so an unchanged Lua file rebuilds nothing.
string(REPLACE "|" ";" FILES "${FILES}")
set(body "")
set(count 0)
foreach(file IN LISTS FILES)
  file(READ "${file}" text)
  get_filename_component(name "${file}" NAME_WE)
  string(FIND "${text}" ")PLUA\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${file} contains the raw-string delimiter )PLUA\"")
  endif()
  string(APPEND body "    {\"${name}\", R\"PLUA(${text})PLUA\"},\n")
  math(EXPR count "${count} + 1")
endforeach()
set(content "// Generated from lua/*.lua by tools/cmake/EmbedLua.cmake. Do not edit.
#include \"redis/library.hpp\"

namespace pathlock::redis {
namespace {

constinit const LuaSource kSources[]{
${body}};

}  // namespace

std::span<const LuaSource> lua_sources() noexcept { return kSources; }

}  // namespace pathlock::redis
")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
  if(old STREQUAL content)
    return()
  endif()
endif()
file(WRITE "${OUT}" "${content}")
