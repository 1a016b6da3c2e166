// pathlock-bench-redis: latency and memory of the Redis backend.
//
//   pathlock-bench-redis [--url redis://127.0.0.1:6379] [--sizes 0,10000,100000]
//                        [--samples 5000]
//
// For each size N (ascending), the namespace is filled up to N held locks
// (upload locks at depth 5, /bench/dA/eB/f/lN: 100 x 100 folders, so folder
// fan-out grows with N), then it measures on one connection each:
//   * pathlock: acquire + release of an upload at depth 5
//     (/bench/d7/e7/f/measure) through the public LockEngine API;
//   * refused:  an acquire refused by a lock below it (delete_folder of
//     /bench/d7/e7/f), which also names the conflicting lock;
//   * baseline: SET key token NX PX 30000 + a compare-and-delete Lua script,
//     the usual single-key Redis lock, on the same server in the same run.
// and the server's used_memory growth per held lock (INFO memory). Locks are
// filled with pipelined FCALLs of the acquire function the engine runs.
// Server CPU per pair (INFO commandstats) goes to stderr, against a bare
// SET NX PX + DEL pair.
// Use a throwaway server: the benchmark leaves its namespace behind.
#include <pathlock/engine.hpp>
#include <pathlock/factory.hpp>

#include <fmt/format.h>
#include <hiredis/hiredis.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "redis/library.hpp"
#include "redis/redis_url.hpp"
#include <unistd.h>

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct Conn {
  redisContext* ctx = nullptr;
  explicit Conn(const pathlock::redis::RedisUrl& url) {
    ctx = redisConnect(url.host.c_str(), url.port);
    if (!ctx || ctx->err) throw std::runtime_error("cannot connect to redis");
    if (url.password) {
      if (url.user) cmd({"AUTH", *url.user, *url.password});
      else cmd({"AUTH", *url.password});
    }
    if (url.db) cmd({"SELECT", std::to_string(url.db)});
  }
  ~Conn() { redisFree(ctx); }
  static void args(const std::vector<std::string>& argv, std::vector<const char*>& p, std::vector<std::size_t>& l) {
    for (const auto& a : argv) {
      p.push_back(a.data());
      l.push_back(a.size());
    }
  }
  std::string cmd(const std::vector<std::string>& argv) {
    std::vector<const char*> p;
    std::vector<std::size_t> l;
    args(argv, p, l);
    auto* r = static_cast<redisReply*>(redisCommandArgv(ctx, static_cast<int>(argv.size()), p.data(), l.data()));
    if (!r) throw std::runtime_error(std::string("redis: ") + ctx->errstr);
    std::string out = r->type == REDIS_REPLY_INTEGER ? std::to_string(r->integer) : std::string(r->str ? r->str : "", r->len);
    const bool err = r->type == REDIS_REPLY_ERROR;
    freeReplyObject(r);
    if (err) throw std::runtime_error("redis error: " + out);
    return out;
  }
  void append(const std::vector<std::string>& argv) {
    std::vector<const char*> p;
    std::vector<std::size_t> l;
    args(argv, p, l);
    redisAppendCommandArgv(ctx, static_cast<int>(argv.size()), p.data(), l.data());
  }
  void drain(std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      void* r = nullptr;
      if (redisGetReply(ctx, &r) != REDIS_OK) throw std::runtime_error("pipeline failed");
      auto* rr = static_cast<redisReply*>(r);
      const bool ok = rr->type == REDIS_REPLY_ARRAY && rr->elements > 0 && std::string(rr->element[0]->str) == "granted";
      freeReplyObject(r);
      if (!ok) throw std::runtime_error("fill: a lock was not granted");
    }
  }
  long long used_memory() {
    const std::string info = cmd({"INFO", "memory"});
    const std::size_t at = info.find("used_memory:") + 12;
    return std::stoll(info.substr(at));
  }
};

struct Stats {
  double p50 = 0, p99 = 0;
};

template <class F>
Stats measure(int samples, F&& f) {
  std::vector<double> us;
  us.reserve(static_cast<std::size_t>(samples));
  for (int i = 0; i < samples / 10; ++i) f();  // warm-up
  for (int i = 0; i < samples; ++i) {
    const auto t0 = Clock::now();
    f();
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  return Stats{us[us.size() / 2], us[std::min(us.size() - 1, us.size() * 99 / 100)]};
}


// Server-side cost of `samples` runs of `body`, from INFO commandstats after
// CONFIG RESETSTAT (the server is assumed to serve this benchmark only):
// microseconds of server CPU per run spent in the commands named in `outer`
// (a function or script call counts its inner commands in its own time), and
// the number of other commands per run (the redis.call()s inside them).
struct ServerCost {
  double usec = 0, inner_calls = 0;
};
template <class Conn_, class Body>
ServerCost server_cost(Conn_& conn, int samples, const std::vector<std::string>& outer, Body&& body) {
  conn.cmd({"CONFIG", "RESETSTAT"});
  for (int i = 0; i < samples; ++i) body();
  const std::string info = conn.cmd({"INFO", "commandstats"});
  ServerCost cost;
  for (std::size_t at = 0; (at = info.find("cmdstat_", at)) != std::string::npos;) {
    const std::size_t colon = info.find(':', at);
    const std::string name = info.substr(at + 8, colon - at - 8);
    const std::size_t calls_at = info.find("calls=", colon) + 6, usec_at = info.find("usec=", colon) + 5;
    const double calls = std::stod(info.substr(calls_at)), usec = std::stod(info.substr(usec_at));
    at = colon;
    if (name == "config" || name == "info" || name.rfind("config|", 0) == 0) continue;
    if (std::find(outer.begin(), outer.end(), name) != outer.end()) cost.usec += usec;
    else cost.inner_calls += calls;
  }
  cost.usec /= samples;
  cost.inner_calls /= samples;
  return cost;
}

std::string fill_path(long long i) {
  return fmt::format("/bench/d{}/e{}/f/l{}", i % 100, (i / 100) % 100, i);
}

}  // namespace

int main(int argc, char** argv) {
  std::string url = "redis://127.0.0.1:6379";
  std::vector<long long> sizes{0, 10000, 100000};
  int samples = 5000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--url") url = v;
    else if (a == "--samples") samples = std::stoi(v);
    else if (a == "--sizes") {
      sizes.clear();
      for (std::size_t p = 0; p < v.size();) {
        const std::size_t c = std::min(v.find(',', p), v.size());
        sizes.push_back(std::stoll(v.substr(p, c - p)));
        p = c + 1;
      }
      std::sort(sizes.begin(), sizes.end());
    } else {
      fmt::print(stderr, "unknown option {}\n", a);
      return 2;
    }
  }

  try {
    pathlock::EngineOptions opts;
    opts.backend = pathlock::Backend::redis;
    opts.redis.url = url;
    opts.redis.pool_size = 1;
    auto engine = pathlock::make_engine(opts);
    const std::string ns = fmt::format("bench-{}", ::getpid());
    Conn conn(pathlock::redis::parse_redis_url(url));
    const pathlock::redis::Library library = pathlock::redis::library_for(engine->matrix());
    const std::vector<std::string> keys = pathlock::redis::namespace_keys(ns);
    const std::string cad_sha = conn.cmd(
        {"SCRIPT", "LOAD",
         "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end"});

    // Bind the namespace (meta, fence) before the memory baseline.
    const pathlock::LockRequest probe{ns, "bench", "upload", {{"target", "/bench/d7/e7/f/measure"}}, 30000ms, 0ms};
    auto g = engine->acquire(probe);
    engine->release(ns, g.grant.id, g.grant.token);
    const long long base_memory = conn.used_memory();

    fmt::print("server {}  namespace {}  samples {}  (latencies in microseconds, one client, loopback)\n", url, ns,
               samples);
    fmt::print("{:>9} | {:>22} | {:>18} | {:>22} | {:>14}\n", "locks", "pathlock acq+rel p50/p99",
               "refused acq p50/p99", "SET NX PX+CAD p50/p99", "bytes per lock");
    long long filled = 0;
    for (const long long n : sizes) {
      const auto t0 = Clock::now();
      while (filled < n) {
        const long long batch = std::min<long long>(1000, n - filled);
        for (long long i = 0; i < batch; ++i, ++filled)
        {
          std::vector<std::string> call{"FCALL", library.function_prefix + "acquire", std::to_string(keys.size())};
          call.insert(call.end(), keys.begin(), keys.end());
          call.insert(call.end(), {"filler", "upload", "604800000", fmt::format("b{:x}", filled), "t", fill_path(filled)});
          conn.append(call);
        }
        conn.drain(static_cast<std::size_t>(batch));
      }
      const double fill_s = std::chrono::duration<double>(Clock::now() - t0).count();
      const long long memory = conn.used_memory();

      const Stats pair = measure(samples, [&] {
        const auto r = engine->acquire(probe);
        if (!r.granted || !engine->release(ns, r.grant.id, r.grant.token)) throw std::runtime_error("probe refused");
      });
      Stats refused{};
      if (n > 0) {
        const pathlock::LockRequest del{ns, "bench", "delete_folder", {{"target", "/bench/d7/e7/f"}}, 30000ms, 0ms};
        refused = measure(samples, [&] {
          if (engine->acquire(del).granted) throw std::runtime_error("delete_folder was granted");
        });
      }
      const ServerCost pair_cost = server_cost(conn, samples, {"fcall", "evalsha", "eval"}, [&] {
        const auto r = engine->acquire(probe);
        if (!r.granted || !engine->release(ns, r.grant.id, r.grant.token)) throw std::runtime_error("probe refused");
      });
      const ServerCost bare_cost = server_cost(conn, samples, {"set", "del"}, [&] {
        if (conn.cmd({"SET", "bench:plain:lock", "tok", "NX", "PX", "30000"}) != "OK")
          throw std::runtime_error("SET NX failed");
        conn.cmd({"DEL", "bench:plain:lock"});
      });
      fmt::print(stderr,
                 "  server CPU at {} locks: pathlock acquire+release {:.1f} us ({:.1f} redis.call()s), bare SET NX PX + "
                 "DEL {:.2f} us: ratio {:.1f}\n",
                 n, pair_cost.usec, pair_cost.inner_calls, bare_cost.usec, pair_cost.usec / bare_cost.usec);
      const Stats bare = measure(samples, [&] {
        if (conn.cmd({"SET", "bench:plain:lock", "tok", "NX", "PX", "30000"}) != "OK")
          throw std::runtime_error("SET NX failed");
        if (conn.cmd({"EVALSHA", cad_sha, "1", "bench:plain:lock", "tok"}) != "1")
          throw std::runtime_error("CAD failed");
      });
      fmt::print("{:>9} | {:>10.0f} / {:>9.0f} | {:>8} / {:>7} | {:>10.0f} / {:>9.0f} | {:>14}\n", n, pair.p50,
                 pair.p99, n ? fmt::format("{:.0f}", refused.p50) : "-", n ? fmt::format("{:.0f}", refused.p99) : "-",
                 bare.p50, bare.p99, n ? fmt::format("{:.0f}", double(memory - base_memory) / double(n)) : "-");
      if (n > 0) fmt::print(stderr, "  (filled to {} locks in {:.1f} s)\n", n, fill_s);
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "pathlock-bench-redis: {}\n", e.what());
    return 1;
  }
  return 0;
}
