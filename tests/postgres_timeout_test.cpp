// PostgreSQL calls the caller gave up on do nothing later (issue 37 point 4,
// issue 39 point 4): the server gives up before the client (lock_timeout and
// the grant's deadline check, below the command timeout), a client timeout
// cancels the statement on the server, and the pool is bounded with a clear
// error. Each case blocks the server for real: another session holds what
// the call needs in an open transaction.
#include "conformance/fixture.hpp"
#include "support/backends.hpp"
#include "support/postgres_server.hpp"
#include "postgres/connection.hpp"

#include <pathlock/postgres.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <thread>

using namespace pathlock;
using namespace std::chrono_literals;

namespace {

long long count_of(const devtools::PostgresServer& server, const std::string& query) {
  return std::stoll(server.sql(query));
}

// Another session (psql, application_name 'blocker') that takes `take` in a
// transaction and keeps it open until released (its statement cancelled).
class HoldingSession {
 public:
  HoldingSession(const devtools::PostgresServer& server, const std::string& take) : server_(server) {
    thread_ = std::thread([this, take] {
      try {
        server_.psql(server_.url() + "?application_name=blocker",
                     "BEGIN; " + take + "; SELECT pg_sleep(60); COMMIT;");
      } catch (const std::exception&) {  // cancelled: the transaction rolls back
      }
    });
    const bool holding = test::Fixture::until([&] {
      // Asleep inside its transaction, holding advisory locks: the query
      // text alone names pg_sleep from the start, before `take` has run.
      return count_of(server_, "SELECT count(*) FROM pg_stat_activity a WHERE a.application_name = 'blocker' "
                               "AND a.state = 'active' AND a.wait_event = 'PgSleep' AND EXISTS (SELECT 1 "
                               "FROM pg_locks l WHERE l.pid = a.pid AND l.locktype = 'advisory' AND l.granted)") == 1;
    });
    if (!holding) release();  // a joinable thread must not outlive a failed constructor
    REQUIRE(holding);
  }
  ~HoldingSession() { release(); }
  void release() {
    if (!thread_.joinable()) return;
    server_.sql("SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'blocker'");
    thread_.join();
  }

 private:
  const devtools::PostgresServer& server_;
  std::thread thread_;
};

// What holds the paths of a request in namespace `ns` (the lock every call
// on those paths takes first).
std::string holding(const std::string& ns, const std::string& path) {
  return "SELECT pathlock.lock_paths('" + ns + "', ARRAY['" + path + "'])";
}

}  // namespace

TEST_CASE("postgres: an acquire whose client times out is abandoned on the server, no lock appears later",
          "[postgres][timeout]") {
  devtools::PostgresServer server;  // private: its sessions are counted
  PostgresOptions options;
  options.url = server.url();
  options.command_timeout = 1000ms;
  auto engine = make_postgres_engine(options);
  const std::string ns = "abandoned";
  HoldingSession blocker(server, holding(ns, "/t/x"));
  try {
    (void)engine->acquire(test::one_target_request(ns, "alice", "upload", "/t/x"));
    FAIL("granted while another session held its paths");
  } catch (const BackendError& e) {
    // The server gave up first (lock_timeout at 3/4 of the command
    // timeout), not the client: the statement failed there.
    CHECK(std::string(e.what()).find("lock timeout") != std::string::npos);
  }
  blocker.release();
  // Nothing of the call is left running, and no lock appears.
  CHECK(count_of(server, "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' "
                         "AND query LIKE '%pathlock.acquire%' AND pid <> pg_backend_pid()") == 0);
  CHECK(engine->list(ns).empty());
  CHECK(engine->acquire(test::one_target_request(ns, "bob", "delete_folder", "/t")).granted());
}

TEST_CASE("postgres: a statement the client stopped waiting for is cancelled on the server", "[postgres][timeout]") {
  devtools::PostgresServer server;
  postgres::Connection c(server.url(), 5000ms, "pathlock-cancel");
  CHECK_THROWS_AS(c.exec("SELECT pg_sleep(30)", {}, 300ms), BackendError);
  CHECK_FALSE(c.usable());
  // Without the cancel request the server would sleep on for 30 s: it
  // notices a closed socket only when it writes.
  CHECK(test::Fixture::until([&] {
    return count_of(server, "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pathlock-cancel' "
                            "AND state = 'active'") == 0;
  }));
}

TEST_CASE("postgres: the pool is bounded, and says so when every connection is in use", "[postgres][timeout]") {
  const std::string url = test::shared_postgres_url();
  postgres::Pool pool(url, 5000ms, 1, 2);
  {
    postgres::Pool::Lease a = pool.take();
    postgres::Pool::Lease b = pool.take();
    try {
      (void)pool.take(200ms);
      FAIL("a third connection was opened");
    } catch (const BackendError& e) {
      CHECK(std::string(e.what()).find("all 2 connections of the pool are in use") != std::string::npos);
    }
  }
  postgres::Pool::Lease again = pool.take();
  CHECK(again->usable());
  PostgresOptions options;
  options.url = url;
  options.max_connections = 0;
  CHECK_THROWS_AS(make_postgres_engine(options), InvalidRequest);
}
