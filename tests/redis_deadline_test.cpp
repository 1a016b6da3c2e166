// Calls the caller gave up on do nothing later (issue 37, point 4, Redis):
// acquire carries its deadline on the server's clock and the function
// refuses to grant past it (docs/lua-protocol.md#deadlines), shown against a
// real redis-server kept busy by a script while a call waits behind it; and
// the bounded connection pool's error when every connection stays busy.
//
// How a call is made to run late, without sleeps standing in for order:
// CLIENT PAUSE WRITE holds every write command; a busy script is sent and
// seen postponed (CLIENT LIST), then the call, seen postponed behind it;
// CLIENT UNPAUSE then runs the script (for `busy_ms`) and the call after it,
// in that order (Redis runs postponed clients first in, first out), by which
// time a caller that waits less has given up.
#include "support/backends.hpp"
#include "support/lock_request.hpp"
#include "support/redis_server.hpp"

#include "redis/connection.hpp"
#include "redis/library.hpp"
#include "redis/pool.hpp"

#include <pathlock/engine.hpp>
#include <pathlock/redis_url.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

using namespace pathlock;
using namespace pathlock::test;

namespace {

// Runs for ARGV[1] ms of the server's clock, then returns 1.
constexpr const char* kBusyScript =
    "local function ms() local t = redis.call('TIME') return t[1] * 1000 + math.floor(t[2] / 1000) end "
    "local stop = ms() + tonumber(ARGV[1]) while ms() < stop do end return 1";

// Is a client whose last command is `cmd` postponed by CLIENT PAUSE?
bool postponed(const RedisServer& server, const std::string& cmd) {
  const std::string clients = server.command({"CLIENT", "LIST"}).str;
  std::size_t at = 0;
  while (at < clients.size()) {
    const std::size_t end = std::min(clients.find('\n', at), clients.size());
    const std::string line = clients.substr(at, end - at);
    at = end + 1;
    if (line.find(" flags=b ") != std::string::npos && line.find(" cmd=" + cmd + " ") != std::string::npos)
      return true;
  }
  return false;
}

// Makes the call that `send` starts (its command `cmd`) run behind a busy
// script of `busy_ms` (see the file comment). Returns once both ran.
void run_behind_busy_script(const RedisServer& server, const std::function<void()>& send, const std::string& cmd,
                            int busy_ms) {
  REQUIRE(server.command({"CLIENT", "PAUSE", "30000", "WRITE"}).str == "OK");
  const long long before = test::command_calls(server, cmd);
  std::thread busy([&] {
    RedisConnection c(server.url());
    CHECK(c.command({"EVAL", kBusyScript, "0", std::to_string(busy_ms)}).integer == 1);
  });
  devtools::wait_for("deadline test", "the busy script to be postponed", [&] { return postponed(server, "eval"); });
  send();
  devtools::wait_for("deadline test", "the call to be postponed", [&] { return postponed(server, cmd); });
  REQUIRE(server.command({"CLIENT", "UNPAUSE"}).str == "OK");
  busy.join();
  devtools::wait_for("deadline test", "the call to run", [&] { return test::command_calls(server, cmd) > before; });
}

// FCALL acquire of the shipped matrix on `ns` ("upload" of `path`), with
// `deadline` as deadline_ms when given.
std::vector<std::string> acquire_argv(const std::string& ns, const std::string& path,
                                      const std::string* deadline = nullptr) {
  const redis::Library lib = redis::library_for(default_matrix());
  std::vector<std::string> argv{"FCALL", lib.function_prefix + "acquire", "9"};
  for (const std::string& k : redis::namespace_keys(ns)) argv.push_back(k);
  argv.insert(argv.end(), {"svc", "upload", "60000", "late1", "tok", "", "", "", path});
  if (deadline) argv.insert(argv.end(), {"1", "", "0", *deadline});
  return argv;
}

long long server_ms(const RedisServer& server) {
  const RedisReply t = server.command({"TIME"});
  return std::stoll(t.elements.at(0).str) * 1000 + std::stoll(t.elements.at(1).str) / 1000;
}

}  // namespace

TEST_CASE("acquire's deadline_ms: a call run at or after it answers late and changes nothing", "[redis][deadline]") {
  const RedisServer& server = shared_redis_server();
  const std::string ns = unique_namespace("dl");
  FunctionCaller eval(server.url(), default_matrix(), ns);
  const auto upload = [](const std::string& id, const std::string& path, const std::string& deadline) {
    return std::vector<std::string>{"o", "upload", "30000", id, "t", "", "", "", path, "1", "", "0", deadline};
  };
  const long long now = server_ms(server);
  const RedisReply late = eval("acquire", upload("i1", "/a", std::to_string(now - 1)));
  REQUIRE(late.elements.size() == 2);
  CHECK(late.elements[0].str == "late");
  CHECK(late.elements[1].type == RedisReply::Type::integer);
  CHECK(late.elements[1].integer >= now);
  CHECK(ns_keys(server, ns).empty());  // nothing written, not even meta
  // In time, or no deadline at all (empty): granted as without it.
  CHECK(eval("acquire", upload("i2", "/b", std::to_string(now + 60000))).elements.at(0).str == "granted");
  CHECK(eval("acquire", upload("i3", "/c", "")).elements.at(0).str == "granted");
  for (const std::string bad : {"x", "-1", "1e3", " 5"}) {
    INFO("deadline '" << bad << "'");
    CHECK(eval("acquire", upload("i4", "/d", bad)).elements.at(0).str == "invalid");
  }
  // The deadline needs the three line arguments before it.
  CHECK(eval("acquire", {"o", "upload", "30000", "i5", "t", "", "", "", "/e", "1", ""}).elements.at(0).str ==
        "invalid");
}

TEST_CASE("a raw acquire run behind a busy script: granted without a deadline, late with one", "[redis][deadline]") {
  const RedisServer server;  // private: this test pauses it
  const std::string ns = unique_namespace("dlraw");
  FunctionCaller load(server.url(), default_matrix(), ns);
  REQUIRE(load("held", {"x", "y"}).elements.at(0).str == "held");  // the library, loaded before the pause
  // Without a deadline the call runs whenever the server reads it: the lock
  // its caller stopped waiting for is taken.
  RedisReply reply;
  std::thread caller;
  run_behind_busy_script(
      server,
      [&] {
        caller = std::thread([&] { reply = RedisConnection(server.url()).command(acquire_argv(ns, "/p")); });
      },
      "fcall", 800);
  caller.join();
  CHECK(reply.elements.at(0).str == "granted");
  REQUIRE(load("force_release", {"late1"}).elements.at(0).str == "released");
  // With a deadline 200 ms after the send, the same call changes nothing.
  const std::string deadline = std::to_string(server_ms(server) + 200);
  run_behind_busy_script(
      server,
      [&] {
        caller = std::thread([&] { reply = RedisConnection(server.url()).command(acquire_argv(ns, "/q", &deadline)); });
      },
      "fcall", 800);
  caller.join();
  REQUIRE(reply.elements.size() == 2);
  CHECK(reply.elements[0].str == "late");
  CHECK(reply.elements[1].integer >= std::stoll(deadline));
  CHECK(load("list", {"/", "100", ""}).elements.size() == 2);  // {"locks", ""}: none
}

TEST_CASE("a C++ acquire that timed out behind a busy script leaves no lock once the server runs it",
          "[redis][deadline]") {
  const RedisServer server;  // private: this test pauses it
  const std::string ns = unique_namespace("dleng");
  const auto engine = redis_engine(server.url(), nullptr, 2, Millis{500});
  // Warm: the library loaded, the permission probe passed.
  const AcquireResult warm = engine->acquire(request(ns, "svc", "upload", {{"target", "/warm"}}));
  REQUIRE(warm.granted());
  REQUIRE(engine->release(ns, warm.grant.id, warm.grant.token));
  std::string outcome;
  std::thread caller;
  run_behind_busy_script(
      server,
      [&] {
        caller = std::thread([&] {
          try {
            const AcquireResult r = engine->acquire(request(ns, "svc", "upload", {{"target", "/p"}}));
            outcome = r.granted() ? "granted" : "refused";
          } catch (const BackendError& e) {
            outcome = e.what();
          }
        });
      },
      "fcall", 1500);
  caller.join();
  INFO(outcome);
  CHECK(outcome.find("its effect is unknown") != std::string::npos);  // the caller was told it gave up
  CHECK(engine->list(ns, "/").empty());                                // and the server granted nothing
  CHECK(ns_keys(server, ns) == kOnlyMeta);
  // The engine works on at once, with the same connections' clocks.
  const AcquireResult after = engine->acquire(request(ns, "svc", "upload", {{"target", "/p"}}));
  CHECK(after.granted());
}

TEST_CASE("a node's connection pool is bounded: a borrower that finds every connection busy gets a clear error",
          "[redis][pool]") {
  const RedisServer& server = shared_redis_server();
  redis::ConnectionSettings settings;
  settings.connect_timeout = Millis{100};
  settings.command_timeout = Millis{100};
  redis::Warnings warnings;
  redis::NodePool pool(redis::parse_redis_url(server.url()).nodes.front(), settings, 2, warnings);
  std::optional<redis::NodePool::Lease> a(pool.take(false));
  const redis::NodePool::Lease b = pool.take(false);
  CHECK((*a)->exchange({"PING"}).str == "PONG");
  CHECK(b->exchange({"PING"}).str == "PONG");
  const auto started = std::chrono::steady_clock::now();
  try {
    (void)pool.take(false);
    FAIL("a third connection was lent out of a pool of 2");
  } catch (const BackendError& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(what.find("connection pool exhausted: all 2 connections (pool_size) stayed busy for 300 ms") !=
          std::string::npos);
    CHECK(what.find("nothing was sent") != std::string::npos);
  }
  CHECK(std::chrono::steady_clock::now() - started >= Millis{300});
  // A connection given back serves a borrower that waits for it.
  std::thread waiter([&] { CHECK(pool.take(false)->exchange({"PING"}).str == "PONG"); });
  a.reset();
  waiter.join();
}
