// The layout of every reply of the Redis backend's Functions library
// (src/redis/replies.hpp), read field by field from direct calls against a
// real redis-server (support/redis_server.hpp; PATHLOCK_TEST_REDIS_URL
// selects an existing one). Moved out of redis_lua_test.cpp to keep both
// files under the 450-line limit.
#include "support/backends.hpp"
#include "support/redis_server.hpp"

#include "redis/replies.hpp"

#include <catch2/catch.hpp>

#include <cstddef>
#include <string>
#include <vector>

using namespace pathlock;
using namespace pathlock::test;  // servers and function calls of support/

namespace {

namespace reply = redis::reply;

// A refusal names what refused the request (an upload of /a/x) and whether it waits in line.
void check_refused(const RedisReply& r, const std::string& id, const std::string& op, const std::string& role,
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
}

// Rows of list and waiters start alike (replies.hpp asserts it): size, id, owner, op.
void check_row_start(const RedisReply& row, std::size_t size, const std::string& id, const std::string& owner,
                     const std::string& op) {
  REQUIRE(row.elements.size() == size);
  CHECK(row.elements[reply::lock_row::id].str == id);
  CHECK(row.elements[reply::lock_row::owner].str == owner);
  CHECK(row.elements[reply::lock_row::op].str == op);
}

// granted: a move_folder of /a to /b (id1), the namespace's first lock.
void check_granted_layout(FunctionCaller& eval) {
  const auto g = eval("acquire", {"svc", "move_folder", "30000", "id1", "tok1", "", "", "", "/a", "/b"});
  REQUIRE(g.elements.size() == reply::granted::size);
  CHECK(g.elements[reply::granted::status].str == "granted");
  CHECK(g.elements[reply::granted::id].str == "id1");
  CHECK(g.elements[reply::granted::token].str == "tok1");
  const long long fence = g.elements[reply::granted::fence].integer;
  CHECK(fence > 0);
  CHECK(g.elements[reply::granted::expires_in_ms].integer == 30000);
  CHECK(g.elements[reply::granted::holds].integer == 1);
}

// refused by a held lock, then by a waiter (w1 stays in line); returns the fence of the lock taken again (id4).
long long check_refused_layouts(FunctionCaller& eval) {
  const std::vector<std::string> upload{"w", "upload", "30000", "id2", "tok2", "", "", "", "/a/x"};
  auto waiting = upload;
  waiting.insert(waiting.end(), {"1", "w1", "2000"});
  const auto queued_by_lock = eval("acquire", waiting);
  check_refused(queued_by_lock, "id1", "move_folder", "src", "/a", "svc", 0);
  CHECK(queued_by_lock.elements[reply::refused::relation].str == "held_ancestor");
  // Once the lock is gone, a younger fair request that conflicts with w1 is
  // refused by w1's place in line.
  REQUIRE(eval("force_release", {"id1"}).elements.at(0).str == "released");
  const auto queued_by_waiter =
      eval("acquire", {"v", "delete_folder", "30000", "id3", "tok3", "", "", "", "/a/x", "1", "w2", "2000"});
  check_refused(queued_by_waiter, "w1", "upload", "target", "/a/x", "w", 1);
  CHECK(queued_by_waiter.elements[reply::refused::relation].str == "same");
  REQUIRE(eval("leave", {"w2"}).elements.at(0).str == "left");
  const auto again = eval("acquire", {"svc", "move_folder", "30000", "id4", "tok4", "", "", "", "/a", "/b", "0", "", "0"});
  REQUIRE(again.elements.at(0).str == "granted");
  return again.elements[reply::granted::fence].integer;
}

// list: one page with the lock id4 and its targets.
void check_list_layout(FunctionCaller& eval, long long fence4) {
  const auto list = eval("list", {"/", "10", ""});
  REQUIRE(list.elements.size() == reply::list::first_row + 1);
  CHECK(list.elements[reply::list::status].str == "locks");
  CHECK(list.elements[reply::list::next].str.empty());
  namespace f = reply::lock_row;
  const RedisReply& l = list.elements[reply::list::first_row];
  check_row_start(l, f::size, "id4", "svc", "move_folder");
  CHECK(l.elements[f::fence].integer == fence4);
  CHECK(l.elements[f::holds].integer == 1);
  CHECK(l.elements[f::expires_in_ms].integer > 0);
  REQUIRE(l.elements[f::targets].elements.size() == 4);
  CHECK(l.elements[f::targets].elements[1].str == "/a");
}

// blockers of a delete_folder of /a/x: the held lock id4, then the waiter w1.
void check_blockers_layout(FunctionCaller& eval, long long fence4) {
  const auto blockers = eval("blockers", {"delete_folder", "/a/x", "10"});
  CHECK(blockers.elements.at(reply::blockers::status).str == "blockers");
  CHECK(blockers.elements.at(reply::blockers::truncated).integer == 0);
  REQUIRE(blockers.elements.size() == reply::blockers::first_row + 2);  // the lock and w1
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

// waiters: the one waiter w1 (an upload of /a/x) and its targets.
void check_waiters_layout(FunctionCaller& eval) {
  const auto waiters = eval("waiters", {"/", "10"});
  CHECK(waiters.elements.at(reply::waiters::status).str == "waiters");
  REQUIRE(waiters.elements.size() == reply::waiters::first_row + 1);
  namespace f = reply::waiter_row;
  const RedisReply& w = waiters.elements[reply::waiters::first_row];
  check_row_start(w, f::size, "w1", "w", "upload");
  CHECK(w.elements[f::waited_ms].integer >= 0);
  CHECK(w.elements[f::expires_in_ms].integer <= 2000);
  REQUIRE(w.elements[f::targets].elements.size() == 2);
  CHECK(w.elements[f::targets].elements[0].str == "target");
  CHECK(w.elements[f::targets].elements[1].str == "/a/x");
}

}  // namespace

TEST_CASE("every reply has the layout of src/redis/replies.hpp", "[redis][lua]") {
  const RedisServer& server = shared_redis_server();
  const std::string ns = test::unique_namespace("layout");
  FunctionCaller eval(server.url(), default_matrix(), ns);
  check_granted_layout(eval);
  const long long fence4 = check_refused_layouts(eval);
  check_list_layout(eval, fence4);
  check_blockers_layout(eval, fence4);
  check_waiters_layout(eval);
  CHECK(eval("leave", {"w1"}).elements.at(0).str == "left");
  CHECK(eval("force_release", {"id4"}).elements.at(0).str == "released");
}
