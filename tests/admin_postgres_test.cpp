// `pathlock admin status|locks|why|force-release` with --backend postgres
// against a real PostgreSQL (the suite's shared server): the same answers as
// the engine gives, a namespace that does not exist exits 1, and status
// counts only live locks, read with SELECTs only.
#include "admin.hpp"

#include "support/admin_status.hpp"
#include "support/backends.hpp"
#include "support/console_process.hpp"
#include "support/postgres_server.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <thread>

using namespace pathlock;
using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

using Run = test::AdminRun;

Run admin(std::vector<std::string> args, const std::string& url) {
  args.insert(args.begin() + 1, {"--backend", "postgres", "--postgres", url});
  return test::admin_run(args);
}

}  // namespace

TEST_CASE("admin on PostgreSQL: status, locks, why and force-release", "[postgres][admin]") {
  const std::string url = test::shared_postgres_url();
  auto engine = test::postgres_engine(nullptr, url);
  const std::string ns = test::unique_namespace("pgadmin");
  const auto mover = engine->acquire({ns, "alice", "move_folder", {{"src", "/p/A"}, {"dst", "/p/B"}}});
  REQUIRE(mover.granted());
  REQUIRE(engine->acquire({ns, "bob", "upload", {{"target", "/brief"}}, 100ms}).granted());
  std::this_thread::sleep_for(200ms);  // bob's lease has ended: not counted, not listed

  const Run status = admin({"status", "--namespace", ns}, url);
  INFO(status.err);
  REQUIRE(status.status == 0);
  REQUIRE(status.lines.size() == 1);
  CHECK(status.lines[0]["namespace"] == ns);
  CHECK(status.lines[0]["fence"] >= mover.grant.fence);
  REQUIRE(status.lines[0]["matrices"].size() == 1);
  CHECK(status.lines[0]["matrices"][0]["fingerprint"] == std::string(engine->matrix().fingerprint));
  CHECK(status.lines[0]["matrices"][0]["locks"] == 1);
  CHECK(status.lines[0]["matrices"][0]["waiters"] == 0);
  CHECK(admin({"status", "--namespace", "never-used-here"}, url).lines.at(0) ==
        json{{"namespace", "never-used-here"}, {"exists", false}});
  bool listed = false;
  for (const json& line : admin({"status"}, url).lines) listed = listed || line.value("namespace", "") == ns;
  CHECK(listed);

  const Run locks = admin({"locks", "--namespace", ns}, url);
  REQUIRE(locks.status == 0);
  REQUIRE(locks.lines.size() == 1);
  CHECK(locks.lines[0]["id"] == mover.grant.id);
  const Run why = admin({"why", "--namespace", ns, "--op", "upload", "/p/A/C"}, url);
  REQUIRE(why.status == 0);
  CHECK(why.lines.at(0)["id"] == mover.grant.id);
  CHECK(why.lines.back()["blocked"] == true);
  const Run missing = admin({"locks", "--namespace", "never-used-here"}, url);
  CHECK(missing.status == 1);
  CHECK_THAT(missing.err, Catch::Contains("does not exist"));

#ifdef PATHLOCK_TEST_WITH_METRICS_SERVER
  // The console on the same backend: its namespaces and locks.
  const test::ConsoleProcess console({"--backend", "postgres", "--postgres", url});
  const json namespaces = json::parse(console.get("/api/namespaces?limit=1000"));
  CHECK(std::find(namespaces["namespaces"].begin(), namespaces["namespaces"].end(), ns) !=
        namespaces["namespaces"].end());
  CHECK(json::parse(console.get("/api/locks?ns=" + ns))["locks"].at(0)["id"] == mover.grant.id);
#endif

  const Run forced = admin({"force-release", "--namespace", ns, mover.grant.id}, url);
  REQUIRE(forced.status == 0);
  CHECK(forced.lines.at(0) == json{{"released", true}, {"id", mover.grant.id}});
  CHECK(engine->list(ns).empty());
}
