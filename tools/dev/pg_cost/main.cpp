// pathlock-pg-cost: the instructions a PostgreSQL backend runs per pathlock
// acquire+release pair, counted by valgrind's callgrind in a single-user
// backend: deterministic, so it compares two versions of the PostgreSQL
// functions exactly on a busy machine where timings do not
// (docs/postgres.md#measured). The backend's user-space instructions only:
// the round trips and the WAL flush are not in it. The pair is the one
// pathlock-pg-bench times: an upload at a fresh path of the given depth,
// then its release.
//
// How: a private PostgresServer (tools/dev/pg_devtools) logs every
// statement; an engine acquires once, so that it installs its schema and
// the server logs its exact call; --sql files are run over that schema;
// the server stops, and the call runs again with fresh paths and ids in
// `postgres --single` under callgrind, as the server's user: kWarm pairs,
// then kWarm + PAIRS pairs. The difference over PAIRS is the answer.
//
//   pathlock-pg-cost [--pairs N] [--depth D] [--sql FILE]...
//     --sql FILE  SQL run after the engine's own schema (repeatable, in
//                 order), e.g. the schema.sql of another commit: its
//                 functions replace the build's (the call's arguments
//                 must be the same)
// Needs valgrind. Prints "<n> instructions per pair (...)". With
// PATHLOCK_PG_COST_KEEP=DIR it also writes the two callgrind profiles to
// DIR/warm.cg and DIR/full.cg (callgrind_annotate --inclusive=yes), and
// the scripts they ran beside them (warm.sql, full.sql).
#include "pg_devtools/postgres_server.hpp"
#include "pg_devtools/server_process.hpp"

#include <pathlock/postgres.hpp>

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using pathlock::devtools::PostgresServer;

constexpr int kWarm = 20;

struct Args {
  int pairs = 200;
  int depth = 3;
  std::vector<std::string> sql;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string name = argv[i], value = argv[i + 1];
    if (name == "--pairs") a.pairs = std::stoi(value);
    else if (name == "--depth") a.depth = std::stoi(value);
    else if (name == "--sql") a.sql.push_back(value);
    else throw std::invalid_argument("unknown option " + name);
  }
  if (argc % 2 == 0) throw std::invalid_argument(std::string("option without a value: ") + argv[argc - 1]);
  if (a.pairs < 1 || a.depth < 1) throw std::invalid_argument("--pairs and --depth take a number of at least 1");
  return a;
}

std::string folders(int depth) {
  std::string p;
  for (int level = 1; level < depth; ++level) p += fmt::format("/d{}", level);
  return p;
}

// `text` with every `from` replaced by `to`.
std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

// The engine's acquire of an upload at `path` as the server logged it, its
// parameters written in as SQL literals.
std::string captured_call(const PostgresServer& server, const std::string& path) {
  pathlock::PostgresOptions options;
  options.url = server.url();
  const auto engine = pathlock::make_postgres_engine(options);
  if (!engine->acquire(pathlock::LockRequest{"cost", "cost", "upload", {{"target", path}}}).granted())
    throw std::runtime_error("the engine's acquire was refused");
  const std::string log = server.log();
  std::smatch call;
  const std::regex logged(R"(execute [^:]*: (SELECT [^\n]*FROM pathlock\.acquire\([^\n]*)\n[^\n]*parameters: ([^\n]*))");
  if (!std::regex_search(log, call, logged))
    throw std::runtime_error("the server logged no pathlock.acquire call");
  std::string statement = call[1], params = call[2];
  std::vector<std::pair<std::string, std::string>> values;  // $n, literal
  const std::regex value(R"(\$(\d+) = ('(?:[^']|'')*'|NULL))");
  for (auto it = std::sregex_iterator(params.begin(), params.end(), value); it != std::sregex_iterator(); ++it)
    values.emplace_back("$" + (*it)[1].str(), (*it)[2].str());
  // The last argument is the call's time budget (functions version 4): a
  // replay under callgrind runs far slower than the engine's call, so it
  // runs without one (NULL), as a version 3 engine's call does.
  if (!values.empty() && values.size() >= 18) values.back().second = "NULL";
  for (auto v = values.rbegin(); v != values.rend(); ++v)  // $18 before $1
    statement = replace_all(statement, v->first, v->second);
  return statement;
}

// `call` with fresh paths, ids and tokens for pairs 1..n, each followed by its release.
std::string pairs_script(const std::string& call, const std::string& path, int n, int depth) {
  std::smatch m;
  std::regex_search(call, m, std::regex(R"('([0-9a-f]{24})', '([0-9a-f]{32})')"));  // the new id and token
  const std::string id = m[1], token = m[2];
  std::string out;
  for (int i = 1; i <= n; ++i) {
    const std::string fresh_id = fmt::format("{:024x}", i), fresh_token = fmt::format("{:032x}", i);
    std::string one = replace_all(call, path, fmt::format("{}/f{}", folders(depth), i));
    one = replace_all(replace_all(one, id, fresh_id), token, fresh_token);
    out += one + ";\n\n" + fmt::format("SELECT pathlock.release('cost', '{}', '{}');\n\n", fresh_id, fresh_token);
  }
  return out;
}

// Instructions of a single-user backend of the stopped `server` running
// `script`; checks that each of its `pairs` acquires was granted.
long long counted(const PostgresServer& server, const std::string& script, int pairs, const std::string& tag) {
  const std::string base = server.dir() + "/" + tag;
  std::ofstream(base + ".sql") << script;
  pathlock::devtools::run_as_server_user(
      {"/bin/sh", "-c",
       fmt::format("exec valgrind --tool=callgrind --callgrind-out-file={0}.cg {1} --single -j -D {2}/data postgres "
                   "< {0}.sql > {0}.out 2>&1",
                   base, server.program("postgres"), server.dir())},
      base + ".log");
  const std::string out = pathlock::devtools::read_named_file(base + ".out");
  int granted = 0;
  const std::string mark = "\"granted\"";
  for (std::size_t at = out.find(mark); at != std::string::npos; at = out.find(mark, at + 1)) ++granted;
  if (granted != pairs)
    throw std::runtime_error(fmt::format("{} of {} pairs ran:\n{}", granted, pairs, out.substr(0, 2000)));
  std::smatch total;
  const std::string cg = pathlock::devtools::read_named_file(base + ".cg");
  if (const char* keep = std::getenv("PATHLOCK_PG_COST_KEEP")) {  // a directory: keep the profile and the script
    std::ofstream(fmt::format("{}/{}.cg", keep, tag)) << cg;
    std::ofstream(fmt::format("{}/{}.sql", keep, tag)) << script;
  }
  if (!std::regex_search(cg, total, std::regex(R"((?:summary|totals): (\d+))")))
    throw std::runtime_error("no totals in " + base + ".cg");
  return std::stoll(total[1]);
}

}  // namespace

int main(int argc, char** argv) try {
  const Args a = parse(argc, argv);
  PostgresServer server({"log_statement=all"});
  const std::string path = folders(a.depth) + "/captured";
  const std::string call = captured_call(server, path);
  for (const std::string& file : a.sql) server.sql(pathlock::devtools::read_named_file(file));
  std::string version = server.sql("SELECT pathlock.functions_version()");
  version.erase(version.find_last_not_of('\n') + 1);
  server.stop();
  const long long warm = counted(server, pairs_script(call, path, kWarm, a.depth), kWarm, "warm");
  const long long full = counted(server, pairs_script(call, path, kWarm + a.pairs, a.depth), kWarm + a.pairs, "full");
  std::cout << fmt::format("{} instructions per pair (upload at depth {} and its release, {} pairs after {}; "
                           "functions version {}; single-user backend under callgrind)\n",
                           (full - warm) / a.pairs, a.depth, a.pairs, kWarm, version);
  return 0;
} catch (const std::exception& e) {
  std::cerr << "pathlock-pg-cost: " << e.what() << "\n";
  return 1;
}
