// pathlock-stress: a multi-process stress run and its checker (issue 4).
//
//   pathlock-stress run   --backend memory|redis|postgres [--redis URL] [--postgres URL] --namespace NS
//                         [--threads N] [--ops N] [--duration MS] [--seed N]
//                         [--ttl MS] [--command-timeout MS] [--matrix FILE]
//                         [--max-backend-errors N] --log FILE
//   pathlock-stress check [--matrix FILE]... FILE...
//   pathlock-stress starve --backend memory|redis [--redis URL] [--creators N]
//                          [--hold MS] [--run MS]
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
// ttl, or the start of a successful renew + ttl): the server counts the lease
// from a moment after the request was sent, so the logged interval lies
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
// `check` reads every log and reports violations of two rules:
// - Exclusion: it sweeps the holds in time order and, for every pair of
//   overlapping holds, asks the matrix whether the earlier grant (smaller
//   fence) refuses the later one on any overlapping pair of targets. Each
//   hold names its matrix by fingerprint: the shipped one or one given with
//   --matrix FILE (several runs with different matrices may share a
//   namespace during a rolling deploy, docs/operations.md). A pair of holds
//   of one matrix is judged by that matrix; a pair of holds of two different
//   matrices is a violation when any of their targets overlap (same path,
//   ancestor or descendant; this covers either matrix refusing it): the
//   rule the Redis layout enforces across matrices.
// - Fencing (lines with sent_ns, id and holds): one fence names one lock,
//   and fences strictly increase in grant order: if hold A had its answer
//   before hold B's request was sent and B is a new lock (holds 1), then
//   fence A < fence B. This holds across server restarts only if the
//   server kept every acknowledged write.
// All logs given to one check must come from one namespace. It prints the
// number of holds, possible holds, processes and violations, and exits 1 if
// there is any violation, or if a log cannot be read or has a malformed line
// (the run is no evidence then either). CLOCK_MONOTONIC is one clock for every process on
// a machine, so logs of several processes compare directly.
//
// Options are checked by one table per subcommand (tools/common/options.hpp):
// an unknown or repeated option, a malformed or out-of-range number or a
// stray word exits with status 2 before anything runs (docs/cli.md, "Exit
// status").
//
// `starve` measures the fairness rule: N threads keep creating in /p/A
// (each create holds --hold ms, and they overlap, so some create is always
// held) while one delete_folder /p/A waits. It reports how long the delete
// waited when the creates are fair (they queue behind it) and when they opt
// out (fair=false), each in its own namespace, in one run.
#include <pathlock/engine.hpp>
#include <pathlock/factory.hpp>
#include <pathlock/path.hpp>

#include "common/options.hpp"
#include <pathlock/matrix.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <deque>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <thread>
#include <unistd.h>

using namespace pathlock;

namespace {

std::int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

const std::vector<std::string> kTree = {"/p",       "/p/A",   "/p/A/C",     "/p/A/C/D", "/p/A/a.txt",
                                        "/p/A/CD",  "/p/B",   "/p/B/b.txt", "/p/B/{x}", "/q",
                                        "/q/x y",   "/q/é"};

struct Hold {
  const MatrixTable* matrix = nullptr;
  std::uint64_t fence = 0;
  std::string op;
  std::vector<Target> targets;
  std::int64_t from = 0, to = 0;
  std::string who;
  // Present on lines written by `run` (not on hand-written 7-field lines).
  bool has_grant_details = false;
  std::int64_t sent = 0;
  std::string id;
  std::uint32_t holds = 0;
};

// make_engine, retried for up to 10 s while the backend is unreachable (a
// fault-injection run may start while the server restarts).
std::unique_ptr<LockEngine> connect_engine(const options::Parsed& opt, std::size_t pool_size,
                                           const MatrixTable* matrix = nullptr) {
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

// What one run counts; printed at the end.
struct RunCounts {
  std::atomic<long> attempts{0}, grants{0}, refusals{0}, invalid{0}, renews{0};
  std::atomic<long> backend_errors{0}, unknown_acquires{0}, unknown_releases{0}, unknown_renews{0};
  std::atomic<long> anomalies{0};
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
        log(opt.get("log"), std::ios::trunc) {}
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
  std::mutex out_mutex;        // the log and stderr
  std::ofstream log;
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

  // One acquire; a grant is held, logged and released.
  void attempt(const LockRequest& req) {
    std::string targets;
    for (const Target& t : req.targets)
      targets += fmt::format("{}{}={}", targets.empty() ? "" : ",", t.role, normalize_path(t.path));
    const std::int64_t sent = monotonic_ns();
    AcquireResult got;
    try {
      got = r_.engine.acquire(req);
      backoff_.succeeded();
    } catch (const InvalidRequest&) {
      ++r_.n.invalid;
      return;  // a random move into its own subtree
    } catch (const BackendError&) {
      ++r_.n.backend_errors;
      ++r_.n.unknown_acquires;
      // Paths hold no tabs (control characters are refused), so tabs separate fields.
      lines_ += fmt::format("maybe\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n", req.op, targets, sent, monotonic_ns(),
                            r_.ttl.count(), req.owner, r_.fingerprint);
      backoff_.failed(rng_);
      return;
    }
    if (!got.granted()) {
      ++r_.n.refusals;
      return;
    }
    ++r_.n.grants;
    const std::int64_t from = monotonic_ns();
    const std::int64_t lease_end = hold(got.grant, sent + r_.ttl_ns);  // the server's lease ends no earlier
    const std::int64_t to = std::max(from, std::min(monotonic_ns(), lease_end));
    lines_ += fmt::format("hold\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n", got.grant.fence, req.op, targets, from, to,
                          req.owner, sent, got.grant.id, got.grant.holds, r_.fingerprint);
    release(got.grant, lease_end);
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
      if (renewed) lease_end = renew_sent + r_.ttl_ns;
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
      "({} acquires, {} releases, {} renews with unknown outcome), {} anomalies\n",
      getpid(), threads, n.attempts.load(), n.grants.load(), n.refusals.load(), n.invalid.load(), n.renews.load(),
      n.backend_errors.load(), n.unknown_acquires.load(), n.unknown_releases.load(), n.unknown_renews.load(),
      n.anomalies.load());
  if (n.backend_errors > max_backend_errors)
    std::cerr << fmt::format("{} backend errors, more than --max-backend-errors {}\n", n.backend_errors.load(),
                             max_backend_errors);
  return n.anomalies == 0 && n.backend_errors <= max_backend_errors && r.log ? 0 : 1;
}

// One starvation round; returns the delete's wait in ms (or -1 if it never got in).
long starve_round(LockEngine& engine, const std::string& ns, int creators, Millis hold, Millis run_for,
                  bool creators_fair) {
  std::atomic<bool> stop{false};
  auto creator = [&](int id) {
    while (!stop) {
      LockRequest req{ns, fmt::format("creator{}", id), "create", {{"target", "/p/A"}}, Millis{30000}, Millis{2000}};
      req.fair = creators_fair;
      const AcquireResult g = engine.acquire(req);
      if (!g.granted()) continue;
      std::this_thread::sleep_for(hold);
      engine.release(ns, g.grant.id, g.grant.token);
    }
  };
  std::vector<std::thread> pool;
  for (int i = 0; i < creators; ++i) {
    pool.emplace_back(creator, i);
    std::this_thread::sleep_for(hold / creators);  // staggered: a create is always held
  }
  std::this_thread::sleep_for(Millis{200});
  const auto start = std::chrono::steady_clock::now();
  const AcquireResult d =
      engine.acquire(LockRequest{ns, "deleter", "delete_folder", {{"target", "/p/A"}}, Millis{30000}, run_for});
  const long waited = std::chrono::duration_cast<Millis>(std::chrono::steady_clock::now() - start).count();
  if (d.granted()) engine.release(ns, d.grant.id, d.grant.token);
  stop = true;
  for (auto& t : pool) t.join();
  return d.granted() ? waited : -1;
}

int starve(const options::Parsed& opt) {
  const int creators = static_cast<int>(opt.number_or("creators", 3));
  const Millis hold{opt.number_or("hold", 50)};
  const Millis run_for{opt.number_or("run", 3000)};
  auto engine = connect_engine(opt, static_cast<std::size_t>(creators + 1));
  const std::string base = fmt::format("starve-{}", getpid());
  const long fair = starve_round(*engine, base + "-fair", creators, hold, run_for, true);
  const long unfair = starve_round(*engine, base + "-unfair", creators, hold, run_for, false);
  auto show = [&](long ms) { return ms < 0 ? fmt::format("not granted within {} ms", run_for.count()) : fmt::format("{} ms", ms); };
  std::cout << fmt::format("backend {}: {} creators holding {} ms each, overlapping\n", opt.get("backend", "memory"), creators,
                           hold.count())
            << fmt::format("  delete_folder wait, creates fair (default):  {}\n", show(fair))
            << fmt::format("  delete_folder wait, creates fair=false:      {}\n", show(unfair));
  return 0;
}

// The matrices a check knows, by fingerprint; the shipped one first.
using Matrices = std::map<std::string, const MatrixTable*>;

// The matrix of a log line whose fingerprint field is `fp` ("" on lines of
// older logs: the shipped matrix); nullptr when the check was not given it.
const MatrixTable* matrix_of(const Matrices& known, const std::string& fp) {
  if (fp.empty()) return &default_matrix();
  const auto it = known.find(fp);
  return it == known.end() ? nullptr : it->second;
}

// Parses a `hold` line; false if it is malformed.
bool parse_hold(const std::vector<std::string>& f, const Matrices& known, Hold& h,
                std::vector<std::pair<int, std::string>>& codes) {
  if ((f.size() != 7 && f.size() != 10 && f.size() != 11) || f[0] != "hold") return false;
  h.matrix = matrix_of(known, f.size() == 11 ? f[10] : "");
  if (!h.matrix) throw std::runtime_error("a hold of matrix " + f[10] + ", which no --matrix FILE gives");
  const MatrixTable& m = *h.matrix;
  h.fence = std::stoull(f[1]);
  h.op = f[2];
  h.from = std::stoll(f[4]);
  h.to = std::stoll(f[5]);
  h.who = f[6];
  if (f.size() >= 10) {
    h.has_grant_details = true;
    h.sent = std::stoll(f[7]);
    h.id = f[8];
    h.holds = static_cast<std::uint32_t>(std::stoul(f[9]));
    if (h.id.empty() || h.holds == 0 || h.sent > h.from) return false;
  }
  const int op = m.op_index(h.op);
  if (op < 0 || h.to < h.from) return false;
  codes.clear();
  std::stringstream ts(f[3]);
  for (std::string t; std::getline(ts, t, ',');) {
    const auto eq = t.find('=');
    const int code = m.code_of(op, t.substr(0, eq));
    if (eq == std::string::npos || code < 0) return false;
    codes.emplace_back(code, t.substr(eq + 1));
  }
  return true;
}

struct Item {
  Hold hold;
  std::vector<std::pair<int, std::string>> codes;
};

// The fencing rule (file comment); prints the first few violations and
// returns how many it found.
long check_fences(const std::vector<Item>& items) {
  long violations = 0;
  auto report = [&](const std::string& what) {
    if (++violations <= 10) std::cout << "FENCE VIOLATION: " << what << "\n";
  };
  std::vector<const Hold*> detailed;
  for (const Item& it : items)
    if (it.hold.has_grant_details) detailed.push_back(&it.hold);
  // One fence names one lock, and one lock has one fence.
  std::map<std::uint64_t, const Hold*> by_fence;
  std::map<std::string, const Hold*> by_id;
  for (const Hold* h : detailed) {
    const auto [f, fresh_fence] = by_fence.emplace(h->fence, h);
    if (!fresh_fence && f->second->id != h->id)
      report(fmt::format("fence {} was given to lock {} ({}) and to lock {} ({})", h->fence, f->second->id,
                         f->second->who, h->id, h->who));
    const auto [i, fresh_id] = by_id.emplace(h->id, h);
    if (!fresh_id && i->second->fence != h->fence)
      report(fmt::format("lock {} had fence {} and fence {}", h->id, i->second->fence, h->fence));
  }
  // Grant order: walk the new locks by the time their request was sent,
  // keeping the highest fence among holds answered before that time.
  std::vector<const Hold*> by_answer = detailed, fresh;
  for (const Hold* h : detailed)
    if (h->holds == 1) fresh.push_back(h);
  std::sort(by_answer.begin(), by_answer.end(), [](const Hold* a, const Hold* b) { return a->from < b->from; });
  std::sort(fresh.begin(), fresh.end(), [](const Hold* a, const Hold* b) { return a->sent < b->sent; });
  const Hold* highest = nullptr;
  std::size_t answered = 0;
  for (const Hold* b : fresh) {
    for (; answered < by_answer.size() && by_answer[answered]->from < b->sent; ++answered)
      if (!highest || by_answer[answered]->fence > highest->fence) highest = by_answer[answered];
    if (highest && highest->fence >= b->fence)
      report(fmt::format("new lock {} ({}) got fence {}, but lock {} ({}) had fence {} before it was asked for",
                         b->id, b->who, b->fence, highest->id, highest->who, highest->fence));
  }
  return violations;
}

// What a check read from its logs.
struct LogLines {
  std::vector<Item> items;  // the holds
  long maybe = 0;           // the possible holds
  std::map<std::string, int> processes;
};

// Takes in one line of a log; false if it is malformed. Throws when it
// names a matrix the check was not given.
bool take_line(const std::string& line, const Matrices& known, LogLines& out) {
  std::vector<std::string> f;
  std::stringstream s(line);
  for (std::string field; std::getline(s, field, '\t');) f.push_back(field);
  try {
    if ((f.size() == 7 || f.size() == 8) && f[0] == "maybe") {  // possibly held; see the file comment
      const MatrixTable* m = matrix_of(known, f.size() == 8 ? f[7] : "");
      if (!m) throw std::runtime_error("a line of matrix " + f[7] + ", which no --matrix FILE gives");
      const bool ok = m->op_index(f[1]) >= 0 && std::stoll(f[3]) <= std::stoll(f[4]) && std::stol(f[5]) > 0;
      ++out.maybe;
      out.processes[f[6].substr(0, f[6].find(':'))]++;
      return ok;
    }
    Item it;
    if (!parse_hold(f, known, it.hold, it.codes)) return false;
    out.processes[it.hold.who.substr(0, it.hold.who.find(':'))]++;
    out.items.push_back(std::move(it));
    return true;
  } catch (const std::invalid_argument&) {  // a number that does not parse
    return false;
  } catch (const std::out_of_range&) {
    return false;
  }
}

// Reads every log into `out`; false (after saying why) when one cannot be
// read or has a malformed line.
bool read_logs(const std::vector<std::string>& files, const Matrices& known, LogLines& out) {
  for (const std::string& file : files) {
    std::ifstream in(file);
    if (!in) {
      std::cerr << "error: cannot read " << file << "\n";
      return false;
    }
    for (std::string line; std::getline(in, line);)
      if (!take_line(line, known, out)) {
        std::cerr << "error: " << file << ": bad line: " << line << "\n";
        return false;
      }
  }
  return true;
}

// Does `earlier`, while held, refuse `later`? Holds of one matrix: when
// that matrix refuses an overlapping pair of their targets. Holds of two
// matrices: when any of their targets overlap (which covers either matrix
// refusing).
bool refuses(const Item& earlier, const Item& later) {
  const MatrixTable* m = earlier.hold.matrix;
  const bool one_matrix = m == later.hold.matrix;
  for (const auto& [hc, hp] : earlier.codes)
    for (const auto& [rc, rp] : later.codes) {
      if (!paths_overlap(hp, rp)) continue;
      if (!one_matrix) return true;
      const Relation rel = hp == rp ? Relation::same
                           : path_within(rp, hp) ? Relation::held_ancestor
                                                 : Relation::held_descendant;
      if (m->refuses(rel, hc, rc)) return true;
    }
  return false;
}

// The exclusion rule (file comment) over holds sorted by grant time;
// prints the first few violations and returns how many it found.
long check_exclusion(const std::vector<Item>& items, long& overlapping_pairs) {
  long violations = 0;
  std::vector<const Item*> active;  // holds whose interval may still overlap
  for (const Item& it : items) {
    active.erase(std::remove_if(active.begin(), active.end(), [&](const Item* a) { return a->hold.to <= it.hold.from; }),
                 active.end());
    for (const Item* a : active) {
      ++overlapping_pairs;
      const bool a_first = a->hold.fence < it.hold.fence;
      if (a_first ? refuses(*a, it) : refuses(it, *a)) {
        ++violations;
        if (violations <= 10)
          std::cout << fmt::format("VIOLATION: fence {} {} ({}) and fence {} {} ({}) held at once\n", a->hold.fence,
                                   a->hold.op, a->hold.who, it.hold.fence, it.hold.op, it.hold.who);
      }
    }
    active.push_back(&it);
  }
  return violations;
}

int check(const options::Parsed& opt) {
  std::deque<matrix::MatrixFile> compiled;
  Matrices known{{std::string(default_matrix().fingerprint), &default_matrix()}};
  for (const std::string& file : opt.all("matrix")) {
    compiled.push_back(matrix::MatrixFile::load(file));
    known[std::string(compiled.back().table().fingerprint)] = &compiled.back().table();
  }
  LogLines logs;
  if (!read_logs(opt.positional, known, logs)) return options::kExitFailure;
  std::vector<Item>& items = logs.items;
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.hold.from < b.hold.from; });
  long overlapping_pairs = 0;
  const long violations = check_exclusion(items, overlapping_pairs);
  const long fence_violations = check_fences(items);
  std::cout << fmt::format(
      "{} holds and {} possible holds (acquires with unknown outcome) from {} processes, {} overlapping pairs "
      "checked, {} violations, {} fence violations\n",
      items.size(), logs.maybe, logs.processes.size(), overlapping_pairs, violations, fence_violations);
  return violations == 0 && fence_violations == 0 ? options::kExitOk : options::kExitFailure;
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
                                         .required("log");
const options::Options kCheckOptions =
    options::Options{}.command("check").repeated("matrix").positional(1, options::Options::kMany);
const options::Options kStarveOptions = options::Options{}
                                            .command("starve")
                                            .value("backend", kBackend)
                                            .value("redis")
                                            .value("postgres")
                                            .number("creators", 1, 1024)
                                            .number("hold", 1, kMaxMs)
                                            .number("run", 1, kMaxMs);

}  // namespace

int main(int argc, char** argv) {
  const std::string usage =
      "usage: pathlock-stress run --backend memory|redis|postgres [--redis URL] [--postgres URL] --namespace NS\n"
      "                           [--threads N] [--ops N]\n"
      "                           [--duration MS] [--seed N] [--ttl MS] [--command-timeout MS]\n"
      "                           [--matrix FILE] [--max-backend-errors N] --log FILE\n"
      "       pathlock-stress check [--matrix FILE]... FILE...\n"
      "       pathlock-stress starve --backend memory|redis|postgres [--redis URL] [--postgres URL] [--creators N]\n"
      "                              [--hold MS] [--run MS]\n"
      "Exit status: 0 done (no violation, no anomaly), 1 failed or found a problem, 2 bad usage.\n";
  const std::string cmd = argc < 2 ? "" : argv[1];
  try {
    if (cmd == "check") return check(kCheckOptions.parse(argc, argv, 2));
    if (cmd == "run") return run(kRunOptions.parse(argc, argv, 2));
    if (cmd == "starve") return starve(kStarveOptions.parse(argc, argv, 2));
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
