// Every statement on the PostgreSQL backend's hot path, as the functions
// (src/postgres/functions.sql, schema.sql) and the engine write it, reads an
// index: EXPLAIN of each over tables of 40,000 locks, 40,000 places in line,
// 20,000 namespaces and 20,000 namespaces' limits shows an index and no
// sequential scan.
#include "support/backends.hpp"
#include "support/postgres_server.hpp"

#include <pathlock/postgres.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

using namespace pathlock;

namespace {

// Locks, targets, places in line and namespaces, written as the functions
// write them, in namespace "explain" and beside it.
void fill(const devtools::PostgresServer& server, const std::string& fp) {
  server.sql(
      "WITH l AS (INSERT INTO pathlock.locks SELECT n, 'bulk' || i, 't', 'o', '" + fp + "', 'upload', '{target}', "
      "ARRAY['/g' || i || '/x/y'], i, 1, 3600000, pathlock.now_ms() + 3600000, 'key' || i "
      "FROM generate_series(1, 20000) i, unnest(ARRAY['explain', 'beside']) n RETURNING *) "
      "INSERT INTO pathlock.held SELECT l.ns, l.id, 1, pathlock.sk(l.paths[1]), pathlock.k(pathlock.sk(l.paths[1])), "
      "l.fp, 'target', l.paths[1], l.fence FROM l; "
      "WITH w AS (INSERT INTO pathlock.waiters SELECT n, 'w' || i, 'o', '" + fp + "', 'upload', '{target}', "
      "ARRAY['/q' || i || '/x'], i, 0, pathlock.now_ms() + 3600000 "
      "FROM generate_series(1, 20000) i, unnest(ARRAY['explain', 'beside']) n RETURNING *) "
      "INSERT INTO pathlock.queued SELECT w.ns, w.id, 1, pathlock.sk(w.paths[1]), pathlock.k(pathlock.sk(w.paths[1])), "
      "w.fp, 'target', w.paths[1], w.place FROM w; "
      "INSERT INTO pathlock.namespaces (ns) SELECT 'ns' || i FROM generate_series(1, 20000) i; "
      "INSERT INTO pathlock.limits (ns, locks) SELECT 'ns' || i, i FROM generate_series(1, 20000) i; "
      "ANALYZE pathlock.held; ANALYZE pathlock.locks; ANALYZE pathlock.waiters; ANALYZE pathlock.queued; "
      "ANALYZE pathlock.namespaces; ANALYZE pathlock.limits;");
}

// The hot path's statements with sample arguments: the conflict check
// (ancestors and the path, whether anything is below, below per code, the
// matrices present, places in line), the reentry, key, waiter and lock
// lookups, the expiry probes and deletions, release, renew, the namespace's
// row, the namespace's limits, and the engine's is_held, list and waiters.
const std::vector<std::string>& statements() {
  static const std::vector<std::string> all{
      "SELECT * FROM pathlock.held h WHERE h.ns = 'explain' AND h.k = ANY (pathlock.above('/f7/x/y') || "
      "pathlock.sk('/f7/x/y')) AND h.sk = ANY (pathlock.above('/f7/x/y') || pathlock.sk('/f7/x/y')) "
      "ORDER BY length(h.sk), h.code, h.fence DESC LIMIT 1",
      "SELECT 1 FROM pathlock.held b WHERE b.ns = 'explain' AND b.k >= pathlock.k(pathlock.lo('/f7')) "
      "AND b.k <= pathlock.k(pathlock.hi('/f7'))",
      "SELECT * FROM pathlock.held h WHERE h.ns = 'explain' AND h.fp = 'x' AND h.code = 3 AND h.k >= "
      "pathlock.k(pathlock.lo('/f7')) AND h.k <= pathlock.k(pathlock.hi('/f7')) AND h.sk > pathlock.lo('/f7') "
      "AND h.sk < pathlock.hi('/f7') ORDER BY h.k, h.sk, h.fence DESC LIMIT 1",
      "SELECT h.fp FROM pathlock.held h WHERE h.ns = 'explain' AND h.fp > 'a' ORDER BY h.fp LIMIT 1",
      "SELECT q.id FROM pathlock.queued q JOIN pathlock.waiters w ON w.ns = q.ns AND w.id = q.id "
      "WHERE q.ns = 'explain' AND w.expires > 5 AND ((q.k = ANY (pathlock.above('/q7/x')) AND "
      "q.sk = ANY (pathlock.above('/q7/x'))) OR (q.k = pathlock.k(pathlock.sk('/q7/x')) AND "
      "q.sk = pathlock.sk('/q7/x')) OR (q.k >= pathlock.k(pathlock.lo('/q7/x')) AND q.k <= "
      "pathlock.k(pathlock.hi('/q7/x')))) ORDER BY q.place, q.code LIMIT 1",
      "SELECT max(w.expires) FROM pathlock.waiters w WHERE w.ns = 'explain'",
      "SELECT * FROM pathlock.waiters w WHERE w.ns = 'explain' AND w.id = 'w7'",
      "SELECT * FROM pathlock.locks l WHERE l.ns = 'explain' AND l.id = 'bulk7'",
      "SELECT * FROM pathlock.locks l WHERE l.ns = 'explain' AND l.idem = 'key7'",
      "SELECT 1 FROM pathlock.locks l WHERE l.ns = 'explain' AND l.expires <= 5",
      "SELECT 1 FROM pathlock.waiters w WHERE w.ns = 'explain' AND w.expires <= 5",
      "DELETE FROM pathlock.locks l WHERE l.ns = 'explain' AND l.id IN (SELECT x.id FROM pathlock.locks x "
      "WHERE x.ns = 'explain' AND x.expires <= 5 FOR UPDATE SKIP LOCKED)",
      "DELETE FROM pathlock.locks l WHERE l.ns = 'explain' AND l.id = 'bulk7' AND l.token = 't' AND l.holds <= 1",
      "UPDATE pathlock.locks l SET expires = 9 WHERE l.ns = 'explain' AND l.id = 'bulk7' AND l.token = 't' "
      "AND l.expires > 5",
      "DELETE FROM pathlock.waiters w WHERE w.ns = 'explain' AND w.id = 'w7'",
      "SELECT 1 FROM pathlock.namespaces n WHERE n.ns = 'ns7'",
      "SELECT * FROM pathlock.limits m WHERE m.ns IN ('explain', '*') ORDER BY m.ns DESC LIMIT 1",
      "SELECT * FROM pathlock.locks l WHERE l.ns = 'explain' AND l.fence > 5 ORDER BY l.fence LIMIT 512",
      "SELECT * FROM pathlock.waiters w WHERE w.ns = 'explain' AND w.expires > 5 ORDER BY w.place LIMIT 100",
  };
  return all;
}

// The counts of pathlock.limit_refusal (functions version 9), run only when
// a limit applies: the live locks, an owner's live locks, the live places of
// a namespace, up to the limit and in full. They read most of a namespace's
// entries, and namespace "explain" holds half of every table here, so with
// the server's settings the planner rightly finds a sequential scan
// cheaper; the functions run with enable_seqscan and enable_bitmapscan off
// (set on acquire), as these are explained, and must then read the
// namespace's range of an index that begins with ns (never locks_ended or
// waiters_ended, whose ranges hold every namespace's live rows).
const std::vector<std::string>& counting_statements() {
  static const std::vector<std::string> all{
      "SELECT count(*) FROM (SELECT 1 FROM pathlock.locks l WHERE l.ns = 'explain' "
      "AND (l.ns, l.expires) > ('explain', 5) LIMIT 100) x",
      "SELECT count(*) FROM pathlock.locks l WHERE l.ns = 'explain' AND (l.ns, l.expires) > ('explain', 5)",
      "SELECT count(*) FROM (SELECT 1 FROM pathlock.locks l WHERE l.ns = 'explain' AND l.owner = 'o' "
      "AND (l.ns, l.owner, l.expires) > ('explain', 'o', 5) LIMIT 100) x",
      "SELECT count(*) FROM pathlock.locks l WHERE l.ns = 'explain' AND l.owner = 'o' "
      "AND (l.ns, l.owner, l.expires) > ('explain', 'o', 5)",
      "SELECT count(*) FROM (SELECT 1 FROM pathlock.waiters w WHERE w.ns = 'explain' "
      "AND (w.ns, w.expires) > ('explain', 5) LIMIT 100) x",
      "SELECT count(*) FROM pathlock.waiters w WHERE w.ns = 'explain' AND (w.ns, w.expires) > ('explain', 5)",
  };
  return all;
}

}  // namespace

TEST_CASE("postgres: every statement on the hot path reads an index (EXPLAIN)", "[postgres][explain]") {
  devtools::PostgresServer server;  // private: filled with rows
  auto engine = test::postgres_engine(nullptr, server.url());
  fill(server, std::string(engine->matrix().fingerprint));
  for (const std::string& statement : statements()) {
    const std::string plan = server.sql("EXPLAIN (COSTS OFF) " + statement);
    INFO(statement << "\n" << plan);
    CHECK(plan.find("Index") != std::string::npos);
    CHECK(plan.find("Seq Scan") == std::string::npos);
  }
  for (const std::string& statement : counting_statements()) {
    const std::string plan =
        server.sql("SET enable_seqscan = off; SET enable_bitmapscan = off; EXPLAIN (COSTS OFF) " + statement);
    INFO(statement << "\n" << plan);
    CHECK(std::regex_search(plan, std::regex("Index (Only )?Scan using (locks_expires|locks_owner|waiters_expires)")));
    CHECK(plan.find("Seq Scan") == std::string::npos);
  }
}

// The plans the calls really run (functions version 8; 9's limits): a session plans
// each statement of a function once, at its first call, and keeps the plan
// (generic plans), often made on tables that are empty then. With
// auto_explain logging every nested statement's plan and autovacuum off (so
// nothing is planned again and the dead rows of released locks pile up),
// the calls of a fresh server's engine, from empty tables on: no plan reads
// a pathlock table by a sequential scan or a bitmap scan (both read the dead
// rows again on every call; before version 8 the conflict check read a
// namespace's whole range of held_code by a bitmap scan and the sweep's
// probe read all of `locks`). The calls include those of a namespace with
// limits (version 9): the lookup of its limits, the counts under them and
// the refusal by each, and setting them.
TEST_CASE("postgres: the plans the calls make on empty tables use no sequential or bitmap scan",
          "[postgres][explain]") {
  devtools::PostgresServer server({"shared_preload_libraries=auto_explain", "auto_explain.log_min_duration=0",
                                   "auto_explain.log_nested_statements=on", "autovacuum=off"});
  auto engine = test::postgres_engine(nullptr, server.url());  // the schema, its tables empty
  const std::size_t from = server.log().size();
  const std::string ns = "plans";
  for (int i = 0; i < 200; ++i) {
    const Grant g = test::granted(*engine, test::one_target_request(ns, "alice", "upload", "/c/d/f" + std::to_string(i)));
    REQUIRE(engine->release(ns, g.id, g.token));
  }
  // A holder with a key, renewed and entered again; a fair waiter that
  // gives up; a force-release; an ended lease in a request's way.
  LockRequest keyed = test::one_target_request(ns, "bob", "delete_folder", "/x");
  keyed.idempotency_key = "k1";
  const Grant held = test::granted(*engine, keyed);
  CHECK(test::granted(*engine, keyed).id == held.id);
  CHECK(engine->renew(ns, held.id, held.token, std::nullopt));
  LockRequest again = keyed;
  again.idempotency_key.clear();
  test::granted(*engine, again.reenter(held));
  CHECK_FALSE(engine->acquire(test::one_target_request(ns, "carol", "upload", "/x/y", Millis{50})).granted());
  CHECK(engine->force_release(ns, held.id));
  LockRequest brief = test::one_target_request(ns, "dave", "delete_folder", "/z");
  brief.ttl = Millis{1};
  test::granted(*engine, brief);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  test::granted(*engine, test::one_target_request(ns, "erin", "upload", "/z/a"));
  // A namespace with limits: grants counted under them, a fair waiter's
  // place counted, then a refusal by each limit (the counts in full).
  const std::string limited = "plans-limited";
  engine->set_limits(limited, Limits{100, 100, 100});
  for (int i = 0; i < 20; ++i) {
    const Grant g =
        test::granted(*engine, test::one_target_request(limited, "alice", "upload", "/c/f" + std::to_string(i)));
    REQUIRE(engine->release(limited, g.id, g.token));
  }
  const Grant folder = test::granted(*engine, test::one_target_request(limited, "bob", "delete_folder", "/x"));
  CHECK(engine->acquire(test::one_target_request(limited, "carol", "upload", "/x/y", Millis{50})).conflicted());
  engine->set_limits(limited, Limits{1, 0, std::nullopt});
  CHECK(engine->acquire(test::one_target_request(limited, "carol", "upload", "/y")).over_limit());
  CHECK(engine->acquire(test::one_target_request(limited, "carol", "upload", "/x/y", Millis{50})).over_limit());
  engine->set_limits(limited, Limits{std::nullopt, std::nullopt, 1});
  CHECK(engine->acquire(test::one_target_request(limited, "bob", "upload", "/y")).over_limit());
  engine->set_limits(limited, std::nullopt);
  CHECK(engine->release(limited, folder.id, folder.token));
  const std::string log = server.log().substr(from);
  REQUIRE(log.find("pathlock.acquire") != std::string::npos);  // auto_explain logged the calls
  const std::regex scan("(Seq Scan|Bitmap Heap Scan) on (locks|held|waiters|queued|namespaces|watchers|limits)\\b");
  std::vector<std::string> found;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), scan); it != std::sregex_iterator(); ++it)
    if (found.size() < 5) found.push_back(it->str());
  std::string names;
  for (const std::string& f : found) names += f + "; ";
  INFO("first plans that scan: " << names);
  CHECK(found.empty());
}
