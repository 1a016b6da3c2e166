// The option parser every program uses (tools/common/options.hpp), and the
// programs themselves, as real processes, against the exit statuses of
// docs/cli.md ("Exit status"): 0 done, 1 failed, 2 the command line refused.
#include "common/options.hpp"

#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "support/process.hpp"

namespace fs = std::filesystem;
using namespace pathlock;
using options::Options;
using options::UsageError;

namespace {

std::string usage_error(const Options& table, const std::vector<std::string>& args) {
  try {
    table.parse(args);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

struct Run {
  int status = -1;
  std::string err;
};

// Runs `command` (shell words) in `dir` with stdin from /dev/null.
Run run_in(const std::string& dir, const std::string& command) {
  const std::string full = "cd '" + dir + "' && " + command + " < /dev/null > stdout 2> stderr";
  const int raw = std::system(full.c_str());
  Run r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128;
  std::ifstream in(fs::path(dir) / "stderr");
  std::stringstream s;
  s << in.rdbuf();
  r.err = s.str();
  return r;
}

}  // namespace

TEST_CASE("options: the table decides, and refuses what it does not declare", "[options]") {
  const Options table = Options{}
                            .command("run")
                            .required("log")
                            .value("backend",
                                   [](const std::string& v) {
                                     if (v != "memory") throw std::invalid_argument("unknown backend '" + v + "'");
                                   })
                            .number("threads", 1, 8)
                            .repeated("matrix")
                            .flag("quick")
                            .alias("-q", "quick")
                            .positional(0, 1);
  const options::Parsed p =
      table.parse({"--log", "--x", "--threads", "8", "-q", "--matrix", "a", "--matrix", "b", "f"});
  CHECK(p.get("log") == "--x");  // a value is the next word, whatever it looks like
  CHECK(p.number_or("threads", 1) == 8);
  CHECK(p.number_or("missing", 7) == 7);
  CHECK(p.has("quick"));
  CHECK(p.all("matrix") == std::vector<std::string>{"a", "b"});
  CHECK(p.positional == std::vector<std::string>{"f"});
  CHECK(!p.has("backend"));
  CHECK(p.get("backend", "memory") == "memory");

  CHECK(usage_error(table, {"--log", "l", "--thread", "2"}) == "unknown option --thread for 'run'");
  CHECK(usage_error(table, {"--log", "l", "--log", "m"}) == "--log is given more than once");
  CHECK(usage_error(table, {"--log", "l", "--quick", "--quick"}) == "--quick is given more than once");
  CHECK(usage_error(table, {"--log"}) == "--log needs a value");
  CHECK(usage_error(table, {"--threads", "2"}) == "--log is required");
  CHECK(usage_error(table, {"--log", "l", "a", "b"}) == "wrong number of arguments (2, expected 0 to 1): 'b'");
  CHECK(usage_error(table, {"--log", "l", "--backend", "redis"}) == "--backend: unknown backend 'redis'");
  for (const std::string bad : {"", "x", "2x", "0", "9", "-1", " 3", "3 ", "99999999999999999999999"}) {
    INFO("--threads '" << bad << "'");
    CHECK(usage_error(table, {"--log", "l", "--threads", bad}) ==
          "--threads wants a whole number from 1 to 8, not '" + bad + "'");
  }
  CHECK(options::parse_number("-5", -10, 10, "x") == -5);
}

TEST_CASE("options: every program refuses a bad command line with exit status 2", "[options]") {
  const test::ScratchDir dir("options");
  std::map<std::string, std::string> programs{
      {"pathlock", PATHLOCK_CLI}, {"pathlock-stress", PATHLOCK_STRESS}, {"pathlock-matrixc", PATHLOCK_MATRIXC}};
#ifdef PATHLOCK_MEMORY_BENCH
  programs["pathlock-memory-bench"] = PATHLOCK_MEMORY_BENCH;
#endif
#ifdef PATHLOCK_BENCH
  programs["pathlock-bench"] = PATHLOCK_BENCH;
#endif
  std::ifstream table(PATHLOCK_SOURCE_DIR "/tests/data/refused_command_lines.txt");
  REQUIRE(table);
  std::size_t run = 0;
  for (std::string line; std::getline(table, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto arrow = line.find(" => "), space = line.find(' ');
    REQUIRE(arrow != std::string::npos);
    const auto program = programs.find(line.substr(0, space));
    if (program == programs.end()) continue;  // not built here
    INFO(line);
    const Run r = run_in(dir.path(""), program->second + line.substr(space, arrow - space));
    CHECK(r.status == options::kExitUsage);
    CHECK(r.err.rfind(line.substr(arrow + 4), 0) == 0);
    ++run;
  }
  CHECK(run >= 19);
  // Nothing ran: no stress log was written.
  CHECK(!fs::exists(dir.path("l")));
}
