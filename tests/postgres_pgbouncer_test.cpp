// The PostgreSQL backend behind PgBouncer in transaction mode
// (docs/postgres.md, "Connection pooling, PgBouncer"): Debian's pgbouncer,
// started by the test in front of a PostgreSQL of its own
// (tools/dev/pg_devtools/pgbouncer.hpp: pool_mode = transaction, two server
// connections). Every lock call goes through it. With listen_url (or the
// CLI's --postgres-listen) on PostgreSQL itself a waiter is woken by the
// release's notification; with the listener through the bouncer too no
// notification arrives, and a waiter still gets the lock on the re-check.
#include "conformance/fixture.hpp"
#include "support/backends.hpp"
#include "support/postgres_server.hpp"
#include "support/process.hpp"
#include "support/waiting_probe.hpp"

#include "pg_devtools/pgbouncer.hpp"

#include <pathlock/postgres.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <future>
#include <memory>
#include <sstream>
#include <string>

using namespace pathlock;
using namespace std::chrono_literals;

namespace {

// How many sessions of the server have this application name.
long long sessions_named(const devtools::PostgresServer& server, const std::string& name) {
  return std::stoll(server.sql("SELECT count(*) FROM pg_stat_activity WHERE application_name = '" + name + "'"));
}

// How many client connections PgBouncer has for the database `postgres`
// (SHOW CLIENTS: type|user|database|...), its admin console's own aside.
int bouncer_clients(const devtools::PgBouncer& bouncer) {
  std::istringstream rows(bouncer.console("SHOW CLIENTS"));
  int n = 0;
  for (std::string row; std::getline(rows, row);) n += row.rfind("C|postgres|postgres|", 0) == 0 ? 1 : 0;
  return n;
}

// A PostgreSQL of its own, a pgbouncer in front of it (transaction mode,
// two server connections), and bob's delete_folder of /d in `ns`, taken
// through the bouncer by `engine`.
struct Bounced {
  devtools::PostgresServer server;
  devtools::PgBouncer bouncer{server};
  const std::string ns;
  const std::string listen_url;  // the listener's route: "" = through the bouncer too
  std::unique_ptr<LockEngine> engine = make_engine();
  const Grant folder = test::granted(*engine, test::one_target_request(ns, "bob", "delete_folder", "/d"));

  // `listener_on_server`: listen_url is PostgreSQL itself (application name
  // pathlock-direct-listener).
  Bounced(std::string n, bool listener_on_server)
      : ns(std::move(n)),
        listen_url(listener_on_server ? server.url() + "?application_name=pathlock-direct-listener" : "") {}

  // Another engine whose calls go through the bouncer.
  std::unique_ptr<LockEngine> make_engine() const {
    PostgresOptions o;
    o.url = bouncer.url();
    o.listen_url = listen_url;
    o.command_timeout = 10000ms;
    return make_postgres_engine(o);
  }

  // `owner` waits (up to two minutes) on `on` for an upload of /d/f.
  std::future<AcquireResult> wait_for_upload(LockEngine& on, const std::string& owner) const {
    LockRequest r = test::one_target_request(ns, owner, "upload", "/d/f", 120s);
    return std::async(std::launch::async, [&on, r] { return on.acquire(r); });
  }
};

}  // namespace

TEST_CASE("postgres through pgbouncer: two engines in transaction mode, the listener on PostgreSQL, a release "
          "wakes the waiter",
          "[postgres][pgbouncer]") {
  Bounced t("bounced", true);
  LockEngine& a = *t.engine;
  const auto b = t.make_engine();
  const std::string& ns = t.ns;
  auto waiting = t.wait_for_upload(*b, "w");
  REQUIRE(test::until_waiting(ns, "w"));
  // Listing and waiters through the bouncer, from either engine.
  const std::vector<LockInfo> held = b->list(ns);
  REQUIRE(held.size() == 1);
  CHECK(held[0].id == t.folder.id);
  const std::vector<WaiterInfo> waiters = a.waiters(ns);
  REQUIRE(waiters.size() == 1);
  CHECK(waiters[0].owner == "w");
  // b's listener went straight to PostgreSQL; both engines' calls go through the bouncer.
  CHECK(sessions_named(t.server, "pathlock-direct-listener") == 1);
  CHECK(bouncer_clients(t.bouncer) >= 2);
  // Released at the start of one of the waiter's sleeps: the notification
  // cuts that sleep short (a grant on the re-check timer would not).
  REQUIRE(test::until_waiting(ns, "w", test::times_waited(ns, "w") + 1));
  REQUIRE(a.release(ns, t.folder.id, t.folder.token));
  const AcquireResult got = waiting.get();
  REQUIRE(got.granted());
  CHECK(test::times_woken(ns, "w") >= 1);
  CHECK(got.grant.fence > t.folder.fence);
  // Fences go on rising, whichever engine asks.
  const Grant next = test::granted(a, test::one_target_request(ns, "carol", "upload", "/e"));
  CHECK(next.fence > got.grant.fence);
  CHECK(a.release(ns, got.grant.id, got.grant.token));
  CHECK(b->release(ns, next.id, next.token));
  CHECK(a.list(ns).empty());
  CHECK(b->waiters(ns).empty());
}

TEST_CASE("postgres through pgbouncer: with the listener through the bouncer too, no notification comes, a waiter "
          "gets the lock on the re-check",
          "[postgres][pgbouncer]") {
  Bounced t("bounced-fallback", false);
  LockEngine& engine = *t.engine;
  auto waiting = t.wait_for_upload(engine, "w");
  // Asleep twice: it looked again on the timer.
  REQUIRE(test::until_waiting(t.ns, "w", 2));
  CHECK(engine.list(t.ns).size() == 1);
  REQUIRE(engine.release(t.ns, t.folder.id, t.folder.token));
  const AcquireResult got = waiting.get();
  REQUIRE(got.granted());
  CHECK(got.grant.fence > t.folder.fence);
  // LISTEN through a transaction-mode pooler hears nothing: no sleep was cut short.
  CHECK(test::times_woken(t.ns, "w") == 0);
  CHECK(engine.release(t.ns, got.grant.id, got.grant.token));
  CHECK(engine.list(t.ns).empty());
}

TEST_CASE("postgres through pgbouncer: pathlock shell --postgres on the bouncer, --postgres-listen on PostgreSQL",
          "[postgres][pgbouncer][shell]") {
  Bounced t("bounced-shell", false);
  int in[2], out[2];
  REQUIRE(::pipe2(in, O_CLOEXEC) == 0);
  REQUIRE(::pipe2(out, O_CLOEXEC) == 0);
  test::ChildGuard shell{test::spawn({PATHLOCK_CLI, "shell", "--backend", "postgres", "--postgres", t.bouncer.url(),
                                      "--postgres-listen", t.server.url() + "?application_name=pathlock-cli-listener",
                                      "--namespace", t.ns},
                                     in[0], out[1])};
  ::close(in[0]);
  ::close(out[1]);
  const std::string line = "acquire w upload /d/f wait=120000\n";
  REQUIRE(::write(in[1], line.data(), line.size()) == static_cast<ssize_t>(line.size()));
  // The shell's engine waits, listening on its own route.
  REQUIRE(test::Fixture::until([&] { return sessions_named(t.server, "pathlock-cli-listener") == 1; }, 60000ms));
  REQUIRE(t.engine->release(t.ns, t.folder.id, t.folder.token));
  const nlohmann::json answer = nlohmann::json::parse(test::read_line(out[0]));
  CHECK(answer["granted"] == true);
  ::close(in[1]);
  CHECK(test::wait_exit(shell.pid) == 0);
  shell.pid = -1;
  ::close(out[0]);
}
