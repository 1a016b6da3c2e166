// pathlock-stress soak: a long run of `run` worker processes under faults,
// with the server's memory, the workers' RSS and the acquire latency
// reported per interval, and every log checked at the end.
//
// The soak starts --workers processes (`pathlock-stress run`, this very
// program) on one namespace, each with --threads threads, abandoning one
// grant in --abandon and cancelling one acquire in --cancel (waits: one
// acquire in three waits up to 30 ms, as in every run). Every --kill-every
// ms (±50%) it kills one worker with SIGKILL, wherever it is (holding,
// waiting, inside a call), and starts a new one in its place; the worker of
// slot 0 is never killed, so its RSS shows a process that lives the whole
// run. Workers write their logs as they go (--stats), so a killed worker's
// holds before the kill are checked too; the locks it held when killed are
// not in its log (abandoned by the kill, found by nobody's check).
//
// One row per --interval: what the workers did in it (from their `stat`
// lines, soak_stats.hpp), the kills, the p50/p99 acquire latency, the
// server's memory (Redis INFO used_memory through redis-cli, or the size of
// the pathlock schema's tables through psql) and RSS. After the workers end
// and the last leases have run out (--ttl + 1 s), one more memory sample.
// Then `check` over every log. Exit 1 on a violation, an unreadable log, or
// a worker that exited 1 (an anomaly; its stderr is DIR/w<slot>-<gen>.err).
#include "soak_stats.hpp"
#include "stress.hpp"

#include <fmt/format.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <thread>

namespace pathlock::stress {

namespace {

// The output of a program (no shell), or "" when it fails.
std::string capture(const std::vector<std::string>& argv) {
  int fds[2];
  if (pipe(fds) != 0) return "";
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t got; (got = read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(got));
  close(fds[0]);
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return "";
  return out;
}

// The server's memory in bytes: Redis used_memory, or the total size of the
// pathlock schema's tables (with their indexes and TOAST); -1 if unknown.
long long server_memory(const options::Parsed& opt) {
  std::string text;
  if (opt.get("backend") == "redis") {
    text = capture({"redis-cli", "-u", opt.get("redis", "redis://127.0.0.1:6379"), "INFO", "memory"});
    const auto at = text.find("used_memory:");
    if (at == std::string::npos) return -1;
    text = text.substr(at + 12);
  } else {
    text = capture({"psql", opt.get("postgres", ""), "-Atc",
                    "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c JOIN pg_namespace n "
                    "ON n.oid = c.relnamespace WHERE n.nspname = 'pathlock' AND c.relkind = 'r'"});
  }
  try {
    return std::stoll(text);
  } catch (const std::exception&) {
    return -1;
  }
}

// VmRSS of a process in KiB, 0 if it is gone.
long rss_kib(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/status", pid));
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return 0;
}

struct Worker {
  pid_t pid = -1;
  int generation = 0;
};

// One row of the table (the counts come from the workers' stat lines).
struct Sample {
  long kills = 0;
  long long memory = -1;
  long rss_all = 0, rss_first = 0;
};

class Soak {
 public:
  explicit Soak(const options::Parsed& opt)
      : opt_(opt),
        dir_(opt.get("dir")),
        interval_ns_(opt.number_or("interval", 60000) * 1000000),
        kill_every_ms_(opt.number_or("kill-every", 5000)),
        ttl_ms_(opt.number_or("ttl", 2000)),
        epoch_(monotonic_ns()),
        stop_at_(epoch_ + opt.number_or("duration", 0) * 1000000),
        rng_(static_cast<unsigned>(opt.number_or("seed", 1))),
        workers_(static_cast<std::size_t>(opt.number_or("workers", 4))) {}

  int go();

 private:
  void start(std::size_t slot);
  void kill_one();
  void reap_unexpected();
  void sample(long interval);
  void print_row(long interval, const IntervalStats& s) const;
  void finish();
  int report(const CheckResult& check);

  const options::Parsed& opt_;
  const std::string dir_;
  const std::int64_t interval_ns_, kill_every_ms_, ttl_ms_, epoch_, stop_at_;
  std::mt19937 rng_;
  std::vector<Worker> workers_;
  std::vector<std::string> logs_, stats_;
  std::map<long, Sample> samples_;
  long kills_ = 0, failed_workers_ = 0, printed_ = 0;
  long long memory_start_ = -1, memory_end_ = -1, memory_after_ = -1;
  long rss_first_start_ = 0;
};

void Soak::start(std::size_t slot) {
  Worker& w = workers_[slot];
  ++w.generation;
  const std::string base = fmt::format("{}/w{}-{}", dir_, slot, w.generation);
  logs_.push_back(base + ".log");
  stats_.push_back(base + ".stats");
  const std::int64_t left_ms = std::max<std::int64_t>(1, (stop_at_ - monotonic_ns()) / 1000000);
  std::vector<std::string> argv = {
      "/proc/self/exe", "run", "--backend", opt_.get("backend"), "--namespace", opt_.get("namespace"),
      "--threads", opt_.get("threads", "2"), "--duration", std::to_string(left_ms), "--ttl",
      std::to_string(ttl_ms_), "--pause", opt_.get("pause", "20"), "--abandon", opt_.get("abandon", "50"),
      "--cancel", opt_.get("cancel", "20"), "--seed", std::to_string(rng_()), "--max-backend-errors",
      "1000000000", "--stats", base + ".stats", "--epoch", std::to_string(epoch_), "--interval",
      std::to_string(interval_ns_ / 1000000), "--log", base + ".log"};
  for (const char* url : {"redis", "postgres"})
    if (opt_.has(url)) argv.insert(argv.end(), {std::string("--") + url, opt_.get(url)});
  const std::string out = base + ".out", err = base + ".err";
  std::cout.flush();  // else the child's freopen writes the buffer again
  std::fflush(nullptr);
  w.pid = fork();
  if (w.pid == 0) {
    if (!freopen(out.c_str(), "w", stdout) || !freopen(err.c_str(), "w", stderr)) _exit(126);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  if (w.pid < 0) throw std::runtime_error("fork failed");
}

// SIGKILL to a random worker (never slot 0), and a new one in its place.
void Soak::kill_one() {
  if (workers_.size() < 2) return;
  const std::size_t slot = 1 + rng_() % (workers_.size() - 1);
  Worker& w = workers_[slot];
  if (w.pid <= 0) return;
  ::kill(w.pid, SIGKILL);
  waitpid(w.pid, nullptr, 0);
  ++kills_;
  ++samples_[(monotonic_ns() - epoch_) / interval_ns_].kills;
  start(slot);
}

// A worker that ended by itself before the end: counted as failed if it
// exited 1 (an anomaly), and replaced.
void Soak::reap_unexpected() {
  for (std::size_t slot = 0; slot < workers_.size(); ++slot) {
    int status = 0;
    if (workers_[slot].pid <= 0 || waitpid(workers_[slot].pid, &status, WNOHANG) != workers_[slot].pid) continue;
    workers_[slot].pid = -1;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      ++failed_workers_;
      std::cerr << fmt::format("worker {} generation {} ended with status {}\n", slot, workers_[slot].generation,
                               status);
    }
    if (monotonic_ns() < stop_at_ - 1000000000) start(slot);
  }
}

void Soak::sample(long interval) {
  Sample& s = samples_[interval];
  s.memory = server_memory(opt_);
  for (std::size_t slot = 0; slot < workers_.size(); ++slot) {
    const long rss = workers_[slot].pid > 0 ? rss_kib(workers_[slot].pid) : 0;
    s.rss_all += rss;
    if (slot == 0) s.rss_first = rss;
  }
}

void Soak::print_row(long interval, const IntervalStats& s) const {
  const auto found = samples_.find(interval);
  const Sample sample = found == samples_.end() ? Sample{} : found->second;
  std::cout << fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {:.1f} | {:.1f} | {} | {:.1f} | {:.1f} |\n",
                           (interval + 1) * interval_ns_ / 1000000000, s.acquires, s.grants, s.waits, s.cancelled,
                           s.abandoned, sample.kills, s.backend_errors, s.latency.percentile(0.5) / 1000,
                           s.latency.percentile(0.99) / 1000,
                           sample.memory < 0 ? std::string("?") : fmt::format("{:.2f}", static_cast<double>(sample.memory) / 1048576.0),
                           static_cast<double>(sample.rss_all) / 1024.0, static_cast<double>(sample.rss_first) / 1024.0)
            << std::flush;
}

int Soak::go() {
  std::filesystem::create_directories(dir_);
  memory_start_ = server_memory(opt_);
  rss_first_start_ = 0;
  std::cout << fmt::format("soak: {} workers x {} threads, {} s, interval {} s, a kill every ~{} ms; server memory at "
                           "start {} bytes\n",
                           workers_.size(), opt_.get("threads", "2"), (stop_at_ - epoch_) / 1000000000,
                           interval_ns_ / 1000000000, kill_every_ms_, memory_start_)
            << "| end s | acquires | grants | waits | cancelled | abandoned | kills | backend errors | p50 ms | "
               "p99 ms | server MiB | workers' RSS MiB | slot 0 RSS MiB |\n"
            << "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (std::size_t slot = 0; slot < workers_.size(); ++slot) start(slot);
  auto jitter = [this] { return (kill_every_ms_ / 2 + static_cast<std::int64_t>(rng_() % static_cast<unsigned>(kill_every_ms_ + 1))) * 1000000; };
  std::int64_t next_kill = kill_every_ms_ > 0 ? epoch_ + jitter() : stop_at_;
  for (std::int64_t now = monotonic_ns(); now < stop_at_; now = monotonic_ns()) {
    const std::int64_t row_at = epoch_ + (printed_ + 1) * interval_ns_ + 1000000000;
    const std::int64_t wake = std::min({next_kill, row_at, stop_at_, now + 200000000});
    std::this_thread::sleep_for(std::chrono::nanoseconds(std::max<std::int64_t>(0, wake - now)));
    now = monotonic_ns();
    reap_unexpected();
    if (now >= next_kill && now < stop_at_) {
      kill_one();
      next_kill = now + jitter();
    }
    if (now >= row_at && now < stop_at_) {
      sample(printed_);
      print_row(printed_, read_stats(stats_)[printed_]);
      ++printed_;
    }
  }
  if (!samples_.count(printed_) || samples_[printed_].memory < 0) sample(printed_);
  finish();
  const std::map<long, IntervalStats> rows = read_stats(stats_);
  for (auto it = rows.lower_bound(printed_); it != rows.end(); ++it) print_row(it->first, it->second);
  return report(check_logs(logs_, {}));
}

// Waits for the workers to end their --duration (killing any still there
// --ttl + 10 s later), then for the last leases to end, and samples the
// server's memory once more.
void Soak::finish() {
  memory_end_ = server_memory(opt_);
  const std::int64_t give_up = monotonic_ns() + (ttl_ms_ + 10000) * 1000000;
  for (std::size_t slot = 0; slot < workers_.size(); ++slot) {
    Worker& w = workers_[slot];
    int status = 0;
    while (w.pid > 0 && waitpid(w.pid, &status, WNOHANG) == 0) {
      if (monotonic_ns() > give_up) ::kill(w.pid, SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (w.pid > 0 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
      ++failed_workers_;
      std::cerr << fmt::format("worker {} generation {} ended with status {}\n", slot, w.generation, status);
    }
    w.pid = -1;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(ttl_ms_ + 1000));
  memory_after_ = server_memory(opt_);
}

int Soak::report(const CheckResult& check) {
  IntervalStats total;
  for (const auto& [i, s] : read_stats(stats_)) total.merge(s);
  const long restarts = static_cast<long>(logs_.size() - workers_.size());
  const std::string json = fmt::format(
      "{{\"holds\": {}, \"possible_holds\": {}, \"processes\": {}, \"overlapping_pairs\": {}, \"violations\": {}, "
      "\"fence_violations\": {}, \"readable\": {}, \"acquires\": {}, \"grants\": {}, \"waits\": {}, "
      "\"cancelled\": {}, \"abandoned\": {}, \"backend_errors\": {}, \"kills\": {}, \"restarts\": {}, "
      "\"failed_workers\": {}, \"p99_ms\": {:.3f}, \"memory_start\": {}, \"memory_end\": {}, "
      "\"memory_after_leases\": {}}}",
      check.holds, check.maybe, check.processes, check.overlapping_pairs, check.violations, check.fence_violations,
      check.readable, total.acquires, total.grants, total.waits, total.cancelled, total.abandoned,
      total.backend_errors, kills_, restarts, failed_workers_, total.latency.percentile(0.99) / 1000, memory_start_,
      memory_end_, memory_after_);
  std::cout << fmt::format(
      "checked: {} holds and {} possible holds from {} processes, {} overlapping pairs, {} violations, {} fence "
      "violations\nevents: {} acquires, {} grants, {} waits, {} cancelled, {} abandoned, {} kills, {} restarts, "
      "{} backend errors, {} failed workers; p99 {:.2f} ms\nserver memory: start {}, end {}, after the leases {} "
      "bytes\n",
      check.holds, check.maybe, check.processes, check.overlapping_pairs, check.violations, check.fence_violations,
      total.acquires, total.grants, total.waits, total.cancelled, total.abandoned, kills_, restarts,
      total.backend_errors, failed_workers_, total.latency.percentile(0.99) / 1000, memory_start_, memory_end_,
      memory_after_);
  if (opt_.has("report")) std::ofstream(opt_.get("report")) << json << "\n";
  return check.clean() && failed_workers_ == 0 ? options::kExitOk : options::kExitFailure;
}

}  // namespace

int soak(const options::Parsed& opt) {
  if (opt.get("backend") == "memory") throw options::UsageError("soak needs --backend redis or postgres");
  return Soak(opt).go();
}

namespace {
const options::Check kSoakBackend = [](const std::string& v) {
  if (v != "redis" && v != "postgres") throw options::UsageError("--backend: redis or postgres");
};
constexpr long long kMaxMs = 7LL * 24 * 3600 * 1000;  // a week
}  // namespace

const options::Options kSoakOptions = options::Options{}
                                          .command("soak")
                                          .required("backend", kSoakBackend)
                                          .value("redis")
                                          .value("postgres")
                                          .required("namespace")
                                          .required("dir")
                                          .number("duration", 1000, kMaxMs)
                                          .number("interval", 1000, kMaxMs)
                                          .number("workers", 1, 64)
                                          .number("threads", 1, 64)
                                          .number("kill-every", 0, kMaxMs)
                                          .number("ttl", 100, kMaxMs)
                                          .number("pause", 0, kMaxMs)
                                          .number("abandon", 0, 1000000000)
                                          .number("cancel", 0, 1000000000)
                                          .number("seed", 0, 4294967295)
                                          .value("report");

}  // namespace pathlock::stress
