// The Redis backend's Functions library called directly, as a service in
// another language would (docs/lua-protocol.md), against a real redis-server
// (support/redis_server.hpp; PATHLOCK_TEST_REDIS_URL selects an existing one):
// arguments, proofs and idempotency keys, the C++ limits, the layout of every
// reply (src/redis/replies.hpp), and the Lua sources themselves (the commands
// they run, the size of their functions).
#include "support/backends.hpp"
#include "support/redis_server.hpp"

#include "core/waiting.hpp"
#include "redis/library.hpp"
#include "redis/replies.hpp"

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

TEST_CASE("the library's functions can be called directly, as docs/lua-protocol.md says", "[redis][lua]") {
  const RedisServer& server = shared_redis_server();
  const MatrixTable& m = default_matrix();
  const std::string ns = test::unique_namespace("lua");
  FunctionCaller eval(server.url(), m, ns);
  RedisConnection& c = eval.connection;
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
  // Every key is declared, and must be the namespace's.
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
  r = eval("list", {"/", "10", ""});
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

TEST_CASE("the functions enforce the C++ limits: the constant is accepted, one more refused", "[redis][lua][limits]") {
  const RedisServer& server = shared_redis_server();
  const std::string ns = test::unique_namespace("limits");
  FunctionCaller eval(server.url(), default_matrix(), ns);
  const auto status = [&](const std::vector<std::string>& args) { return eval("acquire", args).elements.at(0).str; };
  // A grant is released at once (by force: its id is the argument new_id).
  const auto granted = [&](std::vector<std::string> args) {
    const RedisReply r = eval("acquire", args);
    REQUIRE(r.elements.at(0).str == "granted");
    CHECK(eval("force_release", {r.elements.at(1).str}).elements.at(0).str == "released");
  };
  const auto acquire = [](std::string owner, std::string ttl, std::string id, std::string token, std::string path,
                          std::string reenter_id = "", std::string reenter_token = "", std::string key = "") {
    return std::vector<std::string>{owner, "upload", ttl, id, token, reenter_id, reenter_token, key, path};
  };
  const std::string ttl = std::to_string(kMaxTtl.count());
  const std::string over_ttl = std::to_string(kMaxTtl.count() + 1);
  granted(acquire(std::string(kMaxOwnerBytes, 'o'), "100", "i", "t", "/p"));
  CHECK(status(acquire(std::string(kMaxOwnerBytes + 1, 'o'), "100", "i", "t", "/p")) == "invalid");
  granted(acquire("o", ttl, "i", "t", "/p"));
  CHECK(status(acquire("o", over_ttl, "i", "t", "/p")) == "invalid");
  granted(acquire("o", "100", std::string(kMaxIdBytes, 'i'), "t", "/p"));
  CHECK(status(acquire("o", "100", std::string(kMaxIdBytes + 1, 'i'), "t", "/p")) == "invalid");
  granted(acquire("o", "100", "i", std::string(kMaxTokenBytes, 't'), "/p"));
  CHECK(status(acquire("o", "100", "i", std::string(kMaxTokenBytes + 1, 't'), "/p")) == "invalid");
  CHECK(status(acquire("o", "100", "i", "t", "/p", std::string(kMaxIdBytes, 'r'), "t")) == "not_holder");
  CHECK(status(acquire("o", "100", "i", "t", "/p", std::string(kMaxIdBytes + 1, 'r'), "t")) == "invalid");
  CHECK(status(acquire("o", "100", "i", "t", "/p", "r", std::string(kMaxTokenBytes, 't'))) == "not_holder");
  CHECK(status(acquire("o", "100", "i", "t", "/p", "r", std::string(kMaxTokenBytes + 1, 't'))) == "invalid");
  granted(acquire("o", "100", "i", "t", "/p", "", "", std::string(kMaxIdempotencyKeyBytes, 'k')));
  CHECK(status(acquire("o", "100", "i", "t", "/p", "", "", std::string(kMaxIdempotencyKeyBytes + 1, 'k'))) ==
        "invalid");
  std::string path;  // kMaxPathBytes: components of 255 and 15 bytes
  while (path.size() + 256 < kMaxPathBytes) path += "/" + std::string(kMaxComponentBytes, 'a');
  path += "/" + std::string(kMaxPathBytes - path.size() - 1, 'b');
  REQUIRE(path.size() == kMaxPathBytes);
  granted(acquire("o", "100", "i", "t", path));
  CHECK(status(acquire("o", "100", "i", "t", path + "b")) == "invalid");
  CHECK(status(acquire("o", "100", "i", "t", "/" + std::string(kMaxComponentBytes + 1, 'c'))) == "invalid");
  // reserve_ms: 0..kMaxTtl, capped at core::kMaxReservation.
  auto held = eval("acquire", {"h", "delete_folder", "30000", "h1", "ht", "", "", "", "/q"});
  REQUIRE(held.elements.at(0).str == "granted");
  auto wait = [&](const std::string& reserve) {
    auto args = acquire("w", "100", "i", "t", "/q");
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
  CHECK(eval("list", {"/", std::to_string(kMaxListLimit), ""}).elements.at(0).str == "locks");
  CHECK(eval("list", {"/", std::to_string(kMaxListLimit + 1), ""}).elements.at(0).str == "invalid");
  CHECK(eval("force_release", {"h1"}).elements.at(0).str == "released");
  // The namespace: 1..kMaxNamespaceBytes in the keys' hash tag.
  std::string long_ns = ns + std::string(kMaxNamespaceBytes, 'n');
  long_ns.resize(kMaxNamespaceBytes);
  FunctionCaller at_limit(server.url(), default_matrix(), long_ns);
  {
    const RedisReply r = at_limit("acquire", acquire("o", "100", "i", "t", "/p"));
    REQUIRE(r.elements.at(0).str == "granted");
    CHECK(at_limit("force_release", {"i"}).elements.at(0).str == "released");
  }
  FunctionCaller over_limit(server.url(), default_matrix(), long_ns + "n");
  CHECK(over_limit("acquire", acquire("o", "100", "i", "t", "/p")).elements.at(0).str == "invalid");
}

TEST_CASE("every reply has the layout of src/redis/replies.hpp", "[redis][lua]") {
  namespace reply = redis::reply;
  const RedisServer& server = shared_redis_server();
  const std::string ns = test::unique_namespace("layout");
  FunctionCaller eval(server.url(), default_matrix(), ns);
  const auto g = eval("acquire", {"svc", "move_folder", "30000", "id1", "tok1", "", "", "", "/a", "/b"});
  REQUIRE(g.elements.size() == reply::granted::size);
  CHECK(g.elements[reply::granted::status].str == "granted");
  CHECK(g.elements[reply::granted::id].str == "id1");
  CHECK(g.elements[reply::granted::token].str == "tok1");
  const long long fence = g.elements[reply::granted::fence].integer;
  CHECK(fence > 0);
  CHECK(g.elements[reply::granted::expires_in_ms].integer == 30000);
  CHECK(g.elements[reply::granted::holds].integer == 1);

  const std::vector<std::string> upload{"w", "upload", "30000", "id2", "tok2", "", "", "", "/a/x"};
  const auto refused = [](const RedisReply& r, const std::string& id, const std::string& op, const std::string& role,
                          const std::string& path, const std::string& owner, long long queued) {
    namespace f = reply::refused;
    REQUIRE(r.elements.size() == f::size);
    CHECK(r.elements[f::status].str == "refused");
    CHECK(r.elements[f::id].str == id);
    CHECK(r.elements[f::op].str == op);
    CHECK(r.elements[f::role].str == role);
    CHECK(r.elements[f::path].str == path);
    CHECK(r.elements[f::owner].str == owner);
    CHECK(r.elements[f::expires_in_ms].integer > 0);
    CHECK(r.elements[f::requested_role].str == "target");
    CHECK(r.elements[f::requested_path].str == "/a/x");
    CHECK(r.elements[f::queued].integer == queued);
  };
  auto waiting = upload;
  waiting.insert(waiting.end(), {"1", "w1", "2000"});
  const auto queued_by_lock = eval("acquire", waiting);
  refused(queued_by_lock, "id1", "move_folder", "src", "/a", "svc", 0);
  CHECK(queued_by_lock.elements[reply::refused::relation].str == "held_ancestor");
  // Once the lock is gone, a younger fair request that conflicts with w1 is
  // refused by w1's place in line.
  REQUIRE(eval("force_release", {"id1"}).elements.at(0).str == "released");
  const auto queued_by_waiter =
      eval("acquire", {"v", "delete_folder", "30000", "id3", "tok3", "", "", "", "/a/x", "1", "w2", "2000"});
  refused(queued_by_waiter, "w1", "upload", "target", "/a/x", "w", 1);
  CHECK(queued_by_waiter.elements[reply::refused::relation].str == "same");
  REQUIRE(eval("leave", {"w2"}).elements.at(0).str == "left");
  const auto again = eval("acquire", {"svc", "move_folder", "30000", "id4", "tok4", "", "", "", "/a", "/b", "0", "", "0"});
  REQUIRE(again.elements.at(0).str == "granted");
  const long long fence4 = again.elements[reply::granted::fence].integer;

  const auto list = eval("list", {"/", "10", ""});
  REQUIRE(list.elements.size() == reply::list::first_row + 1);
  CHECK(list.elements[reply::list::status].str == "locks");
  CHECK(list.elements[reply::list::next].str.empty());
  // Rows of list and waiters start alike (replies.hpp asserts it).
  const auto who = [](const RedisReply& row, std::size_t size, const std::string& id, const std::string& owner,
                      const std::string& op) {
    REQUIRE(row.elements.size() == size);
    CHECK(row.elements[reply::lock_row::id].str == id);
    CHECK(row.elements[reply::lock_row::owner].str == owner);
    CHECK(row.elements[reply::lock_row::op].str == op);
  };
  {
    namespace f = reply::lock_row;
    const RedisReply& l = list.elements[reply::list::first_row];
    who(l, f::size, "id4", "svc", "move_folder");
    CHECK(l.elements[f::fence].integer == fence4);
    CHECK(l.elements[f::holds].integer == 1);
    CHECK(l.elements[f::expires_in_ms].integer > 0);
    REQUIRE(l.elements[f::targets].elements.size() == 4);
    CHECK(l.elements[f::targets].elements[1].str == "/a");
  }
  const auto blockers = eval("blockers", {"delete_folder", "/a/x", "10"});
  CHECK(blockers.elements.at(reply::blockers::status).str == "blockers");
  CHECK(blockers.elements.at(reply::blockers::truncated).integer == 0);
  REQUIRE(blockers.elements.size() == reply::blockers::first_row + 2);  // the lock and w1
  {
    namespace f = reply::blocker_row;
    const RedisReply& held = blockers.elements[reply::blockers::first_row];
    REQUIRE(held.elements.size() == f::size);
    CHECK(held.elements[f::queued].integer == 0);
    CHECK(held.elements[f::id].str == "id4");
    CHECK(held.elements[f::owner].str == "svc");
    CHECK(held.elements[f::op].str == "move_folder");
    CHECK(held.elements[f::role].str == "src");
    CHECK(held.elements[f::path].str == "/a");
    CHECK(held.elements[f::requested_role].str == "target");
    CHECK(held.elements[f::requested_path].str == "/a/x");
    CHECK(held.elements[f::relation].str == "held_ancestor");
    CHECK(held.elements[f::fence].integer == fence4);
    CHECK(held.elements[f::holds].integer == 1);
    CHECK(held.elements[f::expires_in_ms].integer > 0);
    CHECK(held.elements[f::waited_ms].integer == 0);
    const RedisReply& waiter = blockers.elements[reply::blockers::first_row + 1];
    REQUIRE(waiter.elements.size() == f::size);
    CHECK(waiter.elements[f::queued].integer == 1);
    CHECK(waiter.elements[f::id].str == "w1");
    CHECK(waiter.elements[f::owner].str == "w");
    CHECK(waiter.elements[f::fence].integer == 0);
    CHECK(waiter.elements[f::holds].integer == 0);
  }
  const auto waiters = eval("waiters", {"/", "10"});
  CHECK(waiters.elements.at(reply::waiters::status).str == "waiters");
  REQUIRE(waiters.elements.size() == reply::waiters::first_row + 1);
  {
    namespace f = reply::waiter_row;
    const RedisReply& w = waiters.elements[reply::waiters::first_row];
    who(w, f::size, "w1", "w", "upload");
    CHECK(w.elements[f::waited_ms].integer >= 0);
    CHECK(w.elements[f::expires_in_ms].integer <= 2000);
    REQUIRE(w.elements[f::targets].elements.size() == 2);
    CHECK(w.elements[f::targets].elements[0].str == "target");
    CHECK(w.elements[f::targets].elements[1].str == "/a/x");
  }
  CHECK(eval("leave", {"w1"}).elements.at(0).str == "left");
  CHECK(eval("force_release", {"id4"}).elements.at(0).str == "released");
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
