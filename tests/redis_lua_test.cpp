// The Redis backend's Functions library called directly, as a service in
// another language would (docs/lua-protocol.md), against a real redis-server
// (support/redis_server.hpp; PATHLOCK_TEST_REDIS_URL selects an existing one):
// arguments, proofs and idempotency keys, the C++ limits, and the Lua sources
// themselves (the commands they run, the size of their functions). The layout
// of every reply (src/redis/replies.hpp) is redis_replies_test.cpp's.
#include "support/backends.hpp"
#include "support/redis_server.hpp"

#include "core/waiting.hpp"
#include "redis/library.hpp"

#include <pathlock/engine.hpp>
#include <pathlock/path.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <regex>
#include <set>
#include <string>
#include <utility>
#include <vector>

using namespace pathlock;
using namespace pathlock::test;  // servers and function calls of support/

TEST_CASE("direct calls: numbers are decimal digits only, and proofs and keys work as docs/lua-protocol.md says",
          "[redis][lua][identity]") {
  const RedisServer& server = shared_redis_server();
  const std::string ns = test::unique_namespace("dec");
  FunctionCaller eval(server.url(), default_matrix(), ns);
  // ttl, reserve_ms, renew's ttl and list's limit: no exponent, hex, sign or
  // blank (a client sending 0x10 believing it decimal must not get 16 ms).
  for (const std::string& bad : std::vector<std::string>{"1e3", "0x10", " 10", "10 ", "+10", "-1", "1.0", "", "0", "1000000000000000"}) {
    INFO("ttl '" << bad << "'");
    CHECK(eval("acquire", {"o", "upload", bad, "i1", "t1", "", "", "", "/a"}).elements.at(0).str == "invalid");
    CHECK(eval("acquire", {"o", "upload", "100", "i1", "t1", "", "", "", "/a", "1", "wA", bad}).elements.at(0).str ==
          (bad == "0" ? "granted" : "invalid"));
    if (bad == "0") CHECK(eval("force_release", {"i1"}).elements.at(0).str == "released");
  }
  auto g = eval("acquire", {"o", "upload", "30000", "i2", "t2", "", "", "", "/b"});
  REQUIRE(g.elements.at(0).str == "granted");
  for (const std::string& bad : std::vector<std::string>{"1e3", "0x10", " 10", "-5"}) {
    INFO("renew/list '" << bad << "'");
    CHECK(eval("renew", {"i2", "t2", bad}).elements.at(0).str == "invalid");
    CHECK(eval("list", {"/", bad, ""}).elements.at(0).str == "invalid");
  }
  CHECK(eval("renew", {"i2", "t2", "40000"}).elements.at(1).integer == 40000);
  // Reentry by proof: id and token; a wrong token or unknown id answers
  // not_holder and nothing else; other targets are invalid.
  auto again = eval("acquire", {"p", "upload", "30000", "i3", "t3", "i2", "t2", "", "/b"});
  REQUIRE(again.elements.at(0).str == "granted");
  CHECK(again.elements.at(1).str == "i2");
  CHECK(again.elements.at(5).integer == 2);
  for (const auto& [id, token] : std::vector<std::pair<std::string, std::string>>{{"i2", "nope"}, {"zz", "t2"}}) {
    const auto r = eval("acquire", {"p", "upload", "30000", "i3", "t3", id, token, "", "/b"});
    REQUIRE(r.elements.size() == 1);
    CHECK(r.elements.at(0).str == "not_holder");
  }
  CHECK(eval("acquire", {"p", "upload", "30000", "i3", "t3", "i2", "t2", "", "/c"}).elements.at(0).str == "invalid");
  CHECK(eval("acquire", {"p", "upload", "30000", "i3", "t3", "i2", "", "", "/b"}).elements.at(0).str == "invalid");
  CHECK(eval("acquire", {"p", "upload", "30000", "i3", "t3", "i2", "t2", "k", "/b"}).elements.at(0).str == "invalid");
  // held: read-only, 1 or 0.
  CHECK(eval("held", {"i2", "t2"}).elements.at(1).integer == 1);
  CHECK(eval("held", {"i2", "x"}).elements.at(1).integer == 0);
  CHECK(eval("held", {"nope", "t2"}).elements.at(1).integer == 0);
  CHECK(eval("held", {"i2"}).elements.at(0).str == "invalid");
  // Idempotency keys: the same request gets its lock back; another is invalid.
  auto k1 = eval("acquire", {"o", "upload", "30000", "i4", "t4", "", "", "key.1", "/d"});
  REQUIRE(k1.elements.at(0).str == "granted");
  auto k2 = eval("acquire", {"o", "upload", "30000", "i5", "t5", "", "", "key.1", "/d"});
  REQUIRE(k2.elements.at(0).str == "granted");
  CHECK(k2.elements.at(1).str == "i4");
  CHECK(k2.elements.at(5).integer == 1);
  CHECK(eval("acquire", {"o", "upload", "30000", "i6", "t6", "", "", "key.1", "/e"}).elements.at(0).str == "invalid");
  CHECK(eval("acquire", {"o", "upload", "30000", "i6", "t6", "", "", "bad key", "/e"}).elements.at(0).str == "invalid");
  CHECK(server.command({"HGET", prefix_of(ns) + "locks", "k:key.1"}).str == "i4");
  CHECK(eval("force_release", {"i4"}).elements.at(0).str == "released");
  CHECK(server.command({"HEXISTS", prefix_of(ns) + "locks", "k:key.1"}).integer == 0);
}

namespace {

// acquire: a grant, a refusal by the held ancestor, and arguments it refuses.
void check_acquire_answers(FunctionCaller& eval) {
  auto r = eval("acquire", {"svc", "move_folder", "30000", "id1", "tok1", "", "", "", "/a", "/b"});
  REQUIRE(r.elements.size() == 6);
  CHECK(r.elements[0].str == "granted");
  CHECK(r.elements[1].str == "id1");
  CHECK(r.elements[2].str == "tok1");
  CHECK(r.elements[3].integer > 0);
  CHECK(r.elements[4].integer == 30000);
  CHECK(r.elements[5].integer == 1);
  r = eval("acquire", {"svc2", "upload", "30000", "id2", "tok2", "", "", "", "/a/x"});
  REQUIRE(r.elements.size() == 11);
  CHECK(r.elements[0].str == "refused");
  CHECK(r.elements[1].str == "id1");
  CHECK(r.elements[9].str == "held_ancestor");
  CHECK(r.elements[10].integer == 0);  // a held lock, not a waiter (redis_wait_test.cpp covers those)
  for (const std::vector<std::string>& bad :
       std::vector<std::vector<std::string>>{{"svc", "nope", "1", "i", "t", "", "", "", "/a"},
                                             {"svc", "upload", "1", "i", "t"},
                                             {"svc", "upload", "0", "i", "t", "", "", "", "/a"},
                                             {"svc", "upload", "1.5", "i", "t", "", "", "", "/a"},
                                             {"svc", "upload", "100", "i/d", "t", "", "", "", "/a"},
                                             {"svc", "upload", "100", "i", "t", "", "", "", "a"},
                                             {"svc", "upload", "100", "i", "t", "", "", "", "/a//b"},
                                             {"svc", "upload", "100", "i", "t", "", "", "", "/a/"},
                                             {"svc", "upload", "100", "i", "t", "", "", "", "/a/../b"},
                                             {"svc", "move_folder", "100", "i", "t", "", "", "", "/a", "/a/in"}}) {
    r = eval("acquire", bad);
    INFO(bad[1] << " " << bad.back());
    CHECK(r.elements.at(0).str == "invalid");
  }
}

// Every key is declared, and must be the namespace's.
void check_declared_keys(FunctionCaller& eval, const MatrixTable& m, const std::string& ns) {
  RedisConnection& c = eval.connection;
  const std::string fn = redis::library_for(m).function_prefix + "acquire";
  std::vector<std::string> argv{"FCALL", fn, "9"};
  for (const std::string& k : redis::namespace_keys(ns)) argv.push_back(k);
  argv.insert(argv.end(), {"svc", "upload", "100", "i", "t", "", "", "", "/z"});
  std::vector<std::string> wrong = argv;
  wrong[3] = "pl:nohashtag:meta";
  CHECK(c.command(wrong).elements.at(0).str == "invalid");
  wrong = argv;
  wrong[5] = prefix_of(ns + "x") + "locks";
  CHECK(c.command(wrong).elements.at(0).str == "invalid");
  wrong = argv;
  wrong[2] = "8";
  wrong.erase(wrong.begin() + 11);
  CHECK(c.command(wrong).elements.at(0).str == "invalid");
}

}  // namespace

TEST_CASE("the library's functions can be called directly, as docs/lua-protocol.md says", "[redis][lua]") {
  const RedisServer& server = shared_redis_server();
  const MatrixTable& m = default_matrix();
  const std::string ns = test::unique_namespace("lua");
  FunctionCaller eval(server.url(), m, ns);
  check_acquire_answers(eval);
  check_declared_keys(eval, m, ns);
  auto r = eval("list", {"/", "10", ""});
  REQUIRE(r.elements.size() == 3);
  CHECK(r.elements[1].str.empty());  // the last page
  CHECK(r.elements[2].elements.at(0).str == "id1");
  CHECK(r.elements[2].elements.at(6).elements.size() == 4);  // src, /a, dst, /b
  CHECK(eval("renew", {"id1", "tok1", "5000"}).elements.at(1).integer == 5000);
  CHECK(eval("release", {"id1", "wrong"}).elements.at(0).str == "missing");
  r = eval("release", {"id1", "tok1"});
  CHECK(r.elements.at(0).str == "released");
  CHECK(r.elements.at(1).integer == 0);
  CHECK(ns_keys(server, ns) == kOnlyMeta);
}

namespace {

// acquire's arguments for an upload of path.
std::vector<std::string> upload(std::string owner, std::string ttl, std::string id, std::string token, std::string path,
                                std::string reenter_id = "", std::string reenter_token = "", std::string key = "") {
  return std::vector<std::string>{owner, "upload", ttl, id, token, reenter_id, reenter_token, key, path};
}

// A grant is released at once (by force: its id is the argument new_id).
void check_granted(FunctionCaller& eval, const std::vector<std::string>& args) {
  const RedisReply r = eval("acquire", args);
  REQUIRE(r.elements.at(0).str == "granted");
  CHECK(eval("force_release", {r.elements.at(1).str}).elements.at(0).str == "released");
}

// acquire's arguments at their limits: owner, ttl, id, token, proof, key, path.
void check_argument_limits(FunctionCaller& eval, const std::string& ttl, const std::string& over_ttl) {
  const auto status = [&](const std::vector<std::string>& args) { return eval("acquire", args).elements.at(0).str; };
  check_granted(eval, upload(std::string(kMaxOwnerBytes, 'o'), "100", "i", "t", "/p"));
  CHECK(status(upload(std::string(kMaxOwnerBytes + 1, 'o'), "100", "i", "t", "/p")) == "invalid");
  check_granted(eval, upload("o", ttl, "i", "t", "/p"));
  CHECK(status(upload("o", over_ttl, "i", "t", "/p")) == "invalid");
  check_granted(eval, upload("o", "100", std::string(kMaxIdBytes, 'i'), "t", "/p"));
  CHECK(status(upload("o", "100", std::string(kMaxIdBytes + 1, 'i'), "t", "/p")) == "invalid");
  check_granted(eval, upload("o", "100", "i", std::string(kMaxTokenBytes, 't'), "/p"));
  CHECK(status(upload("o", "100", "i", std::string(kMaxTokenBytes + 1, 't'), "/p")) == "invalid");
  CHECK(status(upload("o", "100", "i", "t", "/p", std::string(kMaxIdBytes, 'r'), "t")) == "not_holder");
  CHECK(status(upload("o", "100", "i", "t", "/p", std::string(kMaxIdBytes + 1, 'r'), "t")) == "invalid");
  CHECK(status(upload("o", "100", "i", "t", "/p", "r", std::string(kMaxTokenBytes, 't'))) == "not_holder");
  CHECK(status(upload("o", "100", "i", "t", "/p", "r", std::string(kMaxTokenBytes + 1, 't'))) == "invalid");
  check_granted(eval, upload("o", "100", "i", "t", "/p", "", "", std::string(kMaxIdempotencyKeyBytes, 'k')));
  CHECK(status(upload("o", "100", "i", "t", "/p", "", "", std::string(kMaxIdempotencyKeyBytes + 1, 'k'))) ==
        "invalid");
  std::string path;  // kMaxPathBytes: components of 255 and 15 bytes
  while (path.size() + 256 < kMaxPathBytes) path += "/" + std::string(kMaxComponentBytes, 'a');
  path += "/" + std::string(kMaxPathBytes - path.size() - 1, 'b');
  REQUIRE(path.size() == kMaxPathBytes);
  check_granted(eval, upload("o", "100", "i", "t", path));
  CHECK(status(upload("o", "100", "i", "t", path + "b")) == "invalid");
  CHECK(status(upload("o", "100", "i", "t", "/" + std::string(kMaxComponentBytes + 1, 'c'))) == "invalid");
}

// reserve_ms (0..kMaxTtl, capped at core::kMaxReservation), and the limits of waiters, blockers and list.
void check_query_limits(const RedisServer& server, FunctionCaller& eval, const std::string& ttl,
                        const std::string& over_ttl) {
  auto held = eval("acquire", {"h", "delete_folder", "30000", "h1", "ht", "", "", "", "/q"});
  REQUIRE(held.elements.at(0).str == "granted");
  auto wait = [&](const std::string& reserve) {
    auto args = upload("w", "100", "i", "t", "/q");
    args.insert(args.end(), {"1", "w1", reserve});
    return eval("acquire", args).elements.at(0).str;
  };
  CHECK(wait(over_ttl) == "invalid");
  const auto server_ms = [&] {
    const RedisReply t = server.command({"TIME"});
    return std::stoll(t.elements.at(0).str) * 1000 + std::stoll(t.elements.at(1).str) / 1000;
  };
  const long long before = server_ms();
  CHECK(wait(ttl) == "refused");
  const RedisReply w = eval("waiters", {"/", std::to_string(kMaxWaiters)});
  const long long after = server_ms();
  REQUIRE(w.elements.size() == 2);
  const long long left = w.elements.at(1).elements.at(4).integer;
  CHECK(left <= core::kMaxReservation.count());
  CHECK(left >= core::kMaxReservation.count() - (after - before));
  CHECK(eval("leave", {"w1"}).elements.at(0).str != "invalid");
  CHECK(eval("waiters", {"/", std::to_string(kMaxWaiters + 1)}).elements.at(0).str == "invalid");
  CHECK(eval("blockers", {"upload", "/q", std::to_string(kMaxBlockers)}).elements.at(0).str == "blockers");
  CHECK(eval("blockers", {"upload", "/q", std::to_string(kMaxBlockers + 1)}).elements.at(0).str == "invalid");
  // blockers validates the paths as acquire does: a move's dst at or inside its src is refused (it listed rows).
  CHECK(eval("blockers", {"move_folder", "/q", "/r", "10"}).elements.at(0).str == "blockers");
  for (const char* dst : {"/q", "/q/in"}) {
    const RedisReply nested = eval("blockers", {"move_folder", "/q", dst, "10"});
    CHECK(nested.elements.at(0).str == "invalid");
    CHECK(nested.elements.at(1).str == "move_folder: dst may not be src or inside it");
    CHECK(eval("blockers", {"move_folder", "/q", dst, "10", "", "1"}).elements.at(0).str == "invalid");
  }
  CHECK(eval("list", {"/", std::to_string(kMaxListLimit), ""}).elements.at(0).str == "locks");
  CHECK(eval("list", {"/", std::to_string(kMaxListLimit + 1), ""}).elements.at(0).str == "invalid");
  CHECK(eval("force_release", {"h1"}).elements.at(0).str == "released");
}

}  // namespace

TEST_CASE("the functions enforce the C++ limits: the constant is accepted, one more refused", "[redis][lua][limits]") {
  const RedisServer& server = shared_redis_server();
  const std::string ns = test::unique_namespace("limits");
  FunctionCaller eval(server.url(), default_matrix(), ns);
  const std::string ttl = std::to_string(kMaxTtl.count());
  const std::string over_ttl = std::to_string(kMaxTtl.count() + 1);
  check_argument_limits(eval, ttl, over_ttl);
  check_query_limits(server, eval, ttl, over_ttl);
  // The namespace: 1..kMaxNamespaceBytes in the keys' hash tag.
  std::string long_ns = ns + std::string(kMaxNamespaceBytes, 'n');
  long_ns.resize(kMaxNamespaceBytes);
  FunctionCaller at_limit(server.url(), default_matrix(), long_ns);
  {
    const RedisReply r = at_limit("acquire", upload("o", "100", "i", "t", "/p"));
    REQUIRE(r.elements.at(0).str == "granted");
    CHECK(at_limit("force_release", {"i"}).elements.at(0).str == "released");
  }
  FunctionCaller over_limit(server.url(), default_matrix(), long_ns + "n");
  CHECK(over_limit("acquire", upload("o", "100", "i", "t", "/p")).elements.at(0).str == "invalid");
}

TEST_CASE("the functions run only the commands listed in COMMANDS, which probe and writable() check", "[redis][lua]") {
  std::string all, listed_block;
  for (const redis::LuaSource& source : redis::lua_sources()) {
    all += std::regex_replace(std::string(source.text), std::regex("--[^\n]*"), "");  // code, not comments
    if (source.name != "commands") continue;
    const std::string text(source.text);
    const std::size_t from = text.find("local COMMANDS = {");
    REQUIRE(from != std::string::npos);
    listed_block = text.substr(from, text.find("\n  }\n", from) - from);
  }
  const auto names = [](const std::string& text, const std::regex& pattern) {
    std::set<std::string> out;
    for (std::sregex_iterator it(text.begin(), text.end(), pattern), end; it != end; ++it) out.insert((*it)[1]);
    return out;
  };
  const std::set<std::string> listed = names(listed_block, std::regex(R"re(\{ "([A-Z]+)")re"));
  const std::set<std::string> used = names(all, std::regex(R"re((?:rcall|rpcall|chunked)\("([A-Z]+)")re"));
  REQUIRE(used.size() > 10);
  for (const std::string& command : used) {
    INFO(command);
    CHECK(listed.count(command) == 1);
  }
  // Every command is sent through rcall, rpcall or chunked, with its name
  // written out (chunked's own two rcall lines pass theirs on).
  CHECK(names(all, std::regex(R"re((redis\.p?call)\()re")).empty());
  const std::regex unnamed(R"re((?:rcall|rpcall|chunked)\((?!")([a-z]+))re");
  CHECK(names(all, unnamed) == std::set<std::string>{"cmd"});
}

TEST_CASE("every step of the Lua functions is a small function: at most 40 lines", "[redis][lua]") {
  // A function of a module starts with "local function" two spaces in
  // (inside the module's do block; std.lua's at column 0) and ends at the
  // next "end" with the same indentation (the style of lua/*.lua).
  std::size_t functions = 0;
  for (const redis::LuaSource& source : redis::lua_sources()) {
    std::size_t line_no = 0, start = 0;
    std::string name, indent;
    const std::string text(source.text);
    for (std::size_t at = 0; at < text.size();) {
      const std::size_t end = std::min(text.find('\n', at), text.size());
      const std::string line = text.substr(at, end - at);
      at = end + 1;
      ++line_no;
      const std::size_t first = line.find_first_not_of(' ');
      if (first <= 2 && line.compare(first, 15, "local function ") == 0) {
        indent = line.substr(0, first);
        name = line.substr(first + 15, line.find('(') - first - 15);
        start = line_no;
      } else if (!name.empty() && line.rfind(indent + "end", 0) == 0) {
        INFO("lua/" << source.name << ".lua: " << name << " (line " << start << ")");
        CHECK(line_no - start + 1 <= 40);
        ++functions;
        name.clear();
      }
    }
  }
  CHECK(functions > 50);
}
