// Rolling upgrade from pathlock 0.1 to 0.2 on one Redis server
// (docs/changes.md#rolling-upgrade-from-01, docs/lua-protocol.md#versions).
// The 0.1 library is the text 0.1's pathlock-matrixc wrote for the shipped
// matrix (tests/data/pathlock-0.1-library.txt), called as a 0.1 service
// would. Against a real redis-server:
//   * both libraries load on one server and keep their own functions;
//     0.2's name is a hash of its whole text, and it loads without REPLACE;
//   * a namespace 0.1 holds locks in is refused by 0.2 with an error naming
//     both versions, and one 0.2 writes is refused by 0.1: no namespace is
//     ever served by both, so no conflicting pair is granted across them;
//   * a namespace 0.1 drained moves to 0.2 on its next grant, fences going on.
#include <catch2/catch.hpp>
#include <pathlock/engine.hpp>
#include <pathlock/version.hpp>
#include <pathlock/memory.hpp>

#include "redis/library.hpp"
#include "support/backends.hpp"
#include "support/redis_server.hpp"

#include <fstream>
#include <regex>
#include <sstream>

using namespace pathlock;
using namespace std::chrono_literals;
using test::RedisConnection;
using test::RedisReply;

namespace {

std::string old_library() {
  std::ifstream in(PATHLOCK_SOURCE_DIR "/tests/data/pathlock-0.1-library.txt", std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// An FCALL of the 0.1 library, argv as 0.1's docs/lua-protocol.md says.
RedisReply call_01(RedisConnection& c, const std::string& function, const std::string& ns,
                   const std::vector<std::string>& args) {
  std::vector<std::string> argv{"FCALL", "pl_v3_6b91dbf92bc4d50a9508adb10fd37f59_" + function, "9"};
  for (const std::string& k : redis::namespace_keys(ns)) argv.push_back(k);
  argv.insert(argv.end(), args.begin(), args.end());
  return c.command(argv);
}

}  // namespace

TEST_CASE("upgrade: library names are hashes of the whole text and versions load side by side", "[redis][upgrade]") {
  const redis::Library now = redis::library_for(default_matrix());
  CHECK(std::regex_match(now.name, std::regex("pathlock_v4_[0-9a-f]{16}")));
  CHECK(now.function_prefix == "pl_" + now.name.substr(std::string("pathlock_").size()) + "_");
  CHECK(now.code.rfind("#!lua name=" + now.name + "\n", 0) == 0);
  CHECK(redis::library_for(default_matrix()).code == now.code);  // the same table, the same bytes
  test::RedisServer server;
  RedisConnection c(server.url());
  REQUIRE(c.command({"FUNCTION", "LOAD", old_library()}).str == "pathlock_v3_6b91dbf92bc4d50a9508adb10fd37f59");
  auto engine = test::redis_engine(server.url());
  auto again = test::redis_engine(server.url());  // loading the same text again is no error
  const RedisReply listed = c.command({"FUNCTION", "LIST"});
  CHECK(listed.elements.size() == 2);
  // A second load of 0.2's text is refused by name, never replaces it.
  CHECK(c.command({"FUNCTION", "LOAD", now.code}).str.find("already exists") != std::string::npos);
  // Both answer, each with its own code.
  CHECK(engine->acquire({"ns-02", "alice", "upload", {{"target", "/a"}}}).granted());
  CHECK(call_01(c, "acquire", "ns-01", {"alice", "upload", "30000", "id1", "tok1", "/a"}).elements.at(0).str ==
        "granted");
}

TEST_CASE("upgrade: 0.1 and 0.2 never serve one namespace at once", "[redis][upgrade]") {
  test::RedisServer server;
  RedisConnection c(server.url());
  REQUIRE_FALSE(c.command({"FUNCTION", "LOAD", old_library()}).is_error());
  auto engine = test::redis_engine(server.url());

  // 0.1 holds a move of /p/A: 0.2 refuses the namespace, naming both versions,
  // for the conflicting request and for any other.
  const RedisReply held = call_01(c, "acquire", "shared", {"alice", "move_folder", "30000", "m1", "t1", "/p/A", "/p/B"});
  REQUIRE(held.elements.at(0).str == "granted");
  const auto fence_01 = held.elements.at(3).integer;
  for (const char* path : {"/p/A/C", "/elsewhere"}) {
    INFO(path);
    CHECK_THROWS_WITH(engine->acquire({"shared", "bob", "upload", {{"target", path}}}),
                      Catch::Contains("layout 3") && Catch::Contains("pathlock 0.1") &&
                          Catch::Contains("this is pathlock " PATHLOCK_VERSION_STRING) &&
                          Catch::Contains("layout 4"));
  }
  CHECK_THROWS_AS(engine->list("shared"), BackendError);
  CHECK_THROWS_AS(engine->is_held("shared", "m1", "t1"), BackendError);

  // 0.2 writes a namespace first: 0.1 refuses it (its "layout" reply).
  REQUIRE(engine->acquire({"fresh", "alice", "move_folder", {{"src", "/p/A"}, {"dst", "/p/B"}}}).granted());
  const RedisReply refused = call_01(c, "acquire", "fresh", {"bob", "upload", "30000", "u1", "t1", "/p/A/C"});
  REQUIRE(refused.elements.size() == 3);
  CHECK(refused.elements.at(0).str == "layout");
  CHECK(refused.elements.at(1).str == "4.2");  // layout 4, its keys expiring (docs/lua-protocol.md#expiry)
  CHECK(refused.elements.at(2).str == "3");

  // Once 0.1's last lock is gone, the namespace moves to 0.2 at its next
  // grant (fences go on), and 0.1 is refused there from then on.
  CHECK(call_01(c, "release", "shared", {"m1", "t1"}).elements.at(0).str == "released");
  CHECK(engine->list("shared").empty());  // served as 0.2 while empty
  const auto moved = engine->acquire({"shared", "bob", "upload", {{"target", "/p/A/C"}}});
  REQUIRE(moved.granted());
  CHECK(moved.grant.fence > static_cast<std::uint64_t>(fence_01));
  CHECK(c.command({"HGET", "pl:{shared}:meta", "layout"}).str == "4.2");
  CHECK(call_01(c, "acquire", "shared", {"alice", "move_folder", "30000", "m2", "t2", "/p/A", "/p/B"})
            .elements.at(0)
            .str == "layout");
}
