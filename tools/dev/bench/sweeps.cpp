// The sweeps; see sweeps.hpp for what each measures and how to add one.
#include "sweeps.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <random>

#include "report.hpp"

#if __has_include("redis_devtools/redis_cluster.hpp")
#include "redis_devtools/redis_cluster.hpp"
#define PATHLOCK_BENCH_HAS_CLUSTER 1
#endif

namespace pathlock::bench {
namespace {

constexpr double kScanLimitUs = 1e6;  // the scan baseline stops past 1 s per request

// Every subject, in run order: its name, whether it needs the Redis server,
// and its factory (the server's URL, the run id).
struct SubjectKind {
  const char* name;
  bool needs_redis;
  std::unique_ptr<Subject> (*make)(const std::string& url, const std::string& run);
  // Held sweep: pairs with locks held measured in slices alternating with
  // 0 held (Point::zero_held). For the subjects whose goals compare their
  // own figures at two held counts: pathlock-memory (pairs/s; one thread in
  // this process, whose pairs/s is the CPU share the machine gives it at that
  // moment) and pathlock-redis (p50; a round trip's kernel cost on a shared
  // virtual machine changes by up to 3x within minutes). Two points minutes
  // apart measure the machine's load, not the index.
  bool zero_held = false;
};
const SubjectKind kSubjects[] = {
    {"pathlock-redis", true,
     [](const std::string& url, const std::string& run) { return make_pathlock_subject(Engine::redis, url, run); },
     true},
    {"bare", true, make_bare_subject},
    {"per-level", true, make_per_level_subject},
    {"scan", true, make_scan_subject},
    {"pathlock-memory", false,
     [](const std::string&, const std::string& run) { return make_pathlock_subject(Engine::memory, "", run); }, true},
};

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == ',') c = c == ',' ? ';' : ' ';
  return s;
}

}  // namespace

const std::vector<std::string>& subject_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const SubjectKind& k : kSubjects) out.emplace_back(k.name);
    return out;
  }();
  return names;
}

Sweeps::Sweeps(const Options& options, Results& results, LiveLog& log) : opt_(options), results_(results), log_(log) {}

Sweeps::~Sweeps() {
  if (!server_ && info_) {  // an external server: delete this run's keys (our own server just stops)
    try {
      for (const Series& s : series_) {
        if (!s.subject) continue;
        for (const std::string& pattern : s.subject->key_patterns()) {
          std::string cursor = "0";
          do {
            const RedisReply r = command_ok(*info_, {"SCAN", cursor, "MATCH", pattern, "COUNT", "10000"});
            cursor = r.elements.at(0).str;
            std::vector<std::string> argv{"UNLINK"};
            for (const RedisReply& k : r.elements.at(1).elements) argv.push_back(k.str);
            if (argv.size() > 1) command_ok(*info_, argv);
          } while (cursor != "0");
        }
      }
    } catch (const std::exception& e) {
      fmt::print(stderr, "cleanup of run {} keys failed: {}\n", results_.info.run_id, e.what());
    }
  }
  series_.clear();  // engines and connections go before the server
  info_.reset();
}

std::string Sweeps::alternate_pair(const Series& cpu_of, Point& first, Point& second,
                                   const std::function<Groups()>& make_groups) {
  try {
    Groups groups = make_groups();
    const std::vector<Measurement> m =
        measure_alternating(groups, results_.plan.window, kSliceSeconds, cpu_reader(cpu_of));
    first.m = m[0];
    second.m = m[1];
    return "";
  } catch (const Interrupted&) {
    throw;
  } catch (const std::exception& e) {
    return one_line(e.what());
  }
}

void Sweeps::run() {
  start_redis();
  make_series();
  held_sweep();
  depth_sweep();
  scale_sweep();
  topology_sweep();
}

// ---- setup ---------------------------------------------------------------------
bool Sweeps::selected(const std::string& name) const {
  return opt_.only.empty() || std::find(opt_.only.begin(), opt_.only.end(), name) != opt_.only.end();
}

void Sweeps::start_redis() {
  RunInfo& info = results_.info;
  bool needed = false;
  for (const SubjectKind& k : kSubjects) needed = needed || (k.needs_redis && selected(k.name));
  if (!needed) {
    redis_skip_ = "no subject of this run needs it (--only)";
    return;
  }
  try {
    if (opt_.redis_url.empty()) {
      // TLS on a second port of the same server, for the tls point.
      try {
        certs_ = std::make_unique<TlsCertificates>();
      } catch (const std::exception& e) {
        tls_skip_ = one_line(fmt::format("no test certificates: {}", e.what()));
      }
      server_ = std::make_unique<RedisServer>(certs_ ? certs_->server_args(devtools::free_loopback_port())
                                                     : std::vector<std::string>{});
      redis_url_ = server_->url();
      info.redis_where = "own redis-server on loopback";
    } else {
      redis_url_ = opt_.redis_url;
      info.redis_where = "external server (--redis)";
      tls_skip_ = "only on the bench's own server (not with --redis)";
    }
    info_ = std::make_unique<RedisConnection>(redis_url_);
    info.redis_version = info_field(*info_, "server", "redis_version");
    fmt::print(stderr, "redis {} at {} ({})\n", info.redis_version, redis_url_, info.redis_where);
  } catch (const Interrupted&) {
    throw;
  } catch (const std::exception& e) {
    redis_skip_ = one_line(fmt::format("no Redis server: {}", e.what()));
    fmt::print(stderr, "{}\n", redis_skip_);
  }
}

void Sweeps::make_series() {
  std::random_device rd;
  const std::string run = results_.info.run_id = fmt::format("{:06x}", rd() & 0xffffffU);
  for (const SubjectKind& k : kSubjects) {
    Series s;
    s.name = k.name;
    s.zero_held = k.zero_held;
    if (!selected(s.name)) {
      s.skip = "not selected (--only)";
    } else if (k.needs_redis && !redis_skip_.empty()) {
      s.skip = redis_skip_;
    } else {
      try {
        s.subject = k.make(redis_url_, run);
      } catch (const Interrupted&) {
        throw;
      } catch (const std::exception& e) {
        s.skip = one_line(e.what());
      }
    }
    if (!s.skip.empty()) {
      fmt::print(stderr, "{}: skipped: {}\n", s.name, s.skip);
      results_.skipped[s.name] = s.skip;
    }
    if (s.subject && s.subject->in_redis()) s.server = info_.get();
    results_.series.push_back(s.name);
    if (k.needs_redis) results_.redis_series.push_back(s.name);
    series_.push_back(std::move(s));
  }
}

// ---- running points ------------------------------------------------------------
// Brings world w of series s to `target` held locks; false if s is skipped.
bool Sweeps::fill(Series& s, const World& w, std::size_t target) {
  if (!s.skip.empty()) return false;
  std::size_t& have = s.held[w.tag];
  if (have >= target) return true;
  try {
    RedisConnection* server = s.server;
    const long long before = server ? used_memory(*server) : 0;
    const auto t0 = Clock::now();
    s.subject->fill(w, have, target);
    Fill f{s.name, w.tag, have, target, std::chrono::duration<double>(Clock::now() - t0).count(), 0};
    f.memory_growth = server ? used_memory(*server) - before : 0;
    have = target;
    results_.fills.push_back(f);
    log_.fill(f);
    return true;
  } catch (const Interrupted&) {
    throw;
  } catch (const std::exception& e) {
    s.skip = one_line(fmt::format("filling {} held locks failed: {}", target, e.what()));
    results_.skipped[s.name] = s.skip;
    return false;
  }
}

const Point& Sweeps::point(Series& s, const At& at, const World& w, const std::string& forced_skip) {
  if (forced_skip.empty() && s.skip.empty() && fill(s, w, at.held)) {
    if (s.zero_held && at.sweep == "held" && at.task == Task::pair && at.held > 0) return zero_held_point(s, at, w);
    std::vector<RedisConnection*> servers;
    if (s.server) servers.push_back(s.server);
    return measure_point(
        s, at, [&] { return s.subject->workers(w, at.held, at.clients, at.task); }, servers);
  }
  Point p{at, {}, "skipped: " + (forced_skip.empty() ? s.skip : forced_skip)};
  record(p);
  return results_.points.back();
}

const Point& Sweeps::measure_point(Series& s, const At& at, const MakeWorkers& make,
                                   const std::vector<RedisConnection*>& servers) {
  return run_point(s, at, [&](Point& p) {
    auto workers = make();
    auto cpu = [&] {
      double sum = 0;
      for (RedisConnection* c : servers) sum += used_cpu_seconds(*c);
      return sum;
    };
    const double cpu0 = cpu();
    p.m = measure(workers, results_.plan.window);
    if (!servers.empty() && p.m.all_ops) p.m.server_cpu_us = (cpu() - cpu0) * 1e6 / static_cast<double>(p.m.all_ops);
  });
}

const Point& Sweeps::zero_held_point(Series& s, const At& at, const World& w) {
  return run_point(s, at, [&](Point& p) {
    std::vector<std::vector<std::unique_ptr<Worker>>> groups;
    groups.push_back(s.subject->workers(w, at.held, at.clients, at.task));
    groups.push_back(s.subject->workers(World{w.tag + "-empty", w.depth}, 0, at.clients, at.task));
    const std::vector<Measurement> m = measure_alternating(groups, results_.plan.window, kSliceSeconds, cpu_reader(s));
    p.m = m[0];
    p.zero_held = m[1];
  });
}

const Point& Sweeps::run_point(Series& s, const At& at, const std::function<void(Point&)>& run) {
  Point p{at, {}, "ok"};
  try {
    run(p);
  } catch (const Interrupted&) {
    throw;
  } catch (const std::exception& e) {
    s.skip = one_line(e.what());
    results_.skipped[s.name] = s.skip;
    p.status = "skipped: " + s.skip;
  }
  record(p);
  return results_.points.back();
}

CpuSeconds Sweeps::cpu_reader(const Series& s) const {
  if (!s.server) return {};
  RedisConnection* server = s.server;
  return [server] { return used_cpu_seconds(*server); };
}

Sweeps::Series* Sweeps::series(const std::string& name) {
  for (Series& s : series_)
    if (s.name == name) return &s;
  return nullptr;
}

void Sweeps::alternating_point(const std::string& a_name, const std::string& b_name, const At& at, const World& w) {
  Series* a = series(a_name);
  Series* b = series(b_name);
  if (!a || !b || !selected(a->name) || !selected(b->name)) return;  // --only left one out: nothing to compare
  At at_a = at, at_b = at;
  at_a.sweep = at_b.sweep = "alternating";
  at_a.series = at_b.versus = a->name;
  at_b.series = at_a.versus = b->name;
  Point pa{at_a, {}, "ok"}, pb{at_b, {}, "ok"};
  std::string skip;
  if (!fill(*a, w, at.held) || !fill(*b, w, at.held)) {  // false: skipped, now or before
    skip = !a->skip.empty() ? a->name + ": " + a->skip : b->name + ": " + b->skip;
  } else if (a->server != b->server) {
    skip = "not on one Redis server";
  } else {
    // These two points only on an error; each subject's own points go on.
    skip = alternate_pair(*a, pa, pb, [&] {
      Groups groups;
      groups.push_back(a->subject->workers(w, at.held, at.clients, at.task));
      groups.push_back(b->subject->workers(w, at.held, at.clients, at.task));
      return groups;
    });
  }
  if (!skip.empty()) pa.status = pb.status = "skipped: " + skip;
  record(pa);
  record(pb);
}

void Sweeps::record(const Point& p) {
  results_.points.push_back(p);
  log_.point(p);
}

// Non-empty when the scan baseline must not run `task` at `held` (and from
// then on): a request took more than 1 s, or would at this count.
std::string Sweeps::scan_limit(const Series& s, Task task, std::size_t held) {
  if (s.name != "scan") return {};
  std::string& stop = results_.scan_stop;
  if (!stop.empty()) return stop;
  const Point* last = nullptr;
  for (const Point& p : results_.points)
    if (p.at.series == s.name && p.at.task == task && p.ok() && p.at.held > 0 && p.at.held < held &&
        p.at.clients == 1 && (!last || p.at.held > last->at.held))
      last = &p;
  if (last) {
    const double projected = last->m.p50_us * static_cast<double>(held) / static_cast<double>(last->at.held);
    if (projected > kScanLimitUs)
      stop = fmt::format("projected {:.1f} s per request at {} held (p50 {} at {} held; limit 1 s)", projected / 1e6,
                         fmt_count(held), fmt_us(last->m.p50_us), fmt_count(last->at.held));
  }
  return stop;
}

// ---- sweeps ----------------------------------------------------------------------
void Sweeps::held_sweep() {
  const Plan& plan = results_.plan;
  const World w{fmt::format("d{}", plan.base_depth), plan.base_depth};
  for (std::size_t held : plan.held) {
    for (Task task : {Task::pair, Task::refused}) {
      if (task == Task::refused && held == 0) continue;  // nothing to be refused by
      for (Series& s : series_) {
        const At at{task == Task::pair ? "held" : "refused", s.name, task, held, 1, plan.base_depth};
        const Point& p = point(s, at, w, scan_limit(s, task, held));
        if (s.name == "scan" && p.ok() && p.m.max_us > kScanLimitUs && results_.scan_stop.empty())
          results_.scan_stop =
              fmt::format("one request took {:.1f} s at {} held (limit 1 s)", p.m.max_us / 1e6, fmt_count(held));
      }
    }
    if (held == plan.ref_held) {
      alternating_point("pathlock-redis", "bare", At{"", "", Task::pair, held, 1, plan.base_depth}, w);
      tls_point(w, held);
      clients_sweep(w);
    }
  }
}

void Sweeps::tls_point(const World& w, std::size_t held) {
  Series* plain = series("pathlock-redis");
  if (!plain || !selected(plain->name)) return;
  const std::string tls_name = "pathlock-redis-tls";
  At at_plain{"alternating", plain->name, Task::pair, held, 1, w.depth};
  At at_tls = at_plain;
  at_plain.versus = at_tls.series = tls_name;
  at_tls.versus = plain->name;
  Point pp{at_plain, {}, "ok"}, pt{at_tls, {}, "ok"};
  std::string skip = tls_skip_;
  if (skip.empty() && !fill(*plain, w, held)) skip = plain->name + ": " + plain->skip;
  if (skip.empty()) {
    std::unique_ptr<Subject> over_tls;
    skip = alternate_pair(*plain, pp, pt, [&] {
      // Same server, same namespace (the world pathlock-redis filled), over its TLS port.
      RedisTlsOptions tls;
      tls.ca_file = certs_->crt("ca");
      over_tls = make_pathlock_tls_subject(server_->tls_url(), results_.info.run_id, tls);
      Groups groups;
      groups.push_back(plain->subject->workers(w, held, 1, Task::pair));
      groups.push_back(over_tls->workers(w, held, 1, Task::pair));
      return groups;
    });
  }
  if (!skip.empty()) pp.status = pt.status = "skipped: " + skip;
  record(pp);
  record(pt);
}

void Sweeps::clients_sweep(const World& w) {
  const Plan& plan = results_.plan;
  for (unsigned c : plan.clients)
    for (Series& s : series_) point(s, At{"clients", s.name, Task::pair, plan.ref_held, c, w.depth}, w);
  if (const unsigned c = plan.goal_clients())
    alternating_point("pathlock-redis", "bare", At{"", "", Task::pair, plan.ref_held, c, w.depth}, w);
}

void Sweeps::depth_sweep() {
  const Plan& plan = results_.plan;
  for (int depth : plan.depths) {
    for (Series& s : series_) {
      const At at{"depth", s.name, Task::pair, plan.ref_held, 1, depth};
      if (depth == plan.base_depth) {  // the held sweep already measured it
        At held_at = at;
        held_at.sweep = "held";
        if (const Point* p = results_.find(held_at)) {
          Point copy = *p;
          copy.at = at;
          record(copy);
          continue;
        }
      }
      point(s, at, World{fmt::format("d{}", depth), depth});
    }
    if (depth >= Plan::kPerLevelMinDepth)
      alternating_point("pathlock-redis", "per-level", At{"", "", Task::pair, plan.ref_held, 1, depth},
                        World{fmt::format("d{}", depth), depth});
  }
}

// Embedded backend: 1 thread in one namespace vs 2 threads in 2 namespaces.
void Sweeps::scale_sweep() {
  const Plan& plan = results_.plan;
  Series& s = series_.back();
  const std::vector<World> worlds{{"s0", plan.base_depth}, {"s1", plan.base_depth}};
  for (unsigned threads : {1U, 2U}) {
    const At at{"scale", s.name, Task::pair, plan.scale_held, threads, plan.base_depth, threads};
    bool filled = true;
    for (unsigned t = 0; t < threads && filled; ++t) filled = fill(s, worlds[t], plan.scale_held);
    if (!filled) {
      record(Point{at, {}, "skipped: " + s.skip});
      continue;
    }
    measure_point(s, at,
                  [&] {
                    std::vector<std::unique_ptr<Worker>> all;
                    for (unsigned t = 0; t < threads; ++t)
                      for (auto& w : s.subject->workers(worlds[t], plan.scale_held, 1, Task::pair))
                        all.push_back(std::move(w));
                    return all;
                  },
                  {});
  }
}

// pathlock-redis with many namespaces, on the one server of the other sweeps
// (1 master) and on a local cluster of 3 masters (when this build has the
// launcher; started here and stopped at the end of the sweep).
void Sweeps::topology_sweep() {
  const Plan& plan = results_.plan;
  Series& single = series_.front();  // pathlock-redis on the server above
  auto at = [&](unsigned namespaces, unsigned masters) {
    return At{"topology",      single.name, Task::pair, plan.topology_held, plan.topology_clients,
              plan.base_depth, namespaces,  masters};
  };
  for (unsigned n : plan.topology_namespaces) {
    if (single.skip.empty() && single.server)
      topology_point(single, at(n, 1), "t", {single.server});
    else
      record(Point{at(n, 1), {}, "skipped: " + (single.skip.empty() ? "no single server" : single.skip)});
  }
#ifdef PATHLOCK_BENCH_HAS_CLUSTER
  std::string why;
  if (!single.skip.empty()) why = single.skip;
  try {
    if (why.empty()) {
      fmt::print(stderr, "starting a local cluster of 3 masters + 3 replicas\n");
      const devtools::ClusterServers cluster;
      std::vector<std::unique_ptr<RedisConnection>> masters;
      std::vector<RedisConnection*> cpu;
      for (std::size_t m : cluster.masters()) {
        masters.push_back(std::make_unique<RedisConnection>(cluster.node(m).url()));
        cpu.push_back(masters.back().get());
      }
      Series s;
      s.name = single.name;
      s.subject = make_pathlock_subject(Engine::redis, cluster.url(), results_.info.run_id);
      for (unsigned n : plan.topology_namespaces) topology_point(s, at(n, static_cast<unsigned>(cpu.size())), "m", cpu);
      return;  // the cluster stops here
    }
  } catch (const Interrupted&) {
    throw;
  } catch (const std::exception& e) {
    why = one_line(fmt::format("the local cluster failed: {}", e.what()));
  }
#else
  const std::string why = "this build has no local cluster launcher (tools/dev/redis_devtools/redis_cluster.hpp)";
#endif
  for (unsigned n : plan.topology_namespaces)
    if (!results_.any(at(n, 3))) record(Point{at(n, 3), {}, "skipped: " + why});
}

void Sweeps::topology_point(Series& s, const At& at, const std::string& prefix,
                            const std::vector<RedisConnection*>& cpu) {
  std::vector<World> worlds;
  for (unsigned i = 0; i < at.namespaces; ++i) {
    worlds.push_back(World{fmt::format("{}{}", prefix, i), at.depth});
    if (!fill(s, worlds.back(), at.held)) {
      record(Point{at, {}, "skipped: " + s.skip});
      return;
    }
  }
  measure_point(
      s, at,
      [&] {
        std::vector<std::unique_ptr<Worker>> all;
        for (unsigned i = 0; i < at.namespaces; ++i) {
          const unsigned clients = at.clients / at.namespaces + (i < at.clients % at.namespaces ? 1 : 0);
          if (clients == 0) continue;
          for (auto& w : s.subject->workers(worlds[i], at.held, clients, Task::pair)) all.push_back(std::move(w));
        }
        return all;
      },
      cpu);
}

}  // namespace pathlock::bench
