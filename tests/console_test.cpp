// pathlock console's JSON API over a real embedded engine (the page itself
// is tested in chromium: console_browser_test.py).
#ifdef PATHLOCK_TEST_WITH_METRICS_SERVER
#include "console_server.hpp"
#include "support/console_setup.hpp"

#include <pathlock/memory.hpp>

#include <catch2/catch.hpp>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <mutex>

namespace {

using namespace pathlock;
using json = nlohmann::json;

using Setup = test::ConsoleSetup;

json get(httplib::Client& c, const std::string& path, int status = 200) {
  const auto res = c.Get(path);
  REQUIRE(res);
  INFO(path << " -> " << res->body);
  CHECK(res->status == status);
  return json::parse(res->body);
}

}  // namespace

TEST_CASE("console API: namespaces, locks, why and the refusal grid", "[console]") {
  Setup s;
  const Grant bob = s.hold("bob <b>", "delete_folder", "/team/old");
  s.hold("alice", "upload", "/team/docs/r.pdf");
  console::ConsoleServer server(*s.engine, s.options(false));
  CHECK(server.url() == "http://127.0.0.1:" + std::to_string(server.port()) + "/");
  httplib::Client c("127.0.0.1", server.port());

  const json p1 = get(c, "/api/namespaces?limit=3");
  CHECK(p1["namespaces"] == json({"a", "b", "c"}));
  CHECK(p1["next"] == "c");
  const json p2 = get(c, "/api/namespaces?limit=3&after=c");
  CHECK(p2["namespaces"] == json({"web"}));
  CHECK(p2["next"] == "");

  const json locks = get(c, "/api/locks?ns=web&limit=1");
  REQUIRE(locks["locks"].size() == 1);
  CHECK(locks["locks"][0]["owner"] == "bob <b>");  // JSON carries the text as is; the page sets textContent
  CHECK(!locks["next"].get<std::string>().empty());
  CHECK(get(c, "/api/locks?ns=web&limit=10&prefix=/team/docs")["locks"].size() == 1);

  const json why = get(c, "/api/why?ns=web&op=delete_folder&path=/team/old");
  REQUIRE(why["blockers"].size() == 1);
  CHECK(why["blockers"][0]["id"] == bob.id);
  CHECK(why["blockers"][0]["relation"] == "same");
  // One shape per value, as the shell and admin print it (docs/json.md):
  // targets by role, every blocker field on every blocker.
  CHECK(get(c, "/api/locks?ns=web&limit=10&prefix=/team/old")["locks"][0]["targets"] ==
        json({{"target", "/team/old"}}));
  json keys = json::array();
  for (const auto& [k, v] : why["blockers"][0].items()) keys.push_back(k);
  CHECK(keys == json({"expires_in_ms", "fence", "holds", "id", "kind", "op", "owner", "path", "queued", "relation",
                      "requested_path", "requested_role", "role", "waited_ms"}));
  // The dry run counted its first blocker; nothing was taken.
  CHECK(s.metrics->snapshot().refused("delete_folder", "delete_folder", 0) == 1);
  CHECK(s.engine->list("web").size() == 2);
  const json grid = get(c, "/api/grid");
  const int del = default_matrix().op_index("delete_folder");
  CHECK(grid["refusals"][del][del] == 1);
  CHECK(grid["rules"][del][del] == json({"same", "held_ancestor", "held_descendant"}));
  // Nothing scraped (--scrape): the counts are the console's own.
  CHECK(grid["counted_by"] == "console");
  CHECK(grid["reporting"] == 0);
  CHECK(grid["sources"].empty());
  CHECK(grid["unknown_ops"].empty());

  const auto metrics = c.Get("/metrics");
  REQUIRE(metrics);
  CHECK(metrics->body.find("pathlock_") != std::string::npos);
  const auto page = c.Get("/");
  REQUIRE(page);
  CHECK(page->get_header_value("Content-Security-Policy").find("script-src 'self'") != std::string::npos);
  CHECK(page->body.find("/app.js") != std::string::npos);
}

TEST_CASE("console API: each namespace's use against its limits", "[console][tenant-limits]") {
  Setup s;
  s.engine->set_limits("web", Limits{5, std::nullopt, 2});
  s.hold("alice", "upload", "/team/a");
  s.hold("alice", "upload", "/team/b");
  console::ConsoleServer server(*s.engine, s.options(false));
  httplib::Client c("127.0.0.1", server.port());
  const json one = get(c, "/api/limits?ns=web");
  CHECK(one["own"] == json({{"locks", 5}, {"places", nullptr}, {"owner_locks", 2}}));
  CHECK(one["use"] == json({{"locks", 2}, {"places", 0}, {"owner_locks", 2}, {"owner", "alice"}}));
  // The namespace list carries every listed namespace's, for its badges.
  const json page = get(c, "/api/namespaces?limit=10");
  CHECK(page["limits"]["web"] == one);
  CHECK(page["limits"]["a"]["own"].is_null());
  get(c, "/api/limits?ns=bad%20ns", 400);
}

TEST_CASE("console API: bad input is 400 with its message", "[console]") {
  Setup s;
  console::ConsoleServer server(*s.engine, s.options(false));
  httplib::Client c("127.0.0.1", server.port());
  CHECK(get(c, "/api/locks?ns=nope", 400)["error"] == "unknown namespace 'nope'");
  CHECK(get(c, "/api/locks", 400)["error"].get<std::string>().find("missing parameter ns") == 0);
  CHECK(get(c, "/api/why?ns=web&op=fly&path=/a", 400)["error"] == "unknown operation 'fly'");
  CHECK(get(c, "/api/why?ns=web&op=upload&path=a//b", 400)["error"].get<std::string>().find("not absolute") !=
        std::string::npos);
  CHECK(get(c, "/api/why?ns=web&op=move_folder&path=/a", 400)["error"] ==
        "operation 'move_folder' takes 2 path(s), got 1");
  CHECK(get(c, "/api/locks?ns=web&limit=0", 400)["error"].get<std::string>().find("limit") == 0);
  CHECK(get(c, "/no/such/page", 404).contains("error"));
}

TEST_CASE("console API: force-release only with admin, logged", "[console]") {
  Setup s;
  const Grant g = s.hold("carol", "upload", "/x");
  {
    console::ConsoleServer server(*s.engine, s.options(false));
    httplib::Client c("127.0.0.1", server.port());
    const auto res = c.Post("/api/force-release", {{"X-Pathlock-Console", "1"}}, "ns=web&id=" + g.id,
                            "application/x-www-form-urlencoded");
    REQUIRE(res);
    CHECK(res->status == 403);
    CHECK(s.engine->list("web").size() == 1);
  }
  console::ConsoleServer server(*s.engine, s.options(true));
  httplib::Client c("127.0.0.1", server.port());
  // Without the console's header (what a cross-site form sends): refused.
  auto res = c.Post("/api/force-release", "ns=web&id=" + g.id, "application/x-www-form-urlencoded");
  REQUIRE(res);
  CHECK(res->status == 403);
  CHECK(s.engine->list("web").size() == 1);
  res = c.Post("/api/force-release", {{"X-Pathlock-Console", "1"}}, "ns=web&id=" + g.id,
               "application/x-www-form-urlencoded");
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(json::parse(res->body)["released"] == true);
  CHECK(s.engine->list("web").empty());
  std::lock_guard lock(s.mu);
  REQUIRE(s.logged.size() == 1);
  CHECK(s.logged[0].find("force-release of lock " + g.id) != std::string::npos);
}
#endif
