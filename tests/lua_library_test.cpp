// The shape of the Lua runtime (lua/README.md): one module per file, each
// opening with what it uses and provides, and a library whose top level
// stays far below Lua 5.1's limit of 200 local variables per function, which
// a real redis-server measures here.
#include "support/redis_server.hpp"

#include "redis/library.hpp"

#include <pathlock/matrix_table.hpp>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

using namespace pathlock;
using namespace pathlock::test;

namespace {

// Lua 5.1 (Redis's Lua) refuses a function with more than this many local
// variables active at once; the library loads as one chunk, one function.
constexpr int kLuaMaxLocals = 200;
// What the test allows: the top-level locals plus those of the largest
// module's do block. Far enough below the limit that a dozen helpers more
// never reach it, and adding a module (one top-level local) stays cheap.
constexpr int kLocalsBudget = 150;

// True when Redis compiles `code` (a library text) with `pad` more locals in
// front of it; a failure must be the limit on local variables.
bool loads_with_padding(const RedisServer& server, const std::string& code, int pad) {
  std::string text = "#!lua name=pathlock_locals_probe\n";
  for (int i = 0; i < pad; ++i) text += fmt::format("local pad_{}\n", i);
  text += code.substr(code.find('\n') + 1);
  const RedisReply r = server.command({"FUNCTION", "LOAD", "REPLACE", text});
  if (!r.is_error()) return true;
  INFO("FUNCTION LOAD with " << pad << " more locals: " << r.str);
  CHECK(r.str.find("local variables") != std::string::npos);
  return false;
}

// The runtime files in the order of the library text ("-- lua/NAME.lua").
std::vector<redis::LuaSource> sources_in_library_order() {
  const std::string code = redis::library_for(default_matrix()).code;
  std::map<std::size_t, redis::LuaSource> at;
  for (const redis::LuaSource& s : redis::lua_sources())
    at[code.find(fmt::format("-- lua/{}.lua\n", s.name))] = s;
  std::vector<redis::LuaSource> out;
  for (const auto& [pos, s] : at) out.push_back(s);
  return out;
}

// The header comment of a file (between "--[[" at its start and "]]"),
// and the rest.
std::pair<std::string, std::string> split_header(std::string_view text) {
  if (text.rfind("--[[\n", 0) != 0) return {"", std::string(text)};
  const std::size_t end = text.find("\n]]\n");
  if (end == std::string_view::npos) return {"", std::string(text)};
  return {std::string(text.substr(0, end)), std::string(text.substr(end + 4))};
}

// The text after "Label:" up to the next label or the end of the header.
std::string header_section(const std::string& header, const std::string& label) {
  const std::size_t from = header.find(label + ":");
  if (from == std::string::npos) return "";
  const std::size_t to = header.find_first_of(":", header.find('\n', from));
  const std::size_t stop = to == std::string::npos ? header.size() : header.rfind('\n', to);
  return header.substr(from + label.size() + 1, stop - from - label.size() - 1);
}

std::set<std::string> matches(const std::string& text, const std::string& pattern, int group = 1) {
  std::set<std::string> out;
  const std::regex re(pattern);
  for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end; ++it) out.insert((*it)[group]);
  return out;
}

std::string without_comments(const std::string& code) {
  return std::regex_replace(code, std::regex("--[^\n]*"), "");
}

// The lines of `code` that start at column 0 and are not comments.
std::vector<std::string> top_level_lines(const std::string& code) {
  std::vector<std::string> out;
  for (std::size_t at = 0; at < code.size();) {
    const std::size_t end = std::min(code.find('\n', at), code.size());
    const std::string line = code.substr(at, end - at);
    at = end + 1;
    if (!line.empty() && line[0] != ' ' && line.rfind("--", 0) != 0) out.push_back(line);
  }
  return out;
}

}  // namespace

TEST_CASE("the library keeps far fewer locals at its top level than Lua's limit of 200", "[redis][lua][locals]") {
  RedisServer server;
  const std::string code = redis::library_for(default_matrix()).code;
  REQUIRE(loads_with_padding(server, code, 0));
  // The most locals that can be added in front: 200 minus the library's peak.
  int ok = 0, refused = kLuaMaxLocals + 1;
  while (refused - ok > 1) {
    const int mid = (ok + refused) / 2;
    (loads_with_padding(server, code, mid) ? ok : refused) = mid;
  }
  const int peak = kLuaMaxLocals - ok;
  INFO("the library has " << peak << " locals active at once in its main chunk (its top-level locals plus those of "
       "the largest module's do block); Lua 5.1 allows " << kLuaMaxLocals << ", and FUNCTION LOAD fails beyond. "
       "Keep helpers inside a module (lua/README.md#modules); split a module that grew large");
  CHECK(peak <= kLocalsBudget);
  CHECK(peak > 30);  // the data chunk alone has more: the measure works
}

TEST_CASE("every runtime file is one module whose header says what it uses and provides", "[redis][lua]") {
  std::set<std::string> earlier;  // the modules of the files before this one
  const std::vector<redis::LuaSource> sources = sources_in_library_order();
  REQUIRE(sources.size() == redis::lua_sources().size());
  CHECK(sources.front().name == "std");
  CHECK(sources.back().name == "register");
  for (const redis::LuaSource& source : sources) {
    INFO("lua/" << source.name << ".lua");
    const auto [header, code] = split_header(source.text);
    REQUIRE_FALSE(header.empty());
    const std::string uses = header_section(header, "Uses"), provides = header_section(header, "Provides");
    CHECK_FALSE(uses.empty());
    CHECK_FALSE(provides.empty());
    if (source.name == "std") continue;  // the standard functions: upvalues of the whole chunk
    // At the top level: "local Name", then one do block (register.lua: the block only).
    const std::vector<std::string> top = top_level_lines(code);
    const std::string name = top.size() == 3 ? top[0].substr(6) : "";
    if (source.name == "register") {
      CHECK(top == std::vector<std::string>{"do", "end"});
    } else {
      REQUIRE(top.size() == 3);
      CHECK(std::regex_match(top[0], std::regex("local [A-Z][a-z]+")));
      CHECK(top[1] == "do");
      CHECK(top[2] == "end");
      // Provides: exactly the fields of the table the block ends with.
      const std::size_t table = code.rfind("\n  " + name + " = {");
      REQUIRE(table != std::string::npos);
      CHECK(matches(code.substr(table), R"((\w+) = \w+[,\s])") == matches(provides, name + R"(\.(\w+))"));
    }
    // Uses: every module field and every PL_ constant the code reads, and
    // only modules of earlier files (a later one would be a nil global).
    const std::string body = without_comments(code);
    for (const std::string& pl : matches(body, R"(\b(PL_[A-Z_]+))")) {
      INFO(pl);
      CHECK(uses.find(pl) != std::string::npos);
    }
    for (const std::string& module : matches(body, R"(\b([A-Z][a-z]+)\.\w+)")) {
      INFO(module);
      CHECK(earlier.count(module) == 1);
      CHECK(uses.find(module) != std::string::npos);
      // "Module (a, b)" names the fields used; a bare "Module" stands for all.
      const std::size_t listed = uses.find(module + " (");
      const std::string fields = listed == std::string::npos ? "" : uses.substr(listed, uses.find(')', listed) - listed);
      for (const std::string& field : matches(body, "\\b" + module + R"(\.(\w+))")) {
        INFO(module << "." << field);
        CHECK((listed == std::string::npos || std::regex_search(fields, std::regex("\\b" + field + "\\b"))));
      }
    }
    if (!name.empty()) earlier.insert(name);
  }
}

TEST_CASE("the runtime restates no number of the layout: each comes from the data chunk", "[redis][lua]") {
  // The numbers library.hpp defines for the layout (and the offsets they
  // make in entry members) never appear in code; the data chunk has them.
  const std::set<std::string> numbers{
      fmt::format("{}", redis::kCodesPerTag),      fmt::format("{}", redis::kMaxTags),
      fmt::format("{}", redis::kMaxFence),         fmt::format("{}", redis::kMaxDecimalDigits),
      fmt::format("{}", redis::kFenceDigits),      fmt::format("{}", redis::kFenceDigits + 1),
      fmt::format("{}", redis::kFenceDigits + 2),  fmt::format("{}", redis::kMaxKeyOverheadBytes),
      fmt::format("{}", redis::kReapLimit),        fmt::format("%0{}d", redis::kCodeDigits),
      fmt::format("%0{}.0f", redis::kFenceDigits), "\"same\"", "\"held_ancestor\"", "\"held_descendant\""};
  for (const redis::LuaSource& source : redis::lua_sources()) {
    const std::string body = without_comments(split_header(source.text).second);
    for (const std::string& n : numbers) {
      INFO("lua/" << source.name << ".lua: " << n);
      CHECK_FALSE(std::regex_search(body, std::regex("(^|[^\\w.])" + std::regex_replace(n, std::regex(R"(\.)"), R"(\.)") +
                                                     "($|[^\\w.])")));
    }
  }
}

TEST_CASE("a namespace's keys are named in one place, and read back from a key", "[redis][keys]") {
  const std::vector<std::string> keys = redis::namespace_keys("web");
  REQUIRE(keys.size() == std::size(redis::kKeySuffixes));
  CHECK(keys.front() == "pl:{web}:meta");
  CHECK(redis::namespace_key("web", "wake") == keys.back());
  CHECK(redis::namespace_of_key("pl:{web}:meta", "meta") == "web");
  CHECK(redis::namespace_of_key("pl:{a:b}:meta", "meta") == "a:b");
  CHECK(redis::namespace_of_key("pl:{web}:idx", "meta").empty());
  CHECK(redis::namespace_of_key("xx:{web}:meta", "meta").empty());
  CHECK(redis::namespace_of_key("pl:{}:meta", "meta").empty());
  CHECK(redis::namespace_of_key("meta", "meta").empty());
}
