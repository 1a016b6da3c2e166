// Every statement on the PostgreSQL backend's hot path, as the functions
// (src/postgres/functions.sql, schema.sql) and the engine write it, reads an
// index: EXPLAIN of each over tables of 40,000 locks, 40,000 places in line
// and 20,000 namespaces shows an index and no sequential scan.
#include "support/backends.hpp"
#include "support/postgres_server.hpp"

#include <pathlock/postgres.hpp>

#include <catch2/catch.hpp>

#include <string>
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
      "ANALYZE pathlock.held; ANALYZE pathlock.locks; ANALYZE pathlock.waiters; ANALYZE pathlock.queued; "
      "ANALYZE pathlock.namespaces;");
}

// The hot path's statements with sample arguments: the conflict check
// (ancestors and the path, whether anything is below, below per code, the
// matrices present, places in line), the reentry, key, waiter and lock
// lookups, the expiry probes and deletions, release, renew, the namespace's
// row, and the engine's is_held, list and waiters.
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
      "SELECT * FROM pathlock.locks l WHERE l.ns = 'explain' AND l.fence > 5 ORDER BY l.fence LIMIT 512",
      "SELECT * FROM pathlock.waiters w WHERE w.ns = 'explain' AND w.expires > 5 ORDER BY w.place LIMIT 100",
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
}
