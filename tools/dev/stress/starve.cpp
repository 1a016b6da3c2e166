// pathlock-stress starve: the fairness rule, measured. N threads keep
// creating in /p/A (each create holds --hold ms, and they overlap, so some
// create is always held) while one delete_folder /p/A waits. It reports how
// long the delete waited when the creates are fair (they queue behind it)
// and when they opt out (fair=false), each in its own namespace, in one run.
#include "stress.hpp"

#include <pathlock/engine.hpp>
#include <pathlock/factory.hpp>

#include <fmt/format.h>

#include <unistd.h>

#include <atomic>
#include <iostream>
#include <thread>

namespace pathlock::stress {

namespace {

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

}  // namespace

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


const options::Check kBackend = [](const std::string& v) { parse_backend(v); };
constexpr long long kMaxMs = 7LL * 24 * 3600 * 1000;  // a week

const options::Options kStarveOptions = options::Options{}
                                            .command("starve")
                                            .value("backend", kBackend)
                                            .value("redis")
                                            .value("postgres")
                                            .number("creators", 1, 1024)
                                            .number("hold", 1, kMaxMs)
                                            .number("run", 1, kMaxMs);


}  // namespace pathlock::stress
