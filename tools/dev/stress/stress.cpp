// pathlock-stress: a multi-process stress run and its checker (issue 4).
//
//   pathlock-stress run   --backend memory|redis|postgres [--redis URL] [--postgres URL] --namespace NS
//                         [--threads N] [--ops N] [--duration MS] [--seed N]
//                         [--ttl MS] [--command-timeout MS] [--matrix FILE]
//                         [--max-backend-errors N] [--pause MS] [--abandon N] [--cancel N]
//                         [--stats FILE [--epoch NS] [--interval MS]] --log FILE
//   pathlock-stress check | starve | soak ...   (check.cpp, starve.cpp, soak.cpp; --help)
//
// `run` starts N threads; each repeatedly picks a random operation and random
// paths on a small tree with overlapping paths, acquires (sometimes waiting,
// sometimes not, fair or not), holds briefly (sometimes renewing), and
// releases; it stops after --ops attempts per thread or, with --duration,
// when that time is up (whichever comes first). Every hold it got is logged
// as one line (tab-separated):
//   hold <fence> <op> <role>=<path>[,<role>=<path>] <granted_ns> <released_ns> <pid>:<thread>
//        <sent_ns> <id> <holds>
//        <fingerprint>
// (the last field: the fingerprint of the matrix the run enforces; --matrix
// FILE compiles a matrix JSON at run time, as pathlock-matrixc does, instead
// of the shipped one). Times are CLOCK_MONOTONIC: sent_ns is read before acquire was called,
// granted_ns after it returned, released_ns before release was called and
// then lowered to the end of the lease the thread can vouch for (sent_ns +
// ttl - 2 ms, or the start of a successful renew + ttl - 2 ms): the server
// counts the lease in whole ms from a moment after the request was sent, so the logged interval lies
// inside the real holding interval even when a release is late or lost, and
// two logged intervals that overlap mean the two locks really were held at
// the same time.
//
// Backend errors (a lost connection, a restarted or stalled server) do not
// stop a run: the thread counts them, backs off (5 ms doubling to 250 ms,
// with jitter; reset by the next success) and goes on. An acquire that
// failed with a BackendError may still have been granted (its reply was
// lost; docs/operations.md "When a call fails"): it is logged as
//   maybe <op> <targets> <sent_ns> <failed_ns> <ttl_ms> <pid>:<thread> <fingerprint>
// meaning "possibly held from some time after sent_ns until its lease ends".
// Such a lock is never logged as a hold, so it can hide no violation and
// create no false one; the thread simply never uses it, and if the same
// thread asks for the same lock again, that lock refuses it like any other
// (only an id and token re-enter a lock) until its lease ends.
// A release that failed is retried until it answers or the lease is surely
// over (`false` after a failed attempt means the first one worked). A
// release or renew whose `false` arrives before the lease can have ended
// (so the server looked while the lock was surely live) and after no failed
// attempt is an anomaly: a lost lock. The exit status
// is 1 on an anomaly, on more than --max-backend-errors (default 0) backend
// errors, or when the log cannot be written.
//
// `check` (check.cpp) reads the logs and proves the history; `soak`
// (soak.cpp) runs worker processes for a long time under faults.
//
// Options are checked by one table per subcommand (tools/common/options.hpp):
// an unknown or repeated option, a malformed or out-of-range number or a
// stray word exits with status 2 before anything runs (docs/cli.md, "Exit
// status").
// `starve` (starve.cpp) measures the fairness rule.
#include <pathlock/engine.hpp>
#include <pathlock/factory.hpp>
#include <pathlock/path.hpp>

#include "common/options.hpp"
#include "soak_stats.hpp"
#include "stress.hpp"
#include <pathlock/matrix.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <stop_token>
#include <thread>
#include <unistd.h>

using namespace pathlock;

std::int64_t stress::monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// make_engine, retried for up to 10 s while the backend is unreachable (a
// fault-injection run may start while the server restarts).
std::unique_ptr<LockEngine> stress::connect_engine(const options::Parsed& opt, std::size_t pool_size,
                                                   const MatrixTable* matrix) {
  EngineOptions eo;
  eo.backend = parse_backend(opt.get("backend", "memory"));
  eo.matrix = matrix;
  if (opt.has("redis")) eo.redis.url = opt.get("redis");
  if (opt.has("postgres")) eo.postgres.url = opt.get("postgres");
  eo.redis.pool_size = pool_size;
  eo.postgres.pool_size = pool_size;
  if (opt.has("command-timeout"))
    eo.redis.command_timeout = eo.postgres.command_timeout = Millis{opt.number_or("command-timeout", 0)};
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (true) {
    try {
      return make_engine(eo);
    } catch (const BackendError&) {
      if (std::chrono::steady_clock::now() > give_up) throw;
      std::this_thread::sleep_for(Millis{100});
    }
  }
}

namespace {

// The servers count leases in whole milliseconds of their clock (a grant at
// t ends at floor_ms(t) + ttl): a lease may end up to 1 ms before sent + ttl.
// The end a thread vouches for is this much earlier.
constexpr std::int64_t kLeaseMargin = 2000000;

using stress::connect_engine;
using stress::monotonic_ns;

const std::vector<std::string> kTree = {"/p",       "/p/A",   "/p/A/C",     "/p/A/C/D", "/p/A/a.txt",
                                        "/p/A/CD",  "/p/B",   "/p/B/b.txt", "/p/B/{x}", "/q",
                                        "/q/x y",   "/q/é"};


// What one run counts; printed at the end.
struct RunCounts {
  std::atomic<long> attempts{0}, grants{0}, refusals{0}, invalid{0}, renews{0};
  std::atomic<long> backend_errors{0}, unknown_acquires{0}, unknown_releases{0}, unknown_renews{0};
  std::atomic<long> anomalies{0}, cancelled{0}, abandoned{0};
};

// Exponential back-off after backend errors, with jitter.
class Backoff {
 public:
  void failed(std::mt19937& rng) {
    delay_ms_ = delay_ms_ == 0 ? 5 : std::min(delay_ms_ * 2, 250L);
    std::this_thread::sleep_for(Millis{delay_ms_ / 2 + static_cast<long>(rng() % static_cast<unsigned>(delay_ms_))});
  }
  void succeeded() { delay_ms_ = 0; }

 private:
  long delay_ms_ = 0;
};

// A run's settings (the options of `run`) and what its threads share.
struct Run {
  Run(const options::Parsed& opt, LockEngine& e)
      : engine(e),
        m(e.matrix()),
        ns(opt.get("namespace")),
        fingerprint(m.fingerprint),
        ttl(opt.number_or("ttl", 10000)),
        ttl_ns(static_cast<std::int64_t>(ttl.count()) * 1000000),
        timed(opt.has("duration")),
        ops(static_cast<long>(opt.number_or("ops", timed ? -1 : 2000))),
        seed(static_cast<unsigned>(opt.number_or("seed", 1))),
        stop_at(timed ? monotonic_ns() + opt.number_or("duration", 0) * 1000000 : 0),
        pause_us(opt.number_or("pause", 0) * 1000),
        abandon_every(static_cast<std::size_t>(opt.number_or("abandon", 0))),
        cancel_every(static_cast<std::size_t>(opt.number_or("cancel", 0))),
        log(opt.get("log"), std::ios::trunc) {
    if (opt.has("stats"))
      stats = std::make_unique<stress::StatsWriter>(opt.get("stats"), opt.number_or("epoch", monotonic_ns()),
                                                    opt.number_or("interval", 10000) * 1000000);
  }
  // Does a thread make attempt i (counting from 0)?
  bool more(long i) const { return (ops < 0 || i < ops) && (!timed || monotonic_ns() < stop_at); }
  void anomaly(const std::string& what) {
    ++n.anomalies;
    std::lock_guard guard(out_mutex);
    std::cerr << "anomaly: " << what << "\n";
  }

  LockEngine& engine;
  const MatrixTable& m;
  const std::string ns, fingerprint;
  const Millis ttl;
  const std::int64_t ttl_ns;
  const bool timed;
  const long ops;  // attempts per thread, -1: no limit
  const unsigned seed;
  const std::int64_t stop_at;  // with --duration: when the threads stop
  const std::int64_t pause_us;                // --pause: at most this long between attempts
  const std::size_t abandon_every, cancel_every;  // --abandon N, --cancel N: one in N (0: never)
  std::mutex out_mutex;                       // the log and stderr
  std::ofstream log;
  std::unique_ptr<stress::StatsWriter> stats;  // with --stats: the log is written as it goes
  RunCounts n;
};

// One thread of a run: random requests on kTree, each hold it got logged
// (the file comment has the rules).
class StressThread {
 public:
  StressThread(Run& run, int id) : r_(run), id_(id), rng_(run.seed * 1000003u + static_cast<unsigned>(id)) {}

  void loop() {
    for (long i = 0; r_.more(i); ++i) {
      ++r_.n.attempts;
      attempt(random_request());
      if (r_.pause_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(pick(static_cast<std::size_t>(r_.pause_us))));
    }
    std::lock_guard guard(r_.out_mutex);
    r_.log << lines_;
  }

 private:
  std::size_t pick(std::size_t k) { return static_cast<std::size_t>(rng_() % k); }

  // A random operation on random paths, sometimes waiting, mostly fair.
  LockRequest random_request() {
    const OpInfo& info = r_.m.ops[pick(r_.m.op_count)];
    LockRequest req{r_.ns, fmt::format("{}:{}", getpid(), id_), std::string(info.name), {}, r_.ttl, Millis{0}};
    for (std::size_t i = 0; i < info.role_count; ++i)
      req.targets.push_back(Target{std::string(info.roles[i]), kTree[pick(kTree.size())]});
    if (pick(3) == 0) req.wait = Millis{static_cast<long>(pick(30))};
    req.fair = pick(4) != 0;
    return req;
  }

  // One acquire; a grant is held, logged and released (or, one in
  // --abandon, logged and left to its lease).
  void attempt(LockRequest req) {
    const bool cancel = r_.cancel_every > 0 && pick(r_.cancel_every) == 0;
    if (cancel) req.wait = Millis{500};
    std::string targets;
    for (const Target& t : req.targets)
      targets += fmt::format("{}{}={}", targets.empty() ? "" : ",", t.role, normalize_path(t.path));
    const std::int64_t sent = monotonic_ns();
    AcquireResult got;
    try {
      got = cancel ? acquire_and_cancel(req) : r_.engine.acquire(req);
      backoff_.succeeded();
    } catch (const InvalidRequest&) {
      ++r_.n.invalid;
      return;  // a random move into its own subtree
    } catch (const BackendError&) {
      ++r_.n.backend_errors;
      ++r_.n.unknown_acquires;
      record(stress::Outcome::backend_error, req, sent);
      // Paths hold no tabs (control characters are refused), so tabs separate fields.
      emit(fmt::format("maybe\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n", req.op, targets, sent, monotonic_ns(), r_.ttl.count(),
                       req.owner, r_.fingerprint));
      backoff_.failed(rng_);
      return;
    }
    record(got.granted() ? stress::Outcome::granted
           : got.cancelled() ? stress::Outcome::cancelled
                             : stress::Outcome::refused,
           req, sent);
    if (!got.granted()) {
      ++(got.cancelled() ? r_.n.cancelled : r_.n.refusals);
      return;
    }
    ++r_.n.grants;
    const std::int64_t from = monotonic_ns();
    const bool abandon = r_.abandon_every > 0 && pick(r_.abandon_every) == 0;
    // An abandoned lock is held at least until its lease ends (sent + ttl).
    const std::int64_t vouched = sent + r_.ttl_ns - kLeaseMargin;
    const std::int64_t lease_end = abandon ? vouched : hold(got.grant, vouched);
    const std::int64_t to = std::max(from, abandon ? lease_end : std::min(monotonic_ns(), lease_end));
    emit(fmt::format("hold\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n", got.grant.fence, req.op, targets, from, to,
                     req.owner, sent, got.grant.id, got.grant.holds, r_.fingerprint));
    if (!abandon) return release(got.grant, lease_end);
    ++r_.n.abandoned;
    if (r_.stats) r_.stats->abandoned();
  }

  // acquire(request, stop) with the stop triggered by another thread after
  // up to 30 ms (the request waits up to 500 ms): a waiting request leaves
  // the line, a grant that came first is kept.
  AcquireResult acquire_and_cancel(const LockRequest& req) {
    std::stop_source stop;
    const auto delay = std::chrono::microseconds(pick(30000));
    std::jthread canceller([&stop, delay](std::stop_token done) {
      std::mutex m;
      std::condition_variable_any cv;
      std::unique_lock lock(m);
      if (!cv.wait_for(lock, done, delay, [] { return false; }) && !done.stop_requested()) stop.request_stop();
    });
    return r_.engine.acquire(req, stop.get_token());
  }

  void record(stress::Outcome outcome, const LockRequest& req, std::int64_t sent) {
    if (r_.stats) r_.stats->acquired(outcome, req.wait.count() > 0, monotonic_ns() - sent);
  }

  // A log line: written at once with --stats (a killed worker keeps its
  // history), else kept until the end.
  void emit(const std::string& line) {
    if (!r_.stats) {
      lines_ += line;
      return;
    }
    std::lock_guard guard(r_.out_mutex);
    r_.log << line;
    r_.log.flush();
  }

  // Holds a grant briefly, sometimes renewing it; returns the end of the
  // lease the thread can vouch for (`lease_end`, or later after a renew).
  std::int64_t hold(const Grant& grant, std::int64_t lease_end) {
    if (pick(2)) std::this_thread::sleep_for(std::chrono::microseconds(pick(2000)));
    if (pick(8) != 0) return lease_end;
    ++r_.n.renews;
    const std::int64_t renew_sent = monotonic_ns();
    try {
      const bool renewed = r_.engine.renew(r_.ns, grant.id, grant.token);
      // The server answered before now: if now is inside the lease, the
      // lock was surely live when the server looked.
      if (renewed) lease_end = renew_sent + r_.ttl_ns - kLeaseMargin;
      else if (monotonic_ns() < lease_end)
        r_.anomaly(fmt::format("renew refused for live lock fence {}", grant.fence));
      backoff_.succeeded();
    } catch (const BackendError&) {
      ++r_.n.backend_errors;
      ++r_.n.unknown_renews;  // renewed or not: the old lease still holds
    }
    if (pick(2)) std::this_thread::sleep_for(std::chrono::microseconds(pick(1000)));
    return lease_end;
  }

  // Releases a grant, retrying after backend errors until it answers or
  // the lease is surely over.
  void release(const Grant& grant, std::int64_t lease_end) {
    bool failed_before = false;
    while (true) {
      try {
        const bool released = r_.engine.release(r_.ns, grant.id, grant.token);
        backoff_.succeeded();
        if (!released && !failed_before && monotonic_ns() < lease_end)  // answered inside the lease
          r_.anomaly(fmt::format("release refused for live lock fence {}", grant.fence));
        return;
      } catch (const BackendError&) {
        ++r_.n.backend_errors;
        failed_before = true;
        if (monotonic_ns() >= lease_end) {  // the lease is over: nothing left to release
          ++r_.n.unknown_releases;
          return;
        }
        backoff_.failed(rng_);
      }
    }
  }

  Run& r_;
  const int id_;
  std::mt19937 rng_;
  Backoff backoff_;
  std::string lines_;  // the log lines, written at the end
};

int run(const options::Parsed& opt) {
  const int threads = static_cast<int>(opt.number_or("threads", 4));
  const long max_backend_errors = static_cast<long>(opt.number_or("max-backend-errors", 0));
  // --matrix: compiled at run time, with the generator's parser and checks.
  std::optional<matrix::MatrixFile> compiled;
  if (opt.has("matrix")) compiled = matrix::MatrixFile::load(opt.get("matrix"));
  auto engine = connect_engine(opt, static_cast<std::size_t>(threads), compiled ? &compiled->table() : nullptr);
  Run r(opt, *engine);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back([&r, t] { StressThread(r, t).loop(); });
  for (auto& t : pool) t.join();
  r.log.flush();
  const RunCounts& n = r.n;
  std::cout << fmt::format(
      "pid {}: {} threads, {} attempts, {} grants, {} refusals, {} invalid, {} renews, {} backend errors "
      "({} acquires, {} releases, {} renews with unknown outcome), {} anomalies, {} cancelled, {} abandoned\n",
      getpid(), threads, n.attempts.load(), n.grants.load(), n.refusals.load(), n.invalid.load(), n.renews.load(),
      n.backend_errors.load(), n.unknown_acquires.load(), n.unknown_releases.load(), n.unknown_renews.load(),
      n.anomalies.load(), n.cancelled.load(), n.abandoned.load());
  if (n.backend_errors > max_backend_errors)
    std::cerr << fmt::format("{} backend errors, more than --max-backend-errors {}\n", n.backend_errors.load(),
                             max_backend_errors);
  return n.anomalies == 0 && n.backend_errors <= max_backend_errors && r.log ? 0 : 1;
}

// The option tables (tools/common/options.hpp): numbers are checked whole
// and in range, unknown and repeated options and stray words are refused.
const options::Check kBackend = [](const std::string& v) { parse_backend(v); };
constexpr long long kMaxMs = 7LL * 24 * 3600 * 1000;  // a week
const options::Options kRunOptions = options::Options{}
                                         .command("run")
                                         .required("backend", kBackend)
                                         .value("redis")
                                         .value("postgres")
                                         .required("namespace")
                                         .number("threads", 1, 1024)
                                         .number("ops", -1, 1000000000000)
                                         .number("duration", 1, kMaxMs)
                                         .number("seed", 0, 4294967295)
                                         .number("ttl", 1, kMaxMs)
                                         .number("command-timeout", 1, kMaxMs)
                                         .value("matrix")
                                         .number("max-backend-errors", 0, 1000000000000)
                                         .number("pause", 0, kMaxMs)
                                         .number("abandon", 0, 1000000000)
                                         .number("cancel", 0, 1000000000)
                                         .value("stats")
                                         .number("epoch", 0, 4611686018427387904LL)
                                         .number("interval", 1, kMaxMs)
                                         .required("log");
const options::Options kCheckOptions =
    options::Options{}.command("check").repeated("matrix").positional(1, options::Options::kMany);
}  // namespace

int main(int argc, char** argv) {
  const std::string usage =
      "usage: pathlock-stress run --backend memory|redis|postgres [--redis URL] [--postgres URL] --namespace NS\n"
      "                           [--threads N] [--ops N]\n"
      "                           [--duration MS] [--seed N] [--ttl MS] [--command-timeout MS]\n"
      "                           [--matrix FILE] [--max-backend-errors N] --log FILE\n"
      "                           [--pause MS] [--abandon N] [--cancel N] [--stats FILE [--epoch NS] [--interval MS]]\n"
      "       pathlock-stress check [--matrix FILE]... FILE...\n"
      "       pathlock-stress starve --backend memory|redis|postgres [--redis URL] [--postgres URL] [--creators N]\n"
      "                              [--hold MS] [--run MS]\n"
      "       pathlock-stress soak --backend redis|postgres [--redis URL] [--postgres URL] --namespace NS --dir DIR\n"
      "                            --duration MS [--interval MS] [--workers N] [--threads N] [--kill-every MS]\n"
      "                            [--ttl MS] [--pause MS] [--abandon N] [--cancel N] [--seed N] [--report FILE]\n"
      "  run: threads of random locks on a small tree, each hold logged; --pause sleeps up to MS between\n"
      "       attempts, --abandon N leaves one grant in N to its lease, --cancel N stops one acquire in N\n"
      "       (waiting up to 500 ms) from another thread; --stats writes the log as it goes and one line of\n"
      "       counts and acquire latencies per --interval of the clock started at --epoch (CLOCK_MONOTONIC ns)\n"
      "  check: proves from the logs that no two conflicting locks were held at once, fences never went back\n"
      "  starve: how long a delete_folder waits behind overlapping creates, fair and not\n"
      "  soak: --workers run processes for --duration; every --kill-every one is killed (SIGKILL) and a new\n"
      "        one started; prints per --interval: acquires, grants, waits, cancelled, abandoned, kills, p99\n"
      "        acquire latency, the server's memory (Redis used_memory, or the PostgreSQL tables' size) and\n"
      "        the workers' RSS; then checks every log; exit 1 on a violation or a worker anomaly\n"
      "        (docs/benchmarks.md, \"Soak\")\n"
      "Exit status: 0 done (no violation, no anomaly), 1 failed or found a problem, 2 bad usage.\n";
  const std::string cmd = argc < 2 ? "" : argv[1];
  if (cmd == "--help" || cmd == "help") {
    std::cout << usage;
    return options::kExitOk;
  }
  try {
    if (cmd == "soak") return stress::soak(stress::kSoakOptions.parse(argc, argv, 2));
    if (cmd == "check") return stress::check(kCheckOptions.parse(argc, argv, 2));
    if (cmd == "run") return run(kRunOptions.parse(argc, argv, 2));
    if (cmd == "starve") return stress::starve(stress::kStarveOptions.parse(argc, argv, 2));
    std::cerr << usage;
    return options::kExitUsage;
  } catch (const options::UsageError& e) {
    std::cerr << "error: " << e.what() << "\n" << usage;
    return options::kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return options::kExitFailure;
  }
}
