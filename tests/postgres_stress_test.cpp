// The correctness checker under load on PostgreSQL (issue 39 point 5):
// several `pathlock-stress run` processes with several threads each take
// random overlapping locks (waiting, fair or not, renewing) on one namespace
// while every client connection is terminated (pg_terminate_backend) and
// then the server is killed with SIGKILL and restarted; `pathlock-stress
// check` then proves from their logs that no two conflicting locks were held
// at once and that fences never went backwards.
#include "conformance/fixture.hpp"
#include "support/postgres_server.hpp"
#include "support/process.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <fstream>
#include <string>
#include <vector>

using namespace pathlock;
using namespace std::chrono_literals;

namespace {

// Grants committed so far (the server's row counter of pathlock.locks; the
// statistics reach the view within about half a second).
long long grants(const devtools::PostgresServer& server) {
  return std::stoll(server.sql("SELECT coalesce((SELECT n_tup_ins FROM pg_stat_user_tables "
                               "WHERE schemaname = 'pathlock' AND relname = 'locks'), 0)"));
}

}  // namespace

TEST_CASE("postgres under load: connections terminated and kill -9 of the server, the checker finds no violation",
          "[postgres][stress]") {
  devtools::PostgresServer server;  // private: killed
  const std::string ns = "stress";
  const test::ScratchDir scratch("pg-stress");
  INFO("logs in " << scratch.dir());
  std::vector<pid_t> pids;
  std::vector<std::string> logs;
  for (int p = 0; p < 3; ++p) {
    logs.push_back(scratch.path(fmt::format("stress-{}.log", p)));
    pids.push_back(test::spawn({PATHLOCK_STRESS, "run", "--backend", "postgres", "--postgres", server.url(),
                                "--namespace", ns, "--threads", "4", "--duration", "15000", "--ttl", "3000",
                                "--command-timeout", "2000", "--max-backend-errors", "1000000", "--seed",
                                std::to_string(p + 1), "--log", logs.back()}));
  }
  // Mid-run (sync points: grants committed), every client connection ends,
  // then the server dies and comes back.
  REQUIRE(test::Fixture::until([&] { return grants(server) >= 300; }, 60000ms));
  server.sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE 'pathlock%'");
  const long long before = grants(server);
  REQUIRE(test::Fixture::until([&] { return grants(server) >= before + 300; }, 60000ms));
  server.kill_hard();
  server.restart();
  for (const pid_t pid : pids) CHECK(test::wait_exit(pid) == 0);
  std::vector<std::string> check{PATHLOCK_STRESS, "check"};
  check.insert(check.end(), logs.begin(), logs.end());
  CHECK(test::wait_exit(test::spawn(check)) == 0);
  std::size_t holds = 0;
  for (const auto& log : logs) {
    std::ifstream in(log);
    for (std::string line; std::getline(in, line);) holds += line.rfind("hold", 0) == 0 ? 1 : 0;
  }
  CHECK(holds > 600);
}
