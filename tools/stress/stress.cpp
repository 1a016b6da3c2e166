// pathlock-stress: a multi-process stress run and its checker (issue 4).
//
//   pathlock-stress run   --backend memory|redis [--redis URL] --namespace NS
//                         [--threads N] [--ops N] [--seed N] [--ttl MS] --log FILE
//   pathlock-stress check FILE...
//   pathlock-stress starve --backend memory|redis [--redis URL] [--creators N]
//                          [--hold MS] [--run MS]
//
// `run` starts N threads; each repeatedly picks a random operation and random
// paths on a small tree with overlapping paths, acquires (sometimes waiting,
// sometimes not, fair or not), holds briefly, and releases. Every hold it got
// is logged as one line:
//   hold <fence> <op> <role>=<path>[,<role>=<path>] <granted_ns> <released_ns> <pid>:<thread>
// where granted_ns is CLOCK_MONOTONIC read *after* acquire returned and
// released_ns is read *before* release was called. The logged interval is
// inside the real holding interval, so two logged intervals that overlap mean
// the two locks really were held at the same time.
//
// `check` reads every log, sweeps the intervals in time order and, for every
// pair of overlapping holds, asks the compiled matrix whether the earlier
// grant (smaller fence) refuses the later one on any overlapping pair of
// targets. It prints the number of holds, processes and violations, and exits
// 1 if there is any violation. CLOCK_MONOTONIC is one clock for every process
// on a machine, so logs of several processes compare directly.
//
// `starve` measures the fairness rule: N threads keep creating in /p/A
// (each create holds --hold ms, and they overlap, so some create is always
// held) while one delete_folder /p/A waits. It reports how long the delete
// waited when the creates are fair (they queue behind it) and when they opt
// out (fair=false), each in its own namespace, in one run.
#include <pathlock/engine.hpp>
#include <pathlock/factory.hpp>
#include <pathlock/path.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
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
  std::uint64_t fence = 0;
  std::string op;
  std::vector<Target> targets;
  std::int64_t from = 0, to = 0;
  std::string who;
};

int run(const std::map<std::string, std::string>& opt) {
  EngineOptions eo;
  eo.backend = parse_backend(opt.at("backend"));
  if (opt.count("redis")) eo.redis.url = opt.at("redis");
  const int threads = std::stoi(opt.count("threads") ? opt.at("threads") : "4");
  eo.redis.pool_size = static_cast<std::size_t>(threads);
  const long ops = std::stol(opt.count("ops") ? opt.at("ops") : "2000");
  const unsigned seed = static_cast<unsigned>(std::stoul(opt.count("seed") ? opt.at("seed") : "1"));
  const Millis ttl{std::stol(opt.count("ttl") ? opt.at("ttl") : "10000")};
  const std::string ns = opt.at("namespace");
  auto engine = make_engine(eo);
  const MatrixTable& m = engine->matrix();

  std::mutex out_mutex;
  std::ofstream log(opt.at("log"), std::ios::trunc);
  std::atomic<long> grants{0}, refusals{0}, errors{0};
  auto worker = [&](int id) {
    std::mt19937 rng(seed * 1000003u + static_cast<unsigned>(id));
    auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
    std::string lines;
    for (long i = 0; i < ops; ++i) {
      const OpInfo& info = m.ops[pick(m.op_count)];
      LockRequest req{ns, fmt::format("{}:{}", getpid(), id), std::string(info.name), {}, ttl, Millis{0}};
      for (std::size_t r = 0; r < info.role_count; ++r)
        req.targets.push_back(Target{std::string(info.roles[r]), kTree[pick(kTree.size())]});
      if (pick(3) == 0) req.wait = Millis{static_cast<long>(pick(30))};
      req.fair = pick(4) != 0;
      AcquireResult got;
      try {
        got = engine->acquire(req);
      } catch (const InvalidRequest&) {
        continue;  // a random move into its own subtree
      } catch (const BackendError& e) {
        ++errors;
        std::cerr << "backend error: " << e.what() << "\n";
        continue;
      }
      if (!got.granted) {
        ++refusals;
        continue;
      }
      ++grants;
      const std::int64_t from = monotonic_ns();
      if (pick(2)) std::this_thread::sleep_for(std::chrono::microseconds(pick(2000)));
      const std::int64_t to = monotonic_ns();
      std::string targets;
      for (const Target& t : req.targets)
        targets += fmt::format("{}{}={}", targets.empty() ? "" : ",", t.role, normalize_path(t.path));
      // Paths hold no tabs (control characters are refused), so tabs separate fields.
      lines += fmt::format("hold\t{}\t{}\t{}\t{}\t{}\t{}\n", got.grant.fence, req.op, targets, from, to, req.owner);
      if (!engine->release(ns, got.grant.id, got.grant.token)) {
        ++errors;
        std::cerr << "release refused for a lock this thread held\n";
      }
    }
    std::lock_guard guard(out_mutex);
    log << lines;
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker, t);
  for (auto& t : pool) t.join();
  log.flush();
  std::cout << fmt::format("pid {}: {} threads, {} grants, {} refusals, {} errors\n", getpid(), threads, grants.load(),
                           refusals.load(), errors.load());
  return errors == 0 && log ? 0 : 1;
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
      if (!g.granted) continue;
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
  if (d.granted) engine.release(ns, d.grant.id, d.grant.token);
  stop = true;
  for (auto& t : pool) t.join();
  return d.granted ? waited : -1;
}

int starve(const std::map<std::string, std::string>& opt) {
  EngineOptions eo;
  eo.backend = parse_backend(opt.at("backend"));
  if (opt.count("redis")) eo.redis.url = opt.at("redis");
  const int creators = std::stoi(opt.count("creators") ? opt.at("creators") : "3");
  eo.redis.pool_size = static_cast<std::size_t>(creators + 1);
  const Millis hold{std::stol(opt.count("hold") ? opt.at("hold") : "50")};
  const Millis run_for{std::stol(opt.count("run") ? opt.at("run") : "3000")};
  auto engine = make_engine(eo);
  const std::string base = fmt::format("starve-{}", getpid());
  const long fair = starve_round(*engine, base + "-fair", creators, hold, run_for, true);
  const long unfair = starve_round(*engine, base + "-unfair", creators, hold, run_for, false);
  auto show = [&](long ms) { return ms < 0 ? fmt::format("not granted within {} ms", run_for.count()) : fmt::format("{} ms", ms); };
  std::cout << fmt::format("backend {}: {} creators holding {} ms each, overlapping\n", opt.at("backend"), creators,
                           hold.count())
            << fmt::format("  delete_folder wait, creates fair (default):  {}\n", show(fair))
            << fmt::format("  delete_folder wait, creates fair=false:      {}\n", show(unfair));
  return 0;
}

bool parse_hold(const std::string& line, const MatrixTable& m, Hold& h, std::vector<std::pair<int, std::string>>& codes) {
  std::vector<std::string> f;
  std::stringstream s(line);
  for (std::string field; std::getline(s, field, '\t');) f.push_back(field);
  if (f.size() != 7 || f[0] != "hold") return false;
  h.fence = std::stoull(f[1]);
  h.op = f[2];
  h.from = std::stoll(f[4]);
  h.to = std::stoll(f[5]);
  h.who = f[6];
  const int op = m.op_index(h.op);
  if (op < 0) return false;
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

int check(const std::vector<std::string>& files) {
  const MatrixTable& m = default_matrix();
  struct Item {
    Hold hold;
    std::vector<std::pair<int, std::string>> codes;
  };
  std::vector<Item> items;
  std::map<std::string, int> processes;
  for (const std::string& file : files) {
    std::ifstream in(file);
    if (!in) {
      std::cerr << "cannot read " << file << "\n";
      return 2;
    }
    for (std::string line; std::getline(in, line);) {
      Item it;
      if (!parse_hold(line, m, it.hold, it.codes)) {
        std::cerr << file << ": bad line: " << line << "\n";
        return 2;
      }
      processes[it.hold.who.substr(0, it.hold.who.find(':'))]++;
      items.push_back(std::move(it));
    }
  }
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.hold.from < b.hold.from; });
  auto refuses = [&](const Item& earlier, const Item& later) {
    for (const auto& [hc, hp] : earlier.codes)
      for (const auto& [rc, rp] : later.codes) {
        if (!paths_overlap(hp, rp)) continue;
        const Relation rel = hp == rp ? Relation::same
                             : path_within(rp, hp) ? Relation::held_ancestor
                                                   : Relation::held_descendant;
        if (m.refuses(rel, hc, rc)) return true;
      }
    return false;
  };
  long violations = 0, overlapping_pairs = 0;
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
  std::cout << fmt::format("{} holds from {} processes, {} overlapping pairs checked, {} violations\n", items.size(),
                           processes.size(), overlapping_pairs, violations);
  return violations == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string usage =
      "usage: pathlock-stress run --backend memory|redis [--redis URL] --namespace NS [--threads N] [--ops N]\n"
      "                           [--seed N] [--ttl MS] --log FILE\n"
      "       pathlock-stress check FILE...\n"
      "       pathlock-stress starve --backend memory|redis [--redis URL] [--creators N] [--hold MS] [--run MS]\n";
  if (argc < 2) {
    std::cerr << usage;
    return 2;
  }
  try {
    const std::string cmd = argv[1];
    if (cmd == "check") return check(std::vector<std::string>(argv + 2, argv + argc));
    if (cmd != "run" && cmd != "starve") {
      std::cerr << usage;
      return 2;
    }
    std::map<std::string, std::string> opt;
    for (int i = 2; i + 1 < argc; i += 2) opt[std::string(argv[i]).substr(2)] = argv[i + 1];
    if (cmd == "starve") {
      if (!opt.count("backend")) opt["backend"] = "memory";
      return starve(opt);
    }
    for (const char* required : {"backend", "namespace", "log"})
      if (!opt.count(required)) {
        std::cerr << usage;
        return 2;
      }
    return run(opt);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
