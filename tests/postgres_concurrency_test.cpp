// Only overlapping requests wait for each other on PostgreSQL (issue 39
// points 1 and 2, docs/postgres.md#concurrency): while another session holds
// a path's locks in an open transaction, as a call in its commit would, a
// request on a disjoint path of the same namespace is granted, one that
// overlaps waits (and gives up on the server), and releases, renewals,
// leaving the line and the reads never wait at all. And many threads on
// overlapping multi-target requests never deadlock and never co-hold.
#include "conformance/fixture.hpp"
#include "support/backends.hpp"
#include "support/postgres_server.hpp"

#include <pathlock/admin.hpp>
#include <pathlock/factory.hpp>
#include <pathlock/path.hpp>
#include <pathlock/postgres.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace pathlock;
using namespace std::chrono_literals;

namespace {

// A session (psql) that holds the locks of `paths` in namespace `ns` in an
// open transaction until released.
class PathsHeld {
 public:
  PathsHeld(const devtools::PostgresServer& server, const std::string& ns, const std::string& paths)
      : server_(server) {
    thread_ = std::thread([this, ns, paths] {
      try {
        server_.psql(server_.url() + "?application_name=holder",
                     "BEGIN; SELECT pathlock.lock_paths('" + ns + "', ARRAY[" + paths + "]); SELECT pg_sleep(60);");
      } catch (const std::exception&) {
      }
    });
    REQUIRE(test::Fixture::until([&] {
      return server_.sql("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'holder' "
                         "AND query LIKE '%pg_sleep%'") == "1\n";
    }));
  }
  ~PathsHeld() {
    server_.sql("SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'holder'");
    thread_.join();
  }

 private:
  const devtools::PostgresServer& server_;
  std::thread thread_;
};

// Is a path of `x` at, above or below a path of `y`?
bool overlaps(const std::vector<std::string>& x, const std::vector<std::string>& y) {
  for (const std::string& p : x)
    for (const std::string& q : y)
      if (p == q || p == "/" || q == "/" || q.rfind(p + "/", 0) == 0 || p.rfind(q + "/", 0) == 0) return true;
  return false;
}

}  // namespace

TEST_CASE("postgres: a request waits only for requests that overlap it", "[postgres][concurrency]") {
  devtools::PostgresServer server;
  PostgresOptions options;
  options.url = server.url();
  options.command_timeout = 1000ms;
  auto engine = make_postgres_engine(options);
  const std::string ns = "overlap";
  const Grant kept = test::granted(*engine, test::one_target_request(ns, "carol", "upload", "/b/kept"));
  {
    const PathsHeld held(server, ns, "'/a/x'");
    // Disjoint: /b/new shares only the root with /a/x.
    CHECK(engine->acquire(test::one_target_request(ns, "alice", "upload", "/b/new")).granted());
    // Overlapping: the path itself, a descendant, an ancestor all wait (and
    // give up on the server: lock timeout).
    for (const std::string path : {"/a/x", "/a/x/y", "/a"})
      CHECK_THROWS_WITH(engine->acquire(test::one_target_request(ns, "bob", "upload", path)),
                        Catch::Contains("lock timeout"));
  }
  // Calls that take no path lock, even with the root held exclusive.
  const PathsHeld root(server, ns, "'/'");
  CHECK(engine->renew(ns, kept.id, kept.token, std::nullopt));
  CHECK(engine->is_held(ns, kept.id, kept.token));
  CHECK(engine->list(ns).size() == 2);
  CHECK(engine->waiters(ns).empty());
  CHECK(engine->blockers(ns, "delete_folder", {{"target", "/b"}}).blockers.size() == 2);
  EngineOptions by_backend;
  by_backend.backend = Backend::postgres;
  by_backend.postgres = options;
  CHECK(admin::make_inspector(by_backend)->status(ns).exists);
  CHECK(engine->release(ns, kept.id, kept.token));
}

TEST_CASE("postgres: many threads on overlapping multi-target requests never deadlock and never co-hold",
          "[postgres][concurrency]") {
  auto engine = test::postgres_engine();
  const std::string ns = "crossing";
  const std::vector<std::string> tree{"/a", "/a/b", "/a/b/c", "/a/d", "/e", "/e/f", "/e/f/g"};
  std::mutex mutex;
  std::vector<std::vector<std::string>> holding;  // the targets of the locks held now
  int violations = 0, grants = 0, attempts = 0;
  std::vector<std::string> errors;  // a deadlock would be one (SQLSTATE 40P01)
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      std::mt19937 random(static_cast<unsigned>(t));
      for (int i = 0; i < 60; ++i) {
        // A held move_folder refuses a move_folder at, above or below either
        // of its paths (A×B× in docs/matrix-grid.md): two targets, which the
        // requests name in either key order.
        const std::vector<std::string> paths{tree[random() % tree.size()], tree[random() % tree.size()]};
        if (overlaps({paths[0]}, {paths[1]})) continue;
        LockRequest r{ns, "t" + std::to_string(t), "move_folder", {{"src", paths[0]}, {"dst", paths[1]}}};
        r.wait = 20s;
        std::unique_lock counting(mutex);
        ++attempts;
        counting.unlock();
        AcquireResult got;
        try {
          got = engine->acquire(r);
        } catch (const std::exception& e) {
          std::lock_guard guard(mutex);
          errors.push_back(e.what());
          continue;
        }
        if (!got.granted()) continue;
        {
          std::lock_guard guard(mutex);
          for (const auto& h : holding) violations += overlaps(h, paths) ? 1 : 0;
          holding.push_back(paths);
          ++grants;
        }
        std::this_thread::yield();
        std::unique_lock releasing(mutex);
        holding.erase(std::find(holding.begin(), holding.end(), paths));
        releasing.unlock();
        engine->release(ns, got.grant.id, got.grant.token);
      }
    });
  for (std::thread& t : threads) t.join();
  CHECK(violations == 0);
  CHECK(errors == std::vector<std::string>{});
  CHECK(grants == attempts);  // every wait ends in a grant
  CHECK(grants > 8 * 10);
}
