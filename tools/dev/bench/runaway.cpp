// pathlock-runaway-bench: what a runaway tenant costs its neighbours
// (issue 47, point 4; docs/operations.md#limits-per-namespace).
//   pathlock-runaway-bench [--seconds S] [--rounds R] [--runaways N] [--redis URL]
//
// One namespace (the neighbour) runs acquire + release pairs on one thread
// and times each. In alternating slices of S seconds (default 1), R rounds
// (default 5) of three states, so drift of the machine falls on all alike:
//   quiet    the neighbour alone;
//   limited  N threads (default 1) of a runaway client acquire new locks in
//            a loop in another namespace whose limit (1000 locks) they
//            reached in the first slice: every call after it is refused
//            over_limit;
//   loose    the same loop in a namespace without limits (its locks pile up:
//            the state the limit prevents; its namespace is emptied between
//            rounds so memory stays within the server's).
// Reports the neighbour's pair p50 and p99 per state, limited/quiet and
// loose/quiet, the goal (limited p50 within 1.5x of quiet) PASS or FAIL,
// Redis' used_memory per state, and the load average. The server is a
// redis-server started here unless --redis. A benchmark, not a test: the
// exit status is 0 whatever the figures (1 only when a call fails).
#include <pathlock/redis.hpp>

#include "redis_devtools/redis_server.hpp"

#include <fmt/format.h>

#include <hiredis/hiredis.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace pathlock;
using Wall = std::chrono::steady_clock;

[[noreturn]] void fail(const std::string& what) {
  fmt::print(stderr, "pathlock-runaway-bench: {}\n", what);
  std::exit(1);
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

// The neighbour's pairs for `seconds`: each pair's time in microseconds.
void neighbour(LockEngine& engine, double seconds, std::uint64_t& counter, std::vector<double>& out) {
  const auto end = Wall::now() + std::chrono::duration_cast<Wall::duration>(std::chrono::duration<double>(seconds));
  LockRequest req{"neighbour", "svc", "upload", {{"target", ""}}, Millis{30000}};
  while (Wall::now() < end) {
    req.targets[0].path = fmt::format("/n/d{}/f{}", counter % 64, counter % 4096);
    ++counter;
    const auto t0 = Wall::now();
    const AcquireResult r = engine.acquire(req);
    if (!r.granted() || !engine.release(req.ns, r.grant.id, r.grant.token)) fail("a neighbour's pair failed");
    out.push_back(std::chrono::duration<double, std::micro>(Wall::now() - t0).count());
  }
}

// A runaway thread: new locks in `ns`, never released, until `stop`.
void runaway(LockEngine& engine, const std::string& ns, int thread, const std::atomic<bool>& stop) {
  LockRequest req{ns, "loop-" + std::to_string(thread), "upload", {{"target", ""}}, Millis{600000}};
  for (std::uint64_t i = 0; !stop.load(std::memory_order_relaxed); ++i) {
    req.targets[0].path = fmt::format("/r{}/d{}/f{}", thread, i % 97, i);
    const AcquireResult r = engine.acquire(req);
    if (!r.granted() && !r.over_limit()) fail("a runaway call was neither granted nor over a limit");
  }
}

long long used_memory(const std::string& host, int port) {
  redisContext* c = redisConnect(host.c_str(), port);
  if (!c || c->err) fail("cannot reach redis for INFO");
  auto* r = static_cast<redisReply*>(redisCommand(c, "INFO memory"));
  long long used = 0;
  if (r && r->type == REDIS_REPLY_STRING) {
    const std::string s(r->str, r->len);
    const auto at = s.find("used_memory:");
    if (at != std::string::npos) used = std::atoll(s.c_str() + at + 12);
  }
  freeReplyObject(r);
  redisFree(c);
  return used;
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

struct State {
  const char* name;
  std::string ns;  // the runaway's namespace; empty: no runaway
  std::vector<double> pairs;
  long long memory = 0;
};

}  // namespace

int main(int argc, char** argv) {
  double seconds = 1;
  int rounds = 5, runaways = 1;
  std::string url;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--seconds") seconds = std::atof(argv[i + 1]);
    else if (a == "--rounds") rounds = std::atoi(argv[i + 1]);
    else if (a == "--runaways") runaways = std::atoi(argv[i + 1]);
    else if (a == "--redis") url = argv[i + 1];
    else fail("usage: pathlock-runaway-bench [--seconds S] [--rounds R] [--runaways N] [--redis URL]");
  }
  if (argc % 2 == 0 || seconds <= 0 || rounds < 1 || runaways < 1) fail("bad arguments");
  std::unique_ptr<devtools::RedisServer> server;
  if (url.empty()) {
    server = std::make_unique<devtools::RedisServer>();
    url = server->url();
  }
  const std::string host = "127.0.0.1";
  const int port = std::atoi(url.substr(url.rfind(':') + 1).c_str());
  RedisOptions options;
  options.url = url;
  options.pool_size = static_cast<std::size_t>(runaways + 2);
  auto engine = make_redis_engine(options);
  engine->set_limits("runaway-limited", Limits{1000, std::nullopt, std::nullopt});
  engine->set_limits("runaway-loose", Limits{});
  std::vector<State> states{{"quiet", "", {}, 0}, {"limited", "runaway-limited", {}, 0}, {"loose", "runaway-loose", {}, 0}};
  std::uint64_t counter = 0;
  std::vector<double> warm;
  neighbour(*engine, 0.5, counter, warm);
  for (int round = 0; round < rounds; ++round) {
    for (State& s : states) {
      std::atomic<bool> stop{false};
      std::vector<std::thread> loop;
      if (!s.ns.empty())
        for (int t = 0; t < runaways; ++t) loop.emplace_back([&, t] { runaway(*engine, s.ns, t, stop); });
      neighbour(*engine, seconds, counter, s.pairs);
      s.memory = std::max(s.memory, used_memory(host, port));
      stop = true;
      for (std::thread& t : loop) t.join();
      // The loose namespace's pile goes between rounds (its locks are held
      // for ten minutes): each round starts from the same memory.
      if (s.ns == "runaway-loose")
        for (const LockInfo& l : engine->list(s.ns, "/")) engine->force_release(s.ns, l.id);
    }
  }
  const double quiet = percentile(states[0].pairs, 0.5);
  fmt::print("pathlock-runaway-bench: {} round(s) of {} s slices, {} runaway thread(s), load average {}\n", rounds,
             seconds, runaways, load_average());
  for (const State& s : states)
    fmt::print("  {:<8} neighbour pairs {:>7}  p50 {:>7.1f} us  p99 {:>8.1f} us  p50/quiet {:.2f}  used_memory {:.1f} MiB\n",
               s.name, s.pairs.size(), percentile(s.pairs, 0.5), percentile(s.pairs, 0.99),
               percentile(s.pairs, 0.5) / quiet, static_cast<double>(s.memory) / 1048576.0);
  const double ratio = percentile(states[1].pairs, 0.5) / quiet;
  fmt::print("  goal: a limited runaway keeps the neighbour's pair p50 within 1.5x of quiet: {:.2f}x {}\n", ratio,
             ratio <= 1.5 ? "PASS" : "FAIL");
  return 0;
}
