// The PostgreSQL backend beyond the conformance suite (which runs on it as
// conformance_on_postgres): the conflict check uses the indexes, a grant
// survives kill -9 of the postmaster, a dropped connection and a restart
// are BackendErrors and the engine goes on, a read-only user reads, bad
// options are refused. Servers that are killed or restarted are private.
#include "conformance/fixture.hpp"
#include "support/backends.hpp"
#include "support/postgres_server.hpp"
#include "postgres/connection.hpp"
#include "postgres/listener.hpp"

#include <pathlock/postgres.hpp>

#include <catch2/catch.hpp>

#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using namespace pathlock;
using namespace std::chrono_literals;

namespace {

LockRequest upload(const std::string& ns, const std::string& path) {
  return test::one_target_request(ns, "alice", "upload", path);
}

long long count_of(const devtools::PostgresServer& server, const std::string& query) {
  return std::stoll(server.sql(query));
}

// Waits (at most a minute: a guard, not a measure) for payloads of `s`
// until one equals `wanted` or, for "", until `times` "look again" came.
bool woken_with(postgres::Subscription& s, const std::string& wanted, int times = 1) {
  const auto guard = std::chrono::steady_clock::now() + 60s;
  for (int seen = 0;;) {
    std::vector<std::string> got;
    if (!s.wait(guard, got)) return false;
    for (const std::string& p : got) seen += p == wanted ? 1 : 0;
    if (seen >= times) return true;
  }
}

}  // namespace

TEST_CASE("postgres: the conflict check reads the indexes, never the whole locks table", "[postgres]") {
  devtools::PostgresServer server;
  auto engine = test::postgres_engine(nullptr, server.url());
  const std::string ns = "explain";
  // Many locks in the namespace and beside it, spread over many folders: a
  // few through the engine, 40,000 written as the engine writes them.
  for (int i = 0; i < 50; ++i) REQUIRE(engine->acquire(upload(ns, "/f" + std::to_string(i) + "/x/y")).granted());
  const std::string fp(engine->matrix().fingerprint);
  const int upload_code = engine->matrix().code_of(engine->matrix().op_index("upload"), "target");
  server.sql(
      "WITH l AS (INSERT INTO pathlock.locks SELECT n, 'bulk' || i, 't', 'o', '" + fp + "', 'upload', '{target}', "
      "ARRAY['/g' || i || '/x/y'], i, 1, 3600000, pathlock.now_ms() + 3600000, NULL "
      "FROM generate_series(1, 20000) i, unnest(ARRAY['explain', 'beside']) n RETURNING *) "
      "INSERT INTO pathlock.held SELECT l.ns, l.id, " + std::to_string(upload_code) +
      ", pathlock.sk(l.paths[1]), pathlock.k(pathlock.sk(l.paths[1])), l.fp, 'target', l.paths[1], l.fence FROM l; "
      "ANALYZE pathlock.held; ANALYZE pathlock.locks;");
  // The lookups of pathlock.first_conflict, as it writes them: the
  // ancestors and the path itself, whether anything is below, and below it
  // per code.
  const std::string plan = server.sql(
      "EXPLAIN (COSTS OFF) SELECT * FROM pathlock.held h WHERE h.ns = 'explain' AND "
      "h.k = ANY (pathlock.above('/f7/x/y/z') || pathlock.sk('/f7/x/y/z')) "
      "AND h.sk = ANY (pathlock.above('/f7/x/y/z') || pathlock.sk('/f7/x/y/z')) "
      "ORDER BY length(h.sk), h.code, h.fence DESC LIMIT 1; "
      "EXPLAIN (COSTS OFF) SELECT 1 FROM pathlock.held b WHERE b.ns = 'explain' "
      "AND b.k >= pathlock.k(pathlock.lo('/f7')) AND b.k <= pathlock.k(pathlock.hi('/f7')); "
      "EXPLAIN (COSTS OFF) SELECT * FROM pathlock.held h WHERE h.ns = 'explain' AND h.fp = 'x' AND h.code = 3 "
      "AND h.k >= pathlock.k(pathlock.lo('/f7')) AND h.k <= pathlock.k(pathlock.hi('/f7')) "
      "AND h.sk > pathlock.lo('/f7') AND h.sk < pathlock.hi('/f7') ORDER BY h.k, h.sk, h.fence DESC LIMIT 1;");
  INFO(plan);
  CHECK(plan.find("Index") != std::string::npos);
  CHECK(plan.find("Seq Scan") == std::string::npos);
  // And the calls themselves, by the server's counters: the index scans of
  // a refused and a granted acquire show up, the sequential scans do not.
  engine.reset();
  const auto scans = [&] {
    const std::string out = server.sql(
        "SELECT coalesce(seq_scan, 0) || ' ' || coalesce(idx_scan, 0) FROM pg_stat_user_tables "
        "WHERE relid = 'pathlock.held'::regclass");
    const auto space = out.find(' ');
    return std::pair<long long, long long>{std::stoll(out.substr(0, space)), std::stoll(out.substr(space + 1))};
  };
  const auto before = scans();
  {
    auto caller = test::postgres_engine(nullptr, server.url());
    REQUIRE_FALSE(caller->acquire(test::one_target_request(ns, "bob", "delete_folder", "/f7")).granted());
    REQUIRE(caller->acquire(upload(ns, "/g/h")).granted());
  }
  // Statistics reach the view when the sessions end: wait for the index scans.
  REQUIRE(test::Fixture::until([&] { return scans().second > before.second; }));
  CHECK(scans().first == before.first);
}

namespace {

// After a crash (and a restart or a failover), as seen by a new engine:
// `grant` (an upload of /a/file) is still held, refuses what overlaps it,
// and the next fence is higher.
void still_held(LockEngine& after, const std::string& ns, const Grant& grant) {
  CHECK(after.is_held(ns, grant.id, grant.token));
  const AcquireResult refused = after.acquire(test::one_target_request(ns, "bob", "delete_folder", "/a"));
  REQUIRE_FALSE(refused.granted());
  CHECK(refused.conflict.id == grant.id);
  const AcquireResult b = after.acquire(upload(ns, "/b/file"));
  REQUIRE(b.granted());
  CHECK(b.grant.fence > grant.fence);
}

}  // namespace

TEST_CASE("postgres: a grant survives kill -9 of the postmaster and fences go on upward", "[postgres]") {
  devtools::PostgresServer server;
  auto engine = test::postgres_engine(nullptr, server.url());
  const std::string ns = "durable";
  const Grant a = test::granted(*engine, upload(ns, "/a/file"));
  server.kill_hard();
  server.restart();
  still_held(*test::postgres_engine(nullptr, server.url()), ns, a);
  // The first engine's pooled connections died with the server: it finds
  // out and connects again.
  CHECK(engine->release(ns, a.id, a.token));
}

TEST_CASE("postgres: an engine brings older functions up to date and keeps the locks", "[postgres]") {
  devtools::PostgresServer server;  // private: its functions are changed
  const std::string ns = "upgrade";
  const Grant a = test::granted(*test::postgres_engine(nullptr, server.url()), upload(ns, "/a/file"));
  // A database at an older version of the functions: a helper version 3
  // no longer has, no sequences (before version 4, fences and places were
  // the namespace's row, here far ahead), an acquire of 17 arguments, the
  // acquire of versions 4 to 8 (the arguments of today's, fewer replies),
  // no limits table nor its owner index (before version 9), and a service
  // role granted the tables there were.
  server.sql(
      "DROP TABLE pathlock.limits CASCADE; DROP INDEX pathlock.locks_owner; "
      "DROP FUNCTION pathlock.acquire(text, text, text, text, text[], int[], bigint[], text[], bigint, text, text, "
      "text, text, text, boolean, text, bigint, bigint); "
      "CREATE FUNCTION pathlock.acquire(text, text, text, text, text[], int[], bigint[], text[], bigint, text, text, "
      "text, text, text, boolean, text, bigint, bigint DEFAULT NULL, OUT status text, OUT id text) "
      "LANGUAGE plpgsql AS $$ BEGIN END $$; "
      "CREATE ROLE svc LOGIN; GRANT USAGE ON SCHEMA pathlock TO svc; "
      "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA pathlock TO svc;");
  server.sql(
      "CREATE OR REPLACE FUNCTION pathlock.functions_version() RETURNS int LANGUAGE sql IMMUTABLE AS $$ SELECT 2 $$; "
      "CREATE FUNCTION pathlock.held_conflict(text, text, text, bigint, bigint, bigint, text[]) RETURNS int "
      "LANGUAGE sql AS $$ SELECT 0 $$; "
      "DROP SEQUENCE pathlock.fences; DROP SEQUENCE pathlock.places; "
      "UPDATE pathlock.namespaces SET fence = 9000000000000000000, place = 77 WHERE ns = 'upgrade'; "
      "CREATE FUNCTION pathlock.acquire(text, text, text, text, text[], int[], bigint[], text[], bigint, text, text, "
      "text, text, text, boolean, text, bigint) RETURNS int LANGUAGE sql AS $$ SELECT 0 $$;");
  still_held(*test::postgres_engine(nullptr, server.url()), ns, a);
  CHECK(count_of(server, "SELECT pathlock.functions_version()") == 10);  // src/postgres/schema.hpp
  CHECK(count_of(server, "SELECT count(*) FROM pg_proc WHERE proname = 'held_conflict'") == 0);
  CHECK(count_of(server, "SELECT count(*) FROM pg_proc WHERE proname = 'acquire'") == 1);
  CHECK(count_of(server, "SELECT count(*) FROM pg_proc WHERE proname = 'acquire' AND 'l_limit' = ANY (proargnames)") ==
        1);
  CHECK(count_of(server, "SELECT count(*) FROM pg_indexes WHERE indexname = 'locks_owner'") == 1);
  // The service reads and writes the new limits table with the rights it
  // had on locks (the sequences, new since version 4, it is granted here).
  server.sql("GRANT USAGE, UPDATE ON ALL SEQUENCES IN SCHEMA pathlock TO svc;");
  auto service = test::postgres_engine(nullptr, server.url_as("svc"));
  service->set_limits(ns, Limits{std::nullopt, std::nullopt, 2});
  const AcquireResult over = service->acquire(upload(ns, "/c/file"));
  REQUIRE(over.over_limit());
  CHECK(over.limit.limit == LimitKind::owner_locks);
  CHECK(over.limit.count == 2);
  CHECK(service->limits(ns).owner == "alice");
  // Fences go on above the row's, places above its last place.
  CHECK(server.sql("SELECT max(fence) > 9000000000000000000 FROM pathlock.locks") == "t\n");
  CHECK(count_of(server, "SELECT nextval('pathlock.places')") > 77);
}

// Limits per namespace (the conformance cases, tenant_limits_test.cpp, run
// on this backend too): what only the PostgreSQL side can get wrong.
// Acquires on disjoint paths run at the same time on the server, so the
// count and the grant must be one step for them too: the limit lock of
// pathlock.limit_refusal makes them count one after the other.
TEST_CASE("postgres: limits hold when grants and places on disjoint paths race", "[postgres][tenant-limits]") {
  auto engine = test::postgres_engine();
  const std::string ns = test::unique_namespace("limits-race");
  engine->set_limits(ns, Limits{5, std::nullopt, std::nullopt});
  constexpr int kCallers = 8;
  std::vector<std::future<int>> grants;
  for (int t = 0; t < kCallers; ++t)
    grants.push_back(std::async(std::launch::async, [&, t] {
      int n = 0;
      for (int i = 0; i < 4; ++i)
        n += engine->acquire(upload(ns, "/r" + std::to_string(t) + "/f" + std::to_string(i))).granted() ? 1 : 0;
      return n;
    }));
  int granted = 0;
  for (auto& g : grants) granted += g.get();
  CHECK(granted == 5);
  CHECK(engine->limits(ns).locks == 5);
  // Fair waiters refused by a lock held (a delete_folder of its folder each,
  // 30 s of waiting): three take a place, the others are refused by the
  // limit at once.
  const std::string held = engine->list(ns).front().targets.front().path;
  const std::string folder = held.substr(0, held.rfind('/'));
  engine->set_limits(ns, Limits{std::nullopt, 3, std::nullopt});
  std::vector<std::stop_source> stops(kCallers);
  std::vector<std::future<AcquireResult>> waits;
  for (int t = 0; t < kCallers; ++t)
    waits.push_back(std::async(std::launch::async, [&, t] {
      return engine->acquire(test::one_target_request(ns, "w" + std::to_string(t), "delete_folder", folder, 30s),
                             stops[static_cast<std::size_t>(t)].get_token());
    }));
  const auto answered = [&] {
    int n = 0;
    for (auto& w : waits) n += w.wait_for(0s) == std::future_status::ready ? 1 : 0;
    return n;
  };
  REQUIRE(test::Fixture::until([&] { return answered() == kCallers - 3; }));
  CHECK(engine->waiters(ns).size() == 3);
  for (auto& s : stops) s.request_stop();
  int over = 0, cancelled = 0;
  for (auto& w : waits) {
    const AcquireResult r = w.get();
    over += r.over_limit() ? 1 : 0;
    cancelled += r.cancelled() ? 1 : 0;
  }
  CHECK(over == kCallers - 3);
  CHECK(cancelled == 3);
  CHECK(engine->waiters(ns).empty());
}

// A waiter whose namespace reaches its limit on locks while it waits is
// answered over_limit at its next attempt (the limits on new locks are
// judged before the conflicts), and its place goes in that same call (the
// waiting policy does not leave the line after a refusal by a limit): a
// place left behind would hold others back for up to 2 s.
TEST_CASE("postgres: a waiter refused by a limit when its turn comes leaves the line in that call",
          "[postgres][tenant-limits]") {
  auto engine = test::postgres_engine();
  const std::string ns = test::unique_namespace("limits-turn");
  const Grant blocker = test::granted(*engine, upload(ns, "/p/a"));
  test::granted(*engine, upload(ns, "/q"));
  auto bob = std::async(std::launch::async, [&] {
    return engine->acquire(test::one_target_request(ns, "bob", "delete_folder", "/p", 30s));
  });
  REQUIRE(test::Fixture::until([&] { return engine->waiters(ns).size() == 1; }));
  engine->set_limits(ns, Limits{1, std::nullopt, std::nullopt});  // two locks held: over it
  REQUIRE(bob.wait_for(10s) == std::future_status::ready);  // its next attempt, within a re-check
  const AcquireResult r = bob.get();
  REQUIRE(r.over_limit());
  CHECK(r.limit.limit == LimitKind::locks);
  CHECK(r.limit.count == 2);
  CHECK(engine->waiters(ns).empty());
  CHECK(engine->is_held(ns, blocker.id, blocker.token));
}

TEST_CASE("postgres: a connection dropped by the server is an error, and the engine goes on", "[postgres]") {
  devtools::PostgresServer server;
  PostgresOptions options;
  options.url = server.url();
  options.command_timeout = 20000ms;
  auto engine = make_postgres_engine(options);
  const std::string ns = "dropped";
  REQUIRE(engine->acquire(upload(ns, "/x")).granted());
  // A call in flight when its session is terminated: another session holds
  // the lock of its path, so the acquire is mid-call (waiting for it) when
  // its session goes.
  const auto count = [&](const std::string& query) { return std::stoll(server.sql(query)); };
  std::thread holder([&] {
    try {
      server.sql("BEGIN; SELECT pathlock.lock_paths('dropped', ARRAY['/y']); SELECT pg_sleep(60); COMMIT;");
    } catch (const std::exception&) {  // terminated below
    }
  });
  REQUIRE(test::Fixture::until([&] { return count("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'") > 0; }));
  auto call = std::async(std::launch::async, [&] { return engine->acquire(upload(ns, "/y")); });
  const std::string waiting =
      "FROM pg_stat_activity WHERE application_name = 'pathlock' AND wait_event_type = 'Lock'";
  REQUIRE(test::Fixture::until([&] { return count("SELECT count(*) " + waiting) > 0; }));
  server.sql("SELECT pg_terminate_backend(pid) " + waiting);
  CHECK_THROWS_AS(call.get(), BackendError);
  server.sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'psql' "
             "AND pid <> pg_backend_pid()");
  holder.join();
  const AcquireResult again = engine->acquire(upload(ns, "/z"));
  CHECK(again.granted());
}

TEST_CASE("postgres: a restart costs the calls in flight, not the engine", "[postgres]") {
  devtools::PostgresServer server;
  auto engine = test::postgres_engine(nullptr, server.url());
  const std::string ns = "restart";
  const AcquireResult a = engine->acquire(upload(ns, "/r"));
  REQUIRE(a.granted());
  server.stop();
  CHECK_THROWS_AS(engine->acquire(upload(ns, "/s")), BackendError);
  server.restart();
  CHECK(engine->is_held(ns, a.grant.id, a.grant.token));
  CHECK(engine->acquire(upload(ns, "/s")).granted());
}

TEST_CASE("postgres: a read-only user reads, and its writes are refused with the reason", "[postgres]") {
  devtools::PostgresServer server;
  auto writer = test::postgres_engine(nullptr, server.url());
  const std::string ns = "readonly";
  const AcquireResult a = writer->acquire(upload(ns, "/ro/file"));
  REQUIRE(a.granted());
  server.sql("CREATE ROLE reader LOGIN; GRANT USAGE ON SCHEMA pathlock TO reader; "
             "GRANT SELECT ON ALL TABLES IN SCHEMA pathlock TO reader;");
  auto reader = test::postgres_engine(nullptr, server.url_as("reader"));
  CHECK(reader->is_held(ns, a.grant.id, a.grant.token));
  CHECK(reader->list(ns).size() == 1);
  CHECK(reader->blockers(ns, "delete_folder", {{"target", "/ro"}}).blockers.size() == 1);
  CHECK(reader->waiters(ns).empty());
  CHECK(reader->limits(ns).locks == 1);
  CHECK_THROWS_AS(reader->set_limits(ns, Limits{}), BackendError);
  try {
    (void)reader->acquire(upload(ns, "/other"));
    FAIL("a read-only user acquired a lock");
  } catch (const BackendError& e) {
    CHECK(std::string(e.what()).find("permission denied") != std::string::npos);
  }
}

TEST_CASE("postgres: bad options and unreachable servers are clear errors", "[postgres]") {
  PostgresOptions options;
  options.url = "";
  CHECK_THROWS_AS(make_postgres_engine(options), InvalidRequest);
  options.url = "postgresql://postgres@127.0.0.1:1/postgres";
  CHECK_THROWS_AS(make_postgres_engine(options), BackendError);
  options.url = test::shared_postgres_url();
  options.command_timeout = 0ms;
  CHECK_THROWS_AS(make_postgres_engine(options), InvalidRequest);
  EngineOptions by_name;
  by_name.backend = parse_backend("postgres");
  by_name.postgres.url = test::shared_postgres_url();
  CHECK(make_engine(by_name) != nullptr);
}

TEST_CASE("postgres: the waiting calls of an engine share one listener connection, and all are woken", "[postgres]") {
  devtools::PostgresServer server;  // private: its sessions are counted
  auto engine = test::postgres_engine(nullptr, server.url());
  const std::string ns = "listeners";
  const AcquireResult folder = engine->acquire(test::one_target_request(ns, "bob", "delete_folder", "/d"));
  REQUIRE(folder.granted());
  constexpr int kWaiters = 16;
  std::vector<std::future<AcquireResult>> waits;
  for (int i = 0; i < kWaiters; ++i) {
    LockRequest r = upload(ns, "/d/f" + std::to_string(i));
    r.wait = 120s;
    waits.push_back(std::async(std::launch::async, [&engine, r] { return engine->acquire(r); }));
  }
  REQUIRE(test::Fixture::until([&] { return engine->waiters(ns).size() == kWaiters; }));
  const std::string listeners = "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pathlock-listener'";
  REQUIRE(test::Fixture::until([&] { return count_of(server, listeners) == 1; }));
  // Each waiting call used to hold a LISTEN connection of its own.
  CHECK(count_of(server, "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'pathlock%'") <
        kWaiters);
  REQUIRE(engine->release(ns, folder.grant.id, folder.grant.token));
  for (auto& w : waits) CHECK(w.get().granted());
  CHECK(count_of(server, listeners) == 1);
}

TEST_CASE("postgres: the listener hands a namespace's wake-ups to its waiters only, and reconnects", "[postgres]") {
  devtools::PostgresServer server;
  auto engine = test::postgres_engine(nullptr, server.url());  // the schema: pathlock.channel, pathlock.wake
  postgres::Pool pool(server.url(), 5000ms, 1);
  postgres::Listener listener([&pool] { return pool.open("pathlock-listener"); }, 5000ms);
  auto a = std::make_shared<postgres::Subscription>("ns-a"), a2 = std::make_shared<postgres::Subscription>("ns-a"),
       b = std::make_shared<postgres::Subscription>("ns-b");
  for (const auto& s : {a, a2, b}) listener.subscribe(s);
  server.sql("SELECT pathlock.wake('ns-a', ARRAY['/x'])");
  CHECK(woken_with(*a, "/x"));
  CHECK(woken_with(*a2, "/x"));
  listener.unsubscribe(a2);  // after the hand-out of /x to every waiter of ns-a
  b->interrupt();
  std::vector<std::string> got;
  CHECK_FALSE(b->wait(std::chrono::steady_clock::now() + 60s, got));
  CHECK(got.empty());
  // The listener's session ends: everyone looks again, once when it broke
  // and once when it listens again on a new connection; then wake-ups flow.
  server.sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pathlock-listener'");
  CHECK(woken_with(*a, "", 2));
  server.sql("SELECT pathlock.wake('ns-a', ARRAY['/y'])");
  CHECK(woken_with(*a, "/y"));
  a->interrupt();
  CHECK_FALSE(a->wait(std::chrono::steady_clock::now() + 60s, got));
  listener.unsubscribe(a);
  listener.unsubscribe(b);
}

TEST_CASE("postgres: with a synchronous standby, the promoted standby keeps every answered grant", "[postgres]") {
  devtools::PostgresServer primary({"synchronous_standby_names=*"});
  devtools::PostgresServer standby(devtools::PostgresServer::standby_of, primary);
  REQUIRE(test::Fixture::until([&] {
    return primary.sql("SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'") == "1\n";
  }));
  auto engine = test::postgres_engine(nullptr, primary.url());
  const std::string ns = "replica";
  const Grant a = test::granted(*engine, upload(ns, "/a/file"));
  primary.kill_hard();
  standby.promote();
  still_held(*test::postgres_engine(nullptr, standby.url()), ns, a);
}

TEST_CASE("postgres: listen_url gives the listener a route of its own", "[postgres]") {
  devtools::PostgresServer server;
  PostgresOptions options;
  options.url = server.url();
  options.listen_url = server.url() + "?application_name=pathlock-own-route";
  auto engine = make_postgres_engine(options);
  const std::string ns = "route";
  const AcquireResult folder = engine->acquire(test::one_target_request(ns, "bob", "delete_folder", "/d"));
  REQUIRE(folder.granted());
  LockRequest r = upload(ns, "/d/f");
  r.wait = 120s;
  auto waiting = std::async(std::launch::async, [&engine, r] { return engine->acquire(r); });
  REQUIRE(test::Fixture::until([&] {
    return count_of(server, "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pathlock-own-route'") ==
           1;
  }));
  REQUIRE(engine->release(ns, folder.grant.id, folder.grant.token));
  CHECK(waiting.get().granted());
}
