// pathlock-console-bench: how long the console takes to open a big
// namespace (docs/console.md#scale). Holds --locks locks in one namespace of
// a private redis-server (or the embedded backend with --backend memory),
// starts a ConsoleServer over it, and times what the page fetches before it
// draws the tree: the namespaces, the first page of locks (500) and the
// waiters. Prints the median of --runs, one line. No assertion on time.
//
//   pathlock-console-bench [--backend redis|memory] [--locks N] [--runs N]
#include "console_server.hpp"

#include "common/options.hpp"
#include "redis_devtools/redis_server.hpp"

#include <pathlock/memory.hpp>
#include <pathlock/redis.hpp>

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <iostream>

using namespace pathlock;

int main(int argc, char** argv) {
  const options::Options table = options::Options{}
                                     .command("pathlock-console-bench")
                                     .value("backend", [](const std::string& v) {
                                       if (v != "redis" && v != "memory") throw std::invalid_argument("redis or memory");
                                     })
                                     .number("locks", 1, 1000000)
                                     .number("runs", 1, 1000);
  const auto p = table.parse_main(argc, argv, 1, "usage: pathlock-console-bench [--backend redis|memory] [--locks N] [--runs N]\n");
  if (!p) return options::kExitUsage;
  const long locks = p->number_or("locks", 50000), runs = p->number_or("runs", 7);
  const bool redis = p->get("backend", "redis") == "redis";
  try {
    std::unique_ptr<devtools::RedisServer> server;
    std::unique_ptr<LockEngine> engine;
    if (redis) {
      server = std::make_unique<devtools::RedisServer>();
      RedisOptions ro;
      ro.url = server->url();
      engine = make_redis_engine(ro);
    } else {
      engine = make_memory_engine();
    }
    const std::string ns = "big";
    for (long i = 0; i < locks; ++i) {
      LockRequest r{.ns = ns, .owner = fmt::format("svc-{}", i % 17), .op = "upload",
                    .targets = {{"target", fmt::format("/d{}/s{}/f{}", i % 100, i % 37, i)}}};
      r.ttl = Millis{3600000};
      if (!engine->acquire(r)) throw std::runtime_error("a setup acquire was refused");
    }
    console::ConsoleOptions co;
    co.namespaces = [&] { return std::vector<std::string>{ns}; };
    console::ConsoleServer console(*engine, co);
    httplib::Client client("127.0.0.1", console.port());
    std::vector<double> ms;
    std::size_t first_page = 0;
    for (long run = 0; run < runs; ++run) {
      const auto t0 = std::chrono::steady_clock::now();
      for (const char* path : {"/api/namespaces?limit=100", "/api/locks?ns=big&limit=500", "/api/waiters?ns=big"}) {
        const auto res = client.Get(path);
        if (!res || res->status != 200) throw std::runtime_error(fmt::format("GET {} failed", path));
        if (std::string_view(path).find("locks") != std::string_view::npos) first_page = res->body.size();
      }
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    std::cout << fmt::format("console first page ({}, {} locks held, 500 shown, {} bytes): median {:.1f} ms, "
                             "min {:.1f} ms, max {:.1f} ms over {} runs\n",
                             redis ? "redis" : "memory", locks, first_page, ms[ms.size() / 2], ms.front(), ms.back(), runs);
    return options::kExitOk;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return options::kExitFailure;
  }
}
