// pathlock-pg-bench: the PostgreSQL backend against the Redis backend and
// against a per-level row lock in the same database, in one run
// (docs/postgres.md#measured). Starts its own PostgreSQL and redis-servers.
//
// A pair is one acquire (an upload at a fresh path of the given depth) and
// its release, from one client thread. The per-level lock is the method of
// a file-sync server's database locking provider, written from its
// description: one row per path level (a shared counter, or -1 for an
// exclusive holder), one autocommit statement per level, ancestors shared,
// the leaf exclusive; the release undoes each level. The subjects run in
// alternating slices of `--slice` pairs so that they share the machine's
// weather; the report is one line per subject and depth: pair p50 (µs),
// pairs/s (pairs over the time spent in that subject's slices) and the p50
// as a multiple of pathlock-redis's in the same run.
//
// Two more subjects say what durability costs on this machine:
// pathlock-redis-fsync is the Redis backend on a redis-server with
// `appendonly yes, appendfsync always` (every write on disk before the
// reply, as a durable PostgreSQL commit), and pg-durable-commit is the
// floor of one durable PostgreSQL commit: one autocommit statement that
// changes one row (so its commit waits for the WAL flush), one round trip.
//
// The PostgreSQL server runs with the defaults (fsync, synchronous_commit
// on: a commit that must be durable waits for its WAL flush) plus
// `--pg-setting name=value` (repeatable; e.g. wal_sync_method=fdatasync);
// --async-commit adds synchronous_commit=off (a crash may lose the last
// commits, grants included) to show what the flush costs. The report
// starts with the server's settings that bear on commits.
//
// With --clients (clients.cpp): many clients at once, disjoint paths and a
// hot folder, PostgreSQL beside Redis at each concurrency. Unknown
// arguments are refused (exit 2, with the usage); --help prints it.
#include "pg_bench/clients.hpp"
#include "pg_devtools/postgres_server.hpp"
#include "redis_devtools/redis_server.hpp"

#include <pathlock/postgres.hpp>
#include <pathlock/redis.hpp>

#include <fmt/format.h>
#include <libpq-fe.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using SteadyClock = std::chrono::steady_clock;

std::string path_at(int depth, long long i) {
  std::string p;
  for (int l = 1; l < depth; ++l) p += fmt::format("/d{}", l);
  return p + fmt::format("/f{}", i);
}

// One row per level, over one libpq connection.
class PerLevel {
 public:
  explicit PerLevel(const std::string& url) : c_(PQconnectdb(url.c_str())) {
    if (PQstatus(c_) != CONNECTION_OK) throw std::runtime_error(PQerrorMessage(c_));
    run("CREATE TABLE IF NOT EXISTS file_locks (key text PRIMARY KEY, lock int NOT NULL, ttl bigint NOT NULL)", {});
  }
  ~PerLevel() { PQfinish(c_); }
  void pair(const std::string& path) {
    const std::vector<std::string> levels = levels_of(path);
    for (std::size_t l = 0; l + 1 < levels.size(); ++l)
      expect(run("INSERT INTO file_locks VALUES ($1, 1, 30) ON CONFLICT (key) DO UPDATE SET lock = file_locks.lock + 1 "
                 "WHERE file_locks.lock >= 0",
                 {levels[l]}));
    expect(run("INSERT INTO file_locks VALUES ($1, -1, 30) ON CONFLICT (key) DO UPDATE SET lock = -1 "
               "WHERE file_locks.lock = 0",
               {levels.back()}));
    expect(run("UPDATE file_locks SET lock = 0 WHERE key = $1 AND lock = -1", {levels.back()}));
    for (std::size_t l = levels.size() - 1; l-- > 0;)
      expect(run("UPDATE file_locks SET lock = lock - 1 WHERE key = $1 AND lock > 0", {levels[l]}));
  }

 private:
  static std::vector<std::string> levels_of(const std::string& path) {
    std::vector<std::string> out;
    for (std::size_t at = path.find('/', 1); at != std::string::npos; at = path.find('/', at + 1))
      out.push_back(path.substr(0, at));
    out.push_back(path);
    return out;
  }
  static void expect(const std::string& affected) {
    if (affected != "1") throw std::runtime_error("per-level: a level was refused");
  }
  std::string run(const char* sql, const std::vector<std::string>& params) {
    std::vector<const char*> v;
    for (const std::string& p : params) v.push_back(p.c_str());
    PGresult* r = PQexecParams(c_, sql, static_cast<int>(v.size()), nullptr, v.data(), nullptr, nullptr, 0);
    const std::string affected = PQcmdTuples(r);
    const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    const std::string error = PQresultErrorMessage(r);
    PQclear(r);
    if (!ok) throw std::runtime_error("per-level: " + error);
    return affected;
  }
  PGconn* c_;
};

struct Subject {
  std::string name;
  std::function<void(const std::string& path)> pair;
  std::vector<double> micros;
  double seconds = 0;
};

std::function<void(const std::string&)> engine_pair(std::shared_ptr<pathlock::LockEngine> engine) {
  return [engine](const std::string& path) {
    const pathlock::AcquireResult r =
        engine->acquire(pathlock::LockRequest{"bench", "bench", "upload", {{"target", path}}});
    if (!r.granted() || !engine->release("bench", r.grant.id, r.grant.token))
      throw std::runtime_error("pathlock: a pair failed");
  };
}

double p50(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[(v.size() - 1) / 2];
}

const char* const kUsage =
    "usage: pathlock-pg-bench [--pairs N] [--slice N] [--async-commit] [--pg-setting name=value]...\n"
    "       pathlock-pg-bench --clients 1,4,16,32 [--namespaces N] [--seconds S] [--mode disjoint|hot|both]\n"
    "                         [--no-redis] [--async-commit] [--pg-setting name=value]... [--sql FILE]...\n"
    "                         [--abandoned N] [--rounds R]\n"
    "The first form: one client, pairs at depths 3, 5 and 8, PostgreSQL beside Redis, a per-level row lock\n"
    "and one durable commit. The second: that many clients at once per point (docs/benchmarks.md);\n"
    "--sql loads a file over the engine's functions (an older functions.sql), --abandoned N adds a line\n"
    "postgres-sweep with N ended leases of other namespaces written before each point, for releases to sweep;\n"
    "--rounds R runs the points R times over and pools each point's slices. It ends with the goals, PASS or FAIL.\n";

struct Args {
  int pairs = 2000, slice = 100;
  bool multi = false;
  pathlock::bench::ClientsArgs clients;
};

struct BadArgs : std::runtime_error {
  using std::runtime_error::runtime_error;
};

int positive(const std::string& name, const std::string& value) {
  std::size_t used = 0;
  int n = 0;
  try {
    n = std::stoi(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size() || n <= 0) throw BadArgs(name + " wants a positive number, not '" + value + "'");
  return n;
}

std::vector<int> client_counts(const std::string& list) {
  std::vector<int> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) out.push_back(positive("--clients", item));
  if (out.empty()) throw BadArgs("--clients wants a list such as 1,4,16,32");
  return out;
}

// Parses the command line; throws BadArgs for anything it does not know.
Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw BadArgs(arg + " wants a value");
      return argv[++i];
    };
    if (arg == "--pairs") a.pairs = positive(arg, value());
    else if (arg == "--slice") a.slice = positive(arg, value());
    else if (arg == "--async-commit") a.clients.pg_settings.emplace_back("synchronous_commit=off");
    else if (arg == "--pg-setting") a.clients.pg_settings.push_back(value());
    else if (arg == "--clients") a.clients.clients = client_counts(value()), a.multi = true;
    else if (arg == "--namespaces") a.clients.namespaces = positive(arg, value());
    else if (arg == "--seconds") a.clients.seconds = positive(arg, value());
    else if (arg == "--no-redis") a.clients.no_redis = true;
    else if (arg == "--sql") a.clients.sql_files.push_back(value());
    else if (arg == "--abandoned") a.clients.abandoned = positive(arg, value());
    else if (arg == "--rounds") a.clients.rounds = positive(arg, value());
    else if (arg == "--mode") {
      const std::string m = value();
      if (m != "disjoint" && m != "hot" && m != "both") throw BadArgs("--mode is disjoint, hot or both, not " + m);
      a.clients.modes = m == "both" ? std::vector<std::string>{"disjoint", "hot"} : std::vector<std::string>{m};
    } else throw BadArgs("unknown argument '" + arg + "'");
  }
  return a;
}

// One durable commit per "pair": the floor under a durable grant. (A
// transaction that writes no row, such as SELECT txid_current(), commits
// without waiting for the flush.)
std::function<void(const std::string&)> durable_commit(const pathlock::devtools::PostgresServer& pg) {
  pg.sql("CREATE TABLE bench_floor (n bigint NOT NULL); INSERT INTO bench_floor VALUES (0)");
  auto c = std::shared_ptr<PGconn>(PQconnectdb(pg.url().c_str()), PQfinish);
  if (PQstatus(c.get()) != CONNECTION_OK) throw std::runtime_error(PQerrorMessage(c.get()));
  return [c](const std::string&) {
    PGresult* r = PQexec(c.get(), "UPDATE bench_floor SET n = n + 1");
    const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    if (!ok) throw std::runtime_error("pg-durable-commit failed");
  };
}

void print_settings(const pathlock::devtools::PostgresServer& pg) {
  std::string out = pg.sql(
      "SELECT string_agg(name || '=' || setting, ' ' ORDER BY name) FROM pg_settings WHERE name IN ('fsync', "
      "'synchronous_commit', 'wal_sync_method', 'full_page_writes', 'commit_delay', 'wal_writer_delay', "
      "'shared_buffers', 'server_version')");
  while (!out.empty() && out.back() == '\n') out.pop_back();
  fmt::print("postgres: {}\nredis: no persistence; redis-fsync: appendonly yes, appendfsync always\n", out);
}

// Runs every subject at `depth` in alternating slices; prints its lines.
void run_depth(std::vector<Subject>& subjects, int depth, int pairs, int slice, long long& next) {
  for (Subject& s : subjects) s.micros.clear(), s.seconds = 0;
  for (int done = 0; done < pairs; done += slice)
    for (Subject& s : subjects) {
      const auto slice_start = SteadyClock::now();
      for (int i = 0; i < slice; ++i) {
        const auto t0 = SteadyClock::now();
        s.pair(path_at(depth, next++));
        s.micros.push_back(std::chrono::duration<double, std::micro>(SteadyClock::now() - t0).count());
      }
      s.seconds += std::chrono::duration<double>(SteadyClock::now() - slice_start).count();
    }
  const double redis = p50(subjects[1].micros);
  for (const Subject& s : subjects)
    fmt::print("{:<22} {:>5} {:>10.0f} {:>10.0f} {:>9.1f}x\n", s.name, depth, p50(s.micros),
               static_cast<double>(s.micros.size()) / s.seconds, p50(s.micros) / redis);
}

int single_client(const Args& args) {
  const int pairs = args.pairs, slice = args.slice;
  pathlock::devtools::PostgresServer pg(args.clients.pg_settings);
  pathlock::devtools::RedisServer redis, redis_fsync({"--appendonly", "yes", "--appendfsync", "always"});
  pathlock::PostgresOptions po;
  po.url = pg.url();
  pathlock::RedisOptions ro, rof;
  ro.url = redis.url();
  rof.url = redis_fsync.url();
  std::vector<Subject> subjects{
      {"pathlock-postgres", engine_pair(pathlock::make_postgres_engine(po)), {}, 0},
      {"pathlock-redis", engine_pair(pathlock::make_redis_engine(ro)), {}, 0},
      {"pathlock-redis-fsync", engine_pair(pathlock::make_redis_engine(rof)), {}, 0},
      {"per-level-postgres", [level = std::make_shared<PerLevel>(pg.url())](const std::string& p) { level->pair(p); },
       {}, 0},
      {"pg-durable-commit", durable_commit(pg), {}, 0}};
  print_settings(pg);
  fmt::print("{:<22} {:>5} {:>10} {:>10} {:>10}\n", "subject", "depth", "p50_us", "pairs/s", "vs redis");
  long long next = 0;
  for (const int depth : {3, 5, 8}) run_depth(subjects, depth, pairs, slice, next);
  return 0;
}

}  // namespace

int main(int argc, char** argv) try {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::cout << kUsage;
      return 0;
    }
  Args args;
  try {
    args = parse(argc, argv);
  } catch (const BadArgs& e) {
    std::cerr << "pathlock-pg-bench: " << e.what() << "\n" << kUsage;
    return 2;
  }
  return args.multi ? pathlock::bench::run_clients(args.clients) : single_client(args);
} catch (const std::exception& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
