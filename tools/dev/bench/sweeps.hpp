// The sweeps of pathlock-bench: what is measured, in which order, on which
// worlds. Everything it measures goes into a Results (results.hpp) and, as
// it happens, to a LiveLog (console + CSV, report.hpp); it writes no report.
//
// Not the full cross product (it would not fit in ~15 minutes on two
// cores), but one-dimensional sweeps around one reference point (10k held,
// depth 5, 1 client), each over every subject:
//   held     0, 1k, 10k, 100k, 1M locks held   (1 client, depth 5): pairs;
//            pathlock-memory's and pathlock-redis's points with locks held are
//            measured in slices alternating with an empty namespace of the
//            same engine (Point::zero_held)
//   refused  the same held counts but 0         (1 client, depth 5): refused acquires
//   clients  1, 8, 32, 64 client threads       (10k held, depth 5)
//   depth    2, 3, 5, 10 path components       (10k held, 1 client)
//   scale    the embedded backend, 1 thread in one namespace vs 2 threads in two
//   topology pathlock-redis, 32 clients spread over 1, 8, 32 namespaces (1k
//            held each), on the server above (1 master) and on a local
//            cluster of 3 masters + 3 replicas (tools/dev/redis_devtools), when
//            this build has the launcher; CPU = the masters' sum
//   tls      pathlock-redis against itself over TLS (rediss:// to the same
//            server's TLS port, same namespace) at the reference point, in
//            alternating slices (sweep "alternating"): pair latency and Redis
//            CPU per pair of TLS against plain TCP; only on the bench's own
//            server (its certificates are made with openssl at start)
//   alternating  the goals' two-subject ratios, each pair of subjects measured
//            in alternating slices on the one server (sweep "alternating",
//            At::versus): pathlock-redis and bare at the reference point and
//            with the goal's clients, pathlock-redis and per-level at every
//            depth >= 3; run right after the points of the sweep they belong to
// Every world is filled step by step (1k, then 9k more, ...), so each fill
// is recorded with its time and Redis memory growth. Redis CPU is read
// (INFO cpu) before and after each point: CPU per step = growth / steps.
// The scan baseline stops growing once one of its requests took more than
// 1 s, or when its last p50 scaled linearly to the next count exceeds 1 s.
//
// Redis: without --redis, a private redis-server is started on a free
// loopback port and stopped at the end, on errors and on Ctrl-C (RAII). With
// --redis, that server is used and this run's keys are deleted at the end.
// A subject that cannot run (no server, a backend that fails to start) is
// reported as "skipped: <reason>" and the others still run.
//
// Adding a sweep (topology_sweep() is the model):
//   1. a method here, called from run(), that records points whose At
//      (results.hpp) says what varies (a new field there if needed): it
//      makes the subjects it needs (make_series shows how; a Series names
//      the server whose INFO it reads), fills its worlds (fill()), and
//      hands measure_point() the workers of all of them plus a connection
//      to each server whose INFO cpu growths are summed;
//   2. a section in report.cpp (kSections), a plot in plots.cpp if useful,
//      a goal in goals.cpp if there is one;
//   3. the sweep's line in docs/benchmarks.md and tools/dev/bench/README.md.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "results.hpp"
#include "subject.hpp"
#include "util.hpp"

namespace pathlock::bench {

class LiveLog;

struct Options {
  bool quick = false;
  std::size_t max_held = 0;  // 0: the plan's sizes
  std::string redis_url;     // empty: start our own server
  std::string out_dir;
  std::string update_docs;  // empty: do not touch docs
  std::vector<std::string> only;  // non-empty: measure only these subjects (the others are skipped)
};

// The subjects' names, in run order (what --only accepts).
const std::vector<std::string>& subject_names();

class Sweeps {
 public:
  // `results` and `log` must outlive this object.
  Sweeps(const Options& options, Results& results, LiveLog& log);
  ~Sweeps();  // deletes this run's keys on an external server
  Sweeps(const Sweeps&) = delete;
  Sweeps& operator=(const Sweeps&) = delete;

  // Every sweep, in order. Throws Interrupted on Ctrl-C; other failures
  // mark a subject skipped and the run goes on.
  void run();

 private:
  struct Series {
    std::string name;
    std::unique_ptr<Subject> subject;
    std::string skip;                         // non-empty: why it no longer runs
    std::map<std::string, std::size_t> held;  // world tag -> held locks
    RedisConnection* server = nullptr;        // the one server whose memory and CPU it uses, if any
    bool zero_held = false;                   // held sweep: pairs measured alternating with 0 held (Point)
  };

  bool selected(const std::string& name) const;  // --only names it, or there is no --only
  void start_redis();
  void make_series();
  bool fill(Series& s, const World& w, std::size_t target);
  // Fills world w to at.held, then measures at.clients workers of at.task.
  const Point& point(Series& s, const At& at, const World& w, const std::string& forced_skip = {});
  // Measures the workers make() returns and records the point; Redis CPU
  // per step from the summed INFO cpu growth of `servers` (none: not read).
  using MakeWorkers = std::function<std::vector<std::unique_ptr<Worker>>()>;
  const Point& measure_point(Series& s, const At& at, const MakeWorkers& make,
                             const std::vector<RedisConnection*>& servers);
  // Measures world w of s (filled to at.held) in windows alternating with an
  // empty world of s (w.tag + "-empty") and records the point with both.
  const Point& zero_held_point(Series& s, const At& at, const World& w);
  // Records the point of s at `at` that `run` measures; when it fails, s is
  // skipped from then on and the point records why (Interrupted goes on).
  const Point& run_point(Series& s, const At& at, const std::function<void(Point&)>& run);
  // Measures series a and b in world w (each filled to at.held) in
  // alternating windows on their one server and records two points of sweep
  // "alternating" (a versus b, b versus a); skipped points when either is
  // skipped. at.sweep, at.series and at.versus are set here.
  void alternating_point(const std::string& a, const std::string& b, const At& at, const World& w);
  // Reads the INFO cpu of s's server; empty when s is not in Redis.
  CpuSeconds cpu_reader(const Series& s) const;
  // Two groups of workers (from make_groups) measured in alternating
  // slices into first and second, Redis CPU read as `cpu_of` has it. Returns
  // "" or, for an error other than an interrupt, why the points are skipped.
  using Groups = std::vector<std::vector<std::unique_ptr<Worker>>>;
  std::string alternate_pair(const Series& cpu_of, Point& first, Point& second,
                             const std::function<Groups()>& make_groups);
  Series* series(const std::string& name);  // nullptr when there is none
  void record(const Point& p);
  std::string scan_limit(const Series& s, Task task, std::size_t held);

  void held_sweep();
  // pathlock-redis versus pathlock-redis-tls in world w at at.held (sweep "tls" above).
  void tls_point(const World& w, std::size_t held);
  void clients_sweep(const World& w);
  void depth_sweep();
  void scale_sweep();
  void topology_sweep();
  // Measures one topology point of series s: clients spread over worlds t0..t(n-1) of `prefix`.
  void topology_point(Series& s, const At& at, const std::string& prefix, const std::vector<RedisConnection*>& cpu);

  Options opt_;
  Results& results_;
  LiveLog& log_;
  std::unique_ptr<TlsCertificates> certs_;  // our own server's TLS files (null: no TLS)
  std::string tls_skip_;                    // why there is no TLS point
  std::unique_ptr<RedisServer> server_;  // declared before the connections that use it
  std::string redis_url_, redis_skip_;
  std::unique_ptr<RedisConnection> info_;  // INFO readings and cleanup
  std::vector<Series> series_;
};

}  // namespace pathlock::bench
