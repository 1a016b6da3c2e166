// pathlock-pg-bench --clients: many clients at once on the PostgreSQL and
// the Redis backends, in one run (docs/benchmarks.md#postgresql-under-many-clients).
//
// A point is one mode, one client count and one backend: that many threads
// share one engine (one service instance; its pool as large as the client
// count) and do pairs (acquire, release) for `seconds`. Modes:
// - disjoint: client c works in its own folder /c<c>/d/f<i> of namespace
//   bench-<c mod namespaces>: no two requests conflict, so every wait is
//   the backend's own;
// - hot: every client uploads one of four files of one folder, /hot/f<0..3>
//   of one namespace, waiting fairly (wait 30 s): conflicts on every pair;
//   the min/max pairs per client shows whether waiting stays fair.
// The backends run point by point, alternating, so they share the weather;
// --rounds R runs the whole list R times over and pools each point's R
// slices (its p50, p99 and pairs/s over all of them), so that a gust of
// the machine's weather falls on every backend alike. The run ends with
// the goals (PASS or FAIL, with the figures) and the load average.
// --sql FILE (repeatable) loads SQL over the functions the engine installed
// (e.g. an older functions.sql: the same run measures both versions back to
// back). --abandoned N adds a line postgres-sweep: the same server, with N
// locks whose lease ended (in N namespaces nobody calls) written before
// each of its points, so every release's pathlock.sweep removes 64 of them
// while they last; the line says how many were swept.
#include "pg_bench/clients.hpp"

#include "pg_devtools/postgres_server.hpp"
#include "pg_devtools/server_process.hpp"
#include "redis_devtools/redis_server.hpp"

#include <pathlock/postgres.hpp>
#include <pathlock/redis.hpp>

#include <fmt/format.h>
#include <libpq-fe.h>


#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <random>
#include <stdexcept>
#include <thread>
#include <utility>

namespace pathlock::bench {
namespace {

using SteadyClock = std::chrono::steady_clock;

struct Point {
  double pairs_per_s = 0, p50_us = 0, p99_us = 0;
  long long min_client = 0, max_client = 0;
};

double quantile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
}

// What a point measured, over one slice or several (--rounds): every pair's
// time (µs), the pairs per client, the seconds.
struct Samples {
  std::vector<double> micros;
  std::vector<long long> per_client;
  double seconds = 0;

  void add(const Samples& other) {
    micros.insert(micros.end(), other.micros.begin(), other.micros.end());
    per_client.resize(std::max(per_client.size(), other.per_client.size()));
    for (std::size_t c = 0; c < other.per_client.size(); ++c) per_client[c] += other.per_client[c];
    seconds += other.seconds;
  }
  Point point() const {
    Point p;
    std::vector<double> all = micros;
    p.pairs_per_s = seconds > 0 ? static_cast<double>(all.size()) / seconds : 0;
    p.p50_us = quantile(all, 0.5);
    p.p99_us = quantile(all, 0.99);
    if (!per_client.empty()) {
      p.min_client = *std::min_element(per_client.begin(), per_client.end());
      p.max_client = *std::max_element(per_client.begin(), per_client.end());
    }
    return p;
  }
};

// The machine's load average (1, 5, 15 min), from /proc/loadavg.
std::string load_average() {
  std::string out = devtools::read_named_file("/proc/loadavg");
  const auto cut = out.find(' ', out.find(' ', out.find(' ') + 1) + 1);
  return cut == std::string::npos ? out : out.substr(0, cut);
}

// One client's loop: pairs until `end`; its pair times (µs) in `micros`.
void client(LockEngine& engine, const ClientsArgs& a, bool hot, int c, SteadyClock::time_point end,
            std::vector<double>& micros) {
  std::mt19937 random(static_cast<unsigned>(c) + 1);
  const std::string ns = hot ? "bench-hot" : fmt::format("bench-{}", c % a.namespaces);
  for (long long i = 0; SteadyClock::now() < end; ++i) {
    LockRequest r{ns, fmt::format("client{}", c), "upload",
                  {{"target", hot ? fmt::format("/hot/f{}", random() % 4) : fmt::format("/c{}/d/f{}", c, i)}}};
    if (hot) r.wait = Millis{30000};
    const auto t0 = SteadyClock::now();
    const AcquireResult got = engine.acquire(r);
    if (!got.granted() || !engine.release(ns, got.grant.id, got.grant.token))
      throw std::runtime_error("a pair failed");
    micros.push_back(std::chrono::duration<double, std::micro>(SteadyClock::now() - t0).count());
  }
}

Samples run_point(LockEngine& engine, const ClientsArgs& a, bool hot, int clients) {
  std::vector<std::vector<double>> micros(static_cast<std::size_t>(clients));
  std::vector<std::thread> threads;
  std::atomic<bool> failed{false};
  const auto start = SteadyClock::now();
  const auto end = start + std::chrono::milliseconds(static_cast<long long>(a.seconds * 1000));
  for (int c = 0; c < clients; ++c)
    threads.emplace_back([&, c] {
      try {
        client(engine, a, hot, c, end, micros[static_cast<std::size_t>(c)]);
      } catch (const std::exception& e) {
        fmt::print(stderr, "client {}: {}\n", c, e.what());
        failed = true;
      }
    });
  for (std::thread& t : threads) t.join();
  if (failed) throw std::runtime_error("a client failed");
  Samples s;
  s.seconds = std::chrono::duration<double>(SteadyClock::now() - start).count();
  for (const auto& m : micros) {
    s.micros.insert(s.micros.end(), m.begin(), m.end());
    s.per_client.push_back(static_cast<long long>(m.size()));
  }
  return s;
}

// What the engine's backends wait on while a point runs: pg_stat_activity
// sampled every 20 ms; per wait event, the mean number of backends in it.
class WaitSampler {
 public:
  explicit WaitSampler(const std::string& url) : c_(PQconnectdb(url.c_str())) {
    thread_ = std::thread([this] {
      while (!stop_) {
        PGresult* r = PQexec(c_, "SELECT coalesce(wait_event_type || ':' || wait_event, 'running') FROM "
                                 "pg_stat_activity WHERE application_name = 'pathlock' AND state = 'active'");
        for (int i = 0; i < PQntuples(r); ++i) ++counts_[PQgetvalue(r, i, 0)];
        PQclear(r);
        ++samples_;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
  }
  ~WaitSampler() {
    stop_ = true;
    thread_.join();
    PQfinish(c_);
  }
  WaitSampler(const WaitSampler&) = delete;
  WaitSampler& operator=(const WaitSampler&) = delete;
  std::string top() {
    stop_ = true;
    thread_.join();
    thread_ = std::thread([] {});
    std::vector<std::pair<long, std::string>> by;
    for (const auto& [event, n] : counts_) by.emplace_back(n, event);
    std::sort(by.rbegin(), by.rend());
    std::string out;
    for (std::size_t i = 0; i < by.size() && i < 4; ++i)
      out += fmt::format("{}{} {:.1f}", i ? ", " : "", by[i].second,
                         static_cast<double>(by[i].first) / static_cast<double>(std::max(1L, samples_)));
    return out;
  }

 private:
  PGconn* c_;
  std::atomic<bool> stop_{false};
  std::map<std::string, long> counts_;
  long samples_ = 0;
  std::thread thread_;
};

// N locks whose lease ended, one in each of N namespaces of their own
// (point `point`), as the engine writes them: what pathlock.sweep removes.
void abandon(const devtools::PostgresServer& pg, const LockEngine& engine, long long n, int point) {
  const std::string fp(engine.matrix().fingerprint);
  pg.sql(fmt::format(
      "WITH l AS (INSERT INTO pathlock.locks SELECT 'gone-{0}-' || i, 'x' || i, 't', 'o', '{1}', 'upload', "
      "'{{target}}', ARRAY['/a/f'], i, 1, 1000, pathlock.now_ms() - 1000, NULL FROM generate_series(1, {2}) i "
      "RETURNING ns, id) INSERT INTO pathlock.held SELECT ns, id, 0, pathlock.sk('/a/f'), "
      "pathlock.k(pathlock.sk('/a/f')), '{1}', 'target', '/a/f', 1 FROM l; "
      "INSERT INTO pathlock.namespaces (ns) SELECT 'gone-{0}-' || i FROM generate_series(1, {2}) i; ANALYZE pathlock.locks",
      point, fp, n));
}

long long ended_left(const devtools::PostgresServer& pg) {
  return std::stoll(pg.sql("SELECT count(*) FROM pathlock.locks WHERE ns LIKE 'gone-%'"));
}

int max_clients(const ClientsArgs& a) { return *std::max_element(a.clients.begin(), a.clients.end()); }

std::unique_ptr<LockEngine> engine_of(const std::string& backend, const std::string& url, const ClientsArgs& a) {
  const auto n = static_cast<std::size_t>(max_clients(a));
  if (backend == "postgres") {
    PostgresOptions o;
    o.url = url;
    o.pool_size = n;
    o.max_connections = std::max<std::size_t>(n, 64);
    o.command_timeout = Millis{10000};
    return make_postgres_engine(o);
  }
  RedisOptions o;
  o.url = url;
  o.pool_size = n;
  return make_redis_engine(o);
}

// The ratios per client count for one mode, from the table's points.
void print_ratios(const std::map<std::pair<std::string, int>, Point>& points, const ClientsArgs& a) {
  const auto at = [&](const std::string& b, int c) -> const Point* {
    const auto it = points.find({b, c});
    return it == points.end() ? nullptr : &it->second;
  };
  const Point* one = at("postgres", 1);
  for (const int c : a.clients) {
    const Point* pg = at("postgres", c);
    const Point* redis = at("redis", c);
    const Point* fsync = at("redis-fsync", c);
    if (!pg) continue;
    fmt::print("  {:>2} clients: postgres {:.2f}x of its 1-client pairs/s, {:.2f} of redis's and {:.2f} of "
               "redis-fsync's pairs/s, p99 {:.1f}x of its 1-client p50\n",
               c, one ? pg->pairs_per_s / one->pairs_per_s : 0, redis ? pg->pairs_per_s / redis->pairs_per_s : 0,
               fsync ? pg->pairs_per_s / fsync->pairs_per_s : 0, one ? pg->p99_us / one->p50_us : 0);
    if (const Point* sweep = at("postgres-sweep", c))
      fmt::print("  {:>2} clients: postgres-sweep (releases sweeping ended leases) {:.2f}x of postgres's pairs/s, "
                 "p50 {:.2f}x\n",
                 c, sweep->pairs_per_s / pg->pairs_per_s, sweep->p50_us / pg->p50_us);
  }
}

// The goals for PostgreSQL under many clients (issues 39 and 47), each
// PASS or FAIL with its figures, from the points of this run: at 16
// clients on disjoint paths, at least 4x the pairs/s of one client, at least
// a third of the pairs/s of an equally durable Redis (appendfsync always) at
// the same concurrency, a p99 within 10x the 1-client p50; on the hot
// folder, every client gets its turn (the fewest pairs a client did at
// least half the most).
void print_goals(const std::map<std::string, std::map<std::pair<std::string, int>, Point>>& by_mode) {
  constexpr int kMany = 16;
  const auto at = [&](const std::string& mode, const std::string& b, int c) -> const Point* {
    const auto m = by_mode.find(mode);
    if (m == by_mode.end()) return nullptr;
    const auto it = m->second.find({b, c});
    return it == m->second.end() ? nullptr : &it->second;
  };
  const auto verdict = [](bool ok) { return ok ? "PASS" : "FAIL"; };
  fmt::print("goals (issue 47), from this run:\n");
  const Point* one = at("disjoint", "postgres", 1);
  const Point* many = at("disjoint", "postgres", kMany);
  const Point* fsync = at("disjoint", "redis-fsync", kMany);
  if (one && many) {
    const double x = many->pairs_per_s / one->pairs_per_s;
    fmt::print("  {} postgres pairs/s at {} clients >= 4x one client's (disjoint): {:.0f} vs {:.0f} = {:.2f}x\n",
               verdict(x >= 4), kMany, many->pairs_per_s, one->pairs_per_s, x);
    const double p = many->p99_us / one->p50_us;
    fmt::print("  {} postgres p99 at {} clients <= 10x its 1-client p50 (disjoint): {:.0f} vs {:.0f} us = {:.1f}x\n",
               verdict(p <= 10), kMany, many->p99_us, one->p50_us, p);
  } else {
    fmt::print("  (no 1- and {}-client points on disjoint paths: --clients 1,{} --mode disjoint or both)\n", kMany,
               kMany);
  }
  if (many && fsync) {
    const double r = many->pairs_per_s / fsync->pairs_per_s;
    fmt::print("  {} postgres pairs/s at {} clients >= 1/3 of redis-fsync's (appendfsync always, disjoint): {:.0f} vs "
               "{:.0f} = {:.2f}\n",
               verdict(r >= 1.0 / 3), kMany, many->pairs_per_s, fsync->pairs_per_s, r);
  } else if (many) {
    fmt::print("  (no redis-fsync point at {} clients: run without --no-redis)\n", kMany);
  }
  if (const Point* hot = at("hot", "postgres", kMany)) {
    const double f = hot->max_client > 0 ? static_cast<double>(hot->min_client) / static_cast<double>(hot->max_client) : 0;
    fmt::print("  {} hot folder at {} clients, fair: the fewest pairs of a client >= half the most: {} vs {} = {:.2f}\n",
               verdict(f >= 0.5), kMany, hot->min_client, hot->max_client, f);
  }
}

void print_header() {
  fmt::print("{:<9} {:<14} {:>7} {:>10} {:>10} {:>10} {:>9} {:>9}\n", "mode", "backend", "clients", "pairs/s",
             "p50_us", "p99_us", "min/cl", "max/cl");
}

// Each mode's points, by backend and client count, over every round.
using Pooled = std::map<std::string, std::map<std::pair<std::string, int>, Samples>>;

// With --rounds: the table of each point's slices together; then the goals.
void print_pooled(const Pooled& pooled, const ClientsArgs& a) {
  std::map<std::string, std::map<std::pair<std::string, int>, Point>> by_mode;
  for (const auto& [mode, samples] : pooled)
    for (const auto& [key, s] : samples) by_mode[mode][key] = s.point();
  if (a.rounds > 1) {
    fmt::print("all {} rounds, each point's slices together:\n", a.rounds);
    print_header();
    for (const auto& [mode, points] : by_mode) {
      for (const auto& [key, p] : points)
        fmt::print("{:<9} {:<14} {:>7} {:>10.0f} {:>10.0f} {:>10.0f} {:>9} {:>9}\n", mode, key.first, key.second,
                   p.pairs_per_s, p.p50_us, p.p99_us, p.min_client, p.max_client);
      print_ratios(points, a);
    }
  }
  print_goals(by_mode);
}

}  // namespace

int run_clients(const ClientsArgs& a) {
  devtools::PostgresServer pg(a.pg_settings);
  devtools::RedisServer redis, redis_fsync({"--appendonly", "yes", "--appendfsync", "always"});
  std::vector<std::pair<std::string, std::unique_ptr<LockEngine>>> engines;
  engines.emplace_back("postgres", engine_of("postgres", pg.url(), a));
  if (a.abandoned > 0) engines.emplace_back("postgres-sweep", engine_of("postgres", pg.url(), a));
  for (const std::string& file : a.sql_files) pg.sql(devtools::read_named_file(file));
  std::string version = pg.sql("SELECT pathlock.functions_version()");
  version.erase(version.find_last_not_of('\n') + 1);  // every digit (version 10), not the first one
  fmt::print("postgres functions version {}\n", version);
  if (!a.no_redis) {
    engines.emplace_back("redis", engine_of("redis", redis.url(), a));
    engines.emplace_back("redis-fsync", engine_of("redis", redis_fsync.url(), a));
  }
  fmt::print("{} s per point; postgres: {}; redis: no persistence; redis-fsync: appendfsync always\n", a.seconds,
             a.pg_settings.empty() ? std::string("defaults (fsync, synchronous_commit on)")
                                   : fmt::format("{}", fmt::join(a.pg_settings, " ")));
  fmt::print("load average at the start: {}\n", load_average());
  int abandoned_points = 0;
  print_header();
  Pooled pooled;
  for (const std::string& mode : a.modes) {
    std::map<std::pair<std::string, int>, Point> points;
    for (int round = 1; round <= a.rounds; ++round)
      for (const int c : a.clients)
        for (auto& [name, engine] : engines) {
          const bool sweep = name == "postgres-sweep";
          if (sweep) abandon(pg, *engine, a.abandoned, ++abandoned_points);
          const long long ended = sweep ? ended_left(pg) : 0;
          const bool on_pg = name.starts_with("postgres");
          std::unique_ptr<WaitSampler> waits = on_pg ? std::make_unique<WaitSampler>(pg.url()) : nullptr;
          const Samples slice = run_point(*engine, a, mode == "hot", c);
          pooled[mode][{name, c}].add(slice);
          const Point p = slice.point();
          points[{name, c}] = p;
          const std::string swept = sweep ? fmt::format("  swept {} of {}", ended - ended_left(pg), ended) : "";
          fmt::print("{:<9} {:<14} {:>7} {:>10.0f} {:>10.0f} {:>10.0f} {:>9} {:>9}{}{}{}\n", mode, name, c,
                     p.pairs_per_s, p.p50_us, p.p99_us, p.min_client, p.max_client,
                     a.rounds > 1 ? fmt::format("  round {}", round) : "", waits ? "  waits: " + waits->top() : "",
                     swept);
          std::fflush(stdout);
        }
    if (a.rounds == 1) print_ratios(points, a);
  }
  print_pooled(pooled, a);
  fmt::print("load average at the end: {}\n", load_average());
  return 0;
}

}  // namespace pathlock::bench
