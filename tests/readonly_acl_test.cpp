// The read-only operator of docs/operations.md: the ACL user
// `pathlock-reader`, created on a real redis-server with exactly the rules
// the page gives (read from the page itself), runs every read an operator
// has (admin locks, top, waiters, status, why; the console's /api/locks) as
// real processes: each answers, none writes a key, none warns about a right
// the page does not grant, and writes are refused.
#include "support/backends.hpp"
#include "support/console_process.hpp"
#include "support/process.hpp"
#include "support/redis_server.hpp"

#include <pathlock/redis.hpp>

#include <catch2/catch.hpp>
#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

using namespace pathlock;
using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

// The words of the `ACL SETUSER pathlock-reader ...` command of
// docs/operations.md (its line and the indented lines that continue it),
// with the password placeholder replaced by `password`.
std::vector<std::string> documented_reader_acl(const std::string& password) {
  std::ifstream doc(std::string(PATHLOCK_SOURCE_DIR) + "/docs/operations.md");
  REQUIRE(doc);
  std::vector<std::string> words;
  bool in = false;
  for (std::string line; std::getline(doc, line);) {
    if (line.rfind("ACL SETUSER pathlock-reader ", 0) == 0) in = true;
    else if (in && line.rfind("    ", 0) != 0) break;
    if (!in) continue;
    std::istringstream split(line);
    for (std::string w; split >> w;) words.push_back(w == ">READER_PASSWORD" ? ">" + password : w);
  }
  REQUIRE(words.size() > 4);
  return words;
}

struct Ran {
  int status = 0;
  std::string out, err;
};

std::string slurp(const std::string& file) {
  std::ifstream in(file);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// `pathlock ARGS...` as a process; its exit status, stdout and stderr.
Ran run_pathlock(const std::vector<std::string>& args) {
  test::ScratchDir dir("readonly");
  const int out = open(dir.path("out").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
  const int err = open(dir.path("err").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
  std::vector<std::string> argv{PATHLOCK_CLI};
  argv.insert(argv.end(), args.begin(), args.end());
  const pid_t pid = test::spawn(argv, -1, out, err);
  close(out);
  close(err);
  Ran r;
  r.status = test::wait_exit(pid);
  r.out = slurp(dir.path("out"));
  r.err = slurp(dir.path("err"));
  return r;
}


}  // namespace

TEST_CASE("the documented read-only user lists, asks why and reads status, writing nothing and warned of nothing",
          "[redis][admin][acl]") {
  test::RedisServer server;
  test::RedisConnection c(server.url());
  const std::string ns = "readers";
  auto engine = test::redis_engine(server.url());  // loads the library as the default (full) user
  const auto held = engine->acquire({ns, "alice", "move_folder", {{"src", "/p/A"}, {"dst", "/p/B"}}});
  REQUIRE(held.granted());
  REQUIRE(engine->acquire({ns, "bob", "upload", {{"target", "/brief"}}, 100ms}).granted());
  std::vector<std::string> acl = documented_reader_acl("pw");
  REQUIRE_FALSE(c.command(acl).is_error());
  const std::string reader = "redis://pathlock-reader:pw@" + server.url().substr(std::string("redis://").size());
  std::this_thread::sleep_for(200ms);  // bob's lock has ended, unreaped: listing would have reaped it
  const std::string before = c.command({"DUMP", "pl:{readers}:locks"}).str + c.command({"DUMP", "pl:{readers}:exp"}).str;

  const std::vector<std::vector<std::string>> reads{
      {"locks"}, {"top", "--iterations", "1"}, {"waiters"}, {"status"}, {"why", "--op", "upload", "/p/A/C"}};
  for (std::vector<std::string> args : reads) {
    args.insert(args.begin(), "admin");
    args.insert(args.end(), {"--redis", reader, "--namespace", ns});
    const Ran r = run_pathlock(args);
    INFO(args[1] << ": " << r.err);
    CHECK(r.status == 0);
    CHECK(r.err.empty());  // no warning (maxmemory-policy: the reader has no CONFIG GET)
    // What each shows of the one live lock (bob's has ended: not counted).
    const std::string shows = args[1] == "top"       ? "1 live locks"
                              : args[1] == "status"  ? "\"locks\":1,"
                              : args[1] == "waiters" ? ""
                                                     : held.grant.id;
    CHECK(r.out.find(shows) != std::string::npos);
  }
#ifdef PATHLOCK_TEST_WITH_METRICS_SERVER
  const test::ConsoleProcess console({"--backend", "redis", "--redis", reader});
  const json page = json::parse(console.get("/api/locks?ns=" + ns));
  REQUIRE(page["locks"].size() == 1);
  CHECK(page["locks"][0]["id"] == held.grant.id);
#endif
  CHECK(c.command({"DUMP", "pl:{readers}:locks"}).str + c.command({"DUMP", "pl:{readers}:exp"}).str == before);

  // Writes are refused, and change nothing.
  const Ran forced = run_pathlock({"admin", "force-release", "--redis", reader, "--namespace", ns, held.grant.id});
  CHECK(forced.status == 1);
  CHECK_THAT(forced.err, Catch::Contains("NOPERM") || Catch::Contains("may not run"));
  RedisOptions ro;
  ro.url = reader;
  auto as_reader = make_redis_engine(ro);
  CHECK_THROWS_AS(as_reader->acquire({ns, "eve", "upload", {{"target", "/x"}}}), BackendError);
  CHECK(engine->list(ns).size() == 1);
}
