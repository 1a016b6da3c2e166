// Which commits of the PostgreSQL backend wait for their WAL flush, and
// what a crash does to those that do not (docs/postgres.md#commits): a
// grant flushes, a release, a place given up and a listener's watch do
// not; after kill -9 of the server an unflushed release is either kept or
// lost whole (the lock held with its own fence and lease), and a grant
// that followed a release is never kept without it. The servers run with
// wal_writer_delay at its maximum (10 s) and no autovacuum, so that nothing
// but the calls flushes the WAL while a case runs.
#include "conformance/fixture.hpp"
#include "support/backends.hpp"
#include "support/postgres_server.hpp"

#include <pathlock/postgres.hpp>

#include <catch2/catch.hpp>

#include <future>
#include <stop_token>
#include <string>

using namespace pathlock;
using namespace std::chrono_literals;

namespace {

const std::vector<std::string> kQuietWal{"wal_writer_delay=10000", "autovacuum=off"};

LockRequest upload(const std::string& ns, const std::string& path) {
  return test::one_target_request(ns, "alice", "upload", path);
}

long long count_of(const devtools::PostgresServer& server, const std::string& query) {
  return std::stoll(server.sql(query));
}

// The WAL flushes (fsyncs) the server made so far, once every engine
// session has ended: a backend hands its statistics over when it exits.
long long wal_syncs(const devtools::PostgresServer& server) {
  REQUIRE(test::Fixture::until([&] {
    return count_of(server, "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'pathlock%'") == 0;
  }));
  return count_of(server, "SELECT wal_sync FROM pg_stat_wal");
}

// A lock's row as stored: fence and lease end, or "" when there is none.
std::string row_of(const devtools::PostgresServer& server, const Grant& g) {
  return server.sql("SELECT fence || ' ' || expires FROM pathlock.locks WHERE id = '" + g.id + "'");
}

}  // namespace

TEST_CASE("postgres commits: a pair waits for one WAL flush (its grant's) and a release flushes nothing", "[postgres]") {
  devtools::PostgresServer server(kQuietWal);
  test::postgres_engine(nullptr, server.url()).reset();  // the schema
  const long long before = wal_syncs(server);
  constexpr int kPairs = 100;
  {
    auto engine = test::postgres_engine(nullptr, server.url());
    for (int i = 0; i < kPairs; ++i) {
      const Grant g = test::granted(*engine, upload("pairs", "/p/f" + std::to_string(i)));
      REQUIRE(engine->release("pairs", g.id, g.token));
    }
  }
  const long long flushes = wal_syncs(server) - before;
  INFO("WAL flushes for " << kPairs << " pairs: " << flushes);
  CHECK(flushes <= kPairs + kPairs / 4);  // two durable commits a pair would be 200
}

TEST_CASE("postgres commits: a waiter that is stopped leaves the line without a WAL flush", "[postgres]") {
  devtools::PostgresServer server(kQuietWal);
  const std::string ns = "leave";
  auto engine = test::postgres_engine(nullptr, server.url());
  const Grant holder = test::granted(*engine, test::one_target_request(ns, "alice", "delete_folder", "/x"));
  const long long before = count_of(server, "SELECT wal_sync FROM pg_stat_wal");
  constexpr int kRounds = 20;
  for (int i = 0; i < kRounds; ++i) {
    LockRequest r = upload(ns, "/x/f");
    r.owner = "bob";
    r.wait = 60s;
    r.fair = true;
    std::stop_source stop;
    auto waiting = std::async(std::launch::async, [&] { return engine->acquire(r, stop.get_token()); });
    // In line (its place), and listening (the listener's watch row).
    INFO("round " << i);
    std::string seen;
    const bool in_line = test::Fixture::until([&] {
      seen = server.sql("SELECT (SELECT count(*) FROM pathlock.waiters) || ' ' || (SELECT count(*) FROM "
                        "pathlock.watchers)");
      return seen.starts_with("1 ") && !seen.starts_with("1 0");
    });
    INFO("places and watchers: " << seen);
    if (!in_line && waiting.wait_for(0s) == std::future_status::ready) {
      const AcquireResult early = waiting.get();
      FAIL("the waiting acquire ended: outcome " << static_cast<int>(early.outcome) << " " << early.conflict.id);
    }
    REQUIRE(in_line);
    stop.request_stop();
    CHECK(waiting.get().outcome == AcquireOutcome::cancelled);
    CHECK(count_of(server, "SELECT count(*) FROM pathlock.waiters") == 0);  // left: pathlock.leave
  }
  REQUIRE(engine->release(ns, holder.id, holder.token));
  engine.reset();
  const long long flushes = wal_syncs(server) - before;
  INFO("WAL flushes for " << kRounds << " waits given up: " << flushes);
  CHECK(flushes < kRounds / 2);  // a durable leave (functions version 5) flushed once a round
}

TEST_CASE("postgres commits: a release lost by kill -9 leaves the lock as it was, never half", "[postgres]") {
  devtools::PostgresServer server(kQuietWal);
  const std::string ns = "crash-release";
  int kept = 0, lost = 0;
  for (int round = 0; round < 3; ++round) {
    auto engine = test::postgres_engine(nullptr, server.url());
    const std::string folder = "/a" + std::to_string(round);
    const Grant a = test::granted(*engine, upload(ns, folder + "/file"));
    const std::string row = row_of(server, a);
    REQUIRE_FALSE(row.empty());
    REQUIRE(engine->release(ns, a.id, a.token));  // answered; its commit not flushed
    server.kill_hard();
    server.restart();
    auto after = test::postgres_engine(nullptr, server.url());
    if (after->is_held(ns, a.id, a.token)) {
      ++lost;  // the release is gone: the lock as granted, same fence, same lease end
      CHECK(row_of(server, a) == row);
      const AcquireResult refused = after->acquire(test::one_target_request(ns, "bob", "delete_folder", folder));
      REQUIRE_FALSE(refused.granted());
      CHECK(refused.conflict.id == a.id);
      CHECK(after->force_release(ns, a.id));
    } else {
      ++kept;  // the release was kept whole: no row of the lock
      CHECK(row_of(server, a).empty());
      CHECK(count_of(server, "SELECT count(*) FROM pathlock.held WHERE id = '" + a.id + "'") == 0);
    }
    CHECK(after->acquire(upload(ns, folder + "/file")).grant.fence > a.fence);
  }
  INFO("releases kept " << kept << ", lost " << lost);
  CHECK(kept + lost == 3);
}

TEST_CASE("postgres commits: a grant that followed a release survives kill -9 together with it", "[postgres]") {
  devtools::PostgresServer server(kQuietWal);
  const std::string ns = "crash-order";
  auto engine = test::postgres_engine(nullptr, server.url());
  const Grant a = test::granted(*engine, upload(ns, "/a/file"));
  REQUIRE(engine->release(ns, a.id, a.token));  // not flushed by itself
  LockRequest r = upload(ns, "/a/file");
  r.owner = "bob";
  const Grant b = test::granted(*engine, r);  // durable: flushes the WAL up to it, the release included
  server.kill_hard();
  server.restart();
  auto after = test::postgres_engine(nullptr, server.url());
  CHECK(after->is_held(ns, b.id, b.token));
  CHECK_FALSE(after->is_held(ns, a.id, a.token));
  CHECK(row_of(server, a).empty());
  CHECK(b.fence > a.fence);
  const AcquireResult refused = after->acquire(test::one_target_request(ns, "carol", "delete_folder", "/a"));
  REQUIRE_FALSE(refused.granted());
  CHECK(refused.conflict.id == b.id);
}

TEST_CASE("postgres: grants and releases do not update the namespace's row (functions version 7)", "[postgres]") {
  devtools::PostgresServer server;
  auto engine = test::postgres_engine(nullptr, server.url());
  const Grant first = test::granted(*engine, upload("rows", "/first"));
  const std::string row_version = server.sql("SELECT xmin FROM pathlock.namespaces WHERE ns = 'rows'");
  REQUIRE(row_version != "");
  Grant last = first;
  for (int i = 0; i < 50; ++i) {
    last = test::granted(*engine, upload("rows", "/p/f" + std::to_string(i)));
    REQUIRE(engine->release("rows", last.id, last.token));
  }
  // A version 6 grant moved the row's fence: a new row version per grant.
  CHECK(server.sql("SELECT xmin FROM pathlock.namespaces WHERE ns = 'rows'") == row_version);
  CHECK(last.fence > first.fence);
  REQUIRE(engine->release("rows", first.id, first.token));
}
