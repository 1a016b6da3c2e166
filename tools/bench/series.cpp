// The subjects pathlock-bench measures and its timed loop; see series.hpp.
//
// pathlock (both backends): held locks are single-target upload / create /
// rename_file / delete_file locks on held_path(); a measured pair is
// acquire(rename_folder on probe_path()) + release(id, token), through the
// public API. Redis: a filler engine (pool of 4, four threads) adds held
// locks; for a point with C clients one new engine with pool_size = C is
// shared by the C client threads (as a service would share one engine).
// Embedded: one engine for the whole run, shared by filler and clients.
//
// scan: the original algorithm as MATRIX.md describes it. Every lock of a
// project is a field of ONE hash (field = locked path, value =
// "owner|expires_at_ms", the expiry taken from the CLIENT's clock, as the
// original did). acquire is a Lua script that reads every held path (HKEYS;
// a value is read only for a match, so this is the cheapest form of the scan:
// HGETALL costs about 60% more at 100k held) and tests each against the
// requested one with substring containment in both directions; release is
// HGET + HDEL. The original called string.find
// WITHOUT the plain flag, so a path was a Lua pattern; we pass plain = true
// so paths with pattern characters cannot crash it. The cost (a full scan
// per request) is the same; its wrong answers (/A/C "contains" /A/CD) are
// reproduced, but none of our paths trigger them.
//
// bare: SET key token NX PX ttl, then EVALSHA of
//   if redis.call('get',KEYS[1])==ARGV[1] then return redis.call('del',KEYS[1]) end return 0
// scan and bare fill their held locks with pipelined HSET / SET commands.
#include "series.hpp"

#include <fmt/format.h>

#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

namespace pathlock::bench {
namespace {

constexpr std::size_t kFanout = 16;
constexpr std::size_t kRing = 1000;  // distinct measured paths per client
constexpr Millis kHeldTtl{6LL * 3600 * 1000};
constexpr Millis kPairTtl{30000};
constexpr const char* kHeldOps[] = {"upload", "create", "rename_file", "delete_file"};

std::string parent_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == 0 ? std::string("/") : path.substr(0, slash);
}

long long wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void fill_progress(const std::string& who, std::size_t done, std::size_t total) {
  fmt::print(stderr, "  ... {} filled {}/{}\n", who, done, total);
}

// ---- pathlock ------------------------------------------------------------
class PathlockSubject final : public Subject {
 public:
  PathlockSubject(Backend backend, std::string url, std::string run)
      : backend_(backend), url_(std::move(url)), run_(std::move(run)) {
    EngineOptions o;
    o.backend = backend_;
    o.redis.url = url_;
    o.redis.pool_size = 4;
    filler_ = make_engine(o);
    // Prove the backend works before the run counts on it.
    const std::string ns = name_space("probe");
    const AcquireResult r = filler_->acquire(LockRequest{ns, "probe", "upload", {{"target", "/p"}}, kPairTtl});
    if (!r.granted) throw BackendError("a lone probe lock was refused");
    if (!filler_->release(ns, r.grant.id, r.grant.token)) throw BackendError("the probe lock could not be released");
  }

  std::string name() const override { return backend_ == Backend::redis ? "pathlock-redis" : "pathlock-memory"; }
  bool in_redis() const override { return backend_ == Backend::redis; }

  void fill(const World& w, std::size_t from, std::size_t to) override {
    const std::string ns = name_space(w.tag);
    const unsigned threads = backend_ == Backend::redis ? 4 : 1;
    std::atomic<std::size_t> done{0};
    std::atomic<bool> failed{false};
    std::exception_ptr error;
    std::mutex error_mutex;
    auto body = [&](unsigned t) {
      try {
        for (std::size_t i = from + t; i < to && !failed.load(std::memory_order_relaxed); i += threads) {
          if ((i & 1023) == 0) check_interrupted();
          LockRequest req{ns, "filler", kHeldOps[i % 4], {{"target", held_path(w.depth, i)}}, kHeldTtl};
          if (!filler_->acquire(req).granted) throw std::runtime_error("held lock refused: " + req.targets[0].path);
          const std::size_t n = done.fetch_add(1) + 1;
          if (n % 200000 == 0) fill_progress(name(), from + n, to);
        }
      } catch (...) {
        failed.store(true);
        std::lock_guard g(error_mutex);
        if (!error) error = std::current_exception();
      }
    };
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < threads; ++t) pool.emplace_back(body, t);
    body(0);
    for (std::thread& th : pool) th.join();
    if (error) std::rethrow_exception(error);
  }

  std::vector<std::unique_ptr<Worker>> workers(const World& w, std::size_t held, unsigned clients) override {
    std::shared_ptr<LockEngine> engine;
    if (backend_ == Backend::redis) {
      EngineOptions o;
      o.backend = Backend::redis;
      o.redis.url = url_;
      o.redis.pool_size = clients;
      engine = make_engine(o);
    } else {
      engine = filler_;
    }
    std::vector<std::unique_ptr<Worker>> out;
    for (unsigned c = 0; c < clients; ++c)
      out.push_back(std::make_unique<PathlockWorker>(engine, name_space(w.tag), w.depth, held, c));
    return out;
  }

 private:
  class PathlockWorker final : public Worker {
   public:
    PathlockWorker(std::shared_ptr<LockEngine> engine, const std::string& ns, int depth, std::size_t held, unsigned c)
        : engine_(std::move(engine)), ns_(ns) {
      ring_.reserve(kRing);
      for (std::size_t k = 0; k < kRing; ++k)
        ring_.push_back(LockRequest{
            ns, fmt::format("client-{}", c), "rename_folder", {{"target", probe_path(depth, held, c, k)}}, kPairTtl});
    }
    bool pair(std::size_t k) override {
      const AcquireResult r = engine_->acquire(ring_[k % kRing]);
      if (!r.granted) return false;
      if (!engine_->release(ns_, r.grant.id, r.grant.token))
        throw std::runtime_error("release of a granted lock failed");
      return true;
    }

   private:
    std::shared_ptr<LockEngine> engine_;
    std::string ns_;
    std::vector<LockRequest> ring_;
  };

  std::string name_space(const std::string& tag) const { return fmt::format("bench-{}-{}", run_, tag); }

  Backend backend_;
  std::string url_, run_;
  std::shared_ptr<LockEngine> filler_;
};

// ---- Redis helpers shared by bare and scan ----------------------------------
std::string load_script(RedisConnection& c, const std::string& source) {
  return command_ok(c, {"SCRIPT", "LOAD", source}).str;
}

// Sends make(0) .. make(count - 1) in pipelined batches of 64; checks every reply.
template <class MakeCommand>
void pipelined(const std::string& addr, std::size_t count, MakeCommand make) {
  RedisConnection c(addr);
  constexpr std::size_t kBatch = 64;
  for (std::size_t i = 0; i < count;) {
    check_interrupted();
    const std::size_t n = std::min(kBatch, count - i);
    for (std::size_t j = 0; j < n; ++j) c.append(make(i + j));
    for (std::size_t j = 0; j < n; ++j) {
      const RedisReply r = c.get();
      if (r.type == RedisReply::Type::error) throw std::runtime_error("fill: " + r.str);
    }
    i += n;
  }
}

// ---- bare ------------------------------------------------------------------
constexpr const char* kCompareAndDelete =
    "if redis.call('get',KEYS[1])==ARGV[1] then return redis.call('del',KEYS[1]) end return 0";

class BareSubject final : public Subject {
 public:
  BareSubject(std::string addr, std::string run) : addr_(std::move(addr)), run_(std::move(run)) {
    RedisConnection c(addr_);
    sha_ = load_script(c, kCompareAndDelete);
  }
  std::string name() const override { return "bare"; }
  bool in_redis() const override { return true; }

  void fill(const World& w, std::size_t from, std::size_t to) override {
    const std::string prefix = key_prefix(w.tag), ttl = std::to_string(kHeldTtl.count());
    pipelined(addr_, to - from, [&](std::size_t j) {
      return std::vector<std::string>{"SET", prefix + held_path(w.depth, from + j), "filler-token", "PX", ttl};
    });
  }

  std::vector<std::unique_ptr<Worker>> workers(const World& w, std::size_t held, unsigned clients) override {
    std::vector<std::unique_ptr<Worker>> out;
    for (unsigned c = 0; c < clients; ++c)
      out.push_back(std::make_unique<BareWorker>(addr_, sha_, key_prefix(w.tag), w.depth, held, c));
    return out;
  }

 private:
  class BareWorker final : public Worker {
   public:
    BareWorker(const std::string& addr, std::string sha, const std::string& prefix, int depth, std::size_t held,
               unsigned c)
        : conn_(addr), sha_(std::move(sha)), client_(c) {
      for (std::size_t k = 0; k < kRing; ++k) keys_.push_back(prefix + probe_path(depth, held, c, k));
    }
    bool pair(std::size_t k) override {
      const std::string& key = keys_[k % kRing];
      const std::string token = fmt::format("t{}-{}", client_, k);
      const RedisReply r = conn_.command({"SET", key, token, "NX", "PX", "30000"});
      if (r.type == RedisReply::Type::error) throw std::runtime_error("SET: " + r.str);
      if (r.type != RedisReply::Type::status) return false;
      const RedisReply d = conn_.command({"EVALSHA", sha_, "1", key, token});
      if (d.type != RedisReply::Type::integer || d.integer != 1) throw std::runtime_error("bare release failed: " + d.str);
      return true;
    }

   private:
    RedisConnection conn_;
    std::string sha_;
    unsigned client_;
    std::vector<std::string> keys_;
  };

  std::string key_prefix(const std::string& tag) const { return fmt::format("bare:{}:{}:", run_, tag); }

  std::string addr_;
  std::string run_, sha_;
};

// ---- scan (the original implementation) -------------------------------------
constexpr const char* kScanAcquire = R"lua(
-- KEYS[1] = the project's lock hash; ARGV = path, "owner|expires_at_ms", now_ms (client clock)
local key, path, value, now = KEYS[1], ARGV[1], ARGV[2], tonumber(ARGV[3])
local held = redis.call('HKEYS', key)
for i = 1, #held do
  local h = held[i]
  if string.find(h, path, 1, true) or string.find(path, h, 1, true) then
    local expires = tonumber(string.match(redis.call('HGET', key, h) or '', '|(%d+)$'))
    if expires and expires > now then return 0 end
    redis.call('HDEL', key, h)
  end
end
redis.call('HSET', key, path, value)
return 1
)lua";
constexpr const char* kScanRelease =
    "if redis.call('hget',KEYS[1],ARGV[1])==ARGV[2] then return redis.call('hdel',KEYS[1],ARGV[1]) end return 0";

class ScanSubject final : public Subject {
 public:
  ScanSubject(std::string addr, std::string run) : addr_(std::move(addr)), run_(std::move(run)) {
    RedisConnection c(addr_);
    acquire_sha_ = load_script(c, kScanAcquire);
    release_sha_ = load_script(c, kScanRelease);
  }
  std::string name() const override { return "scan"; }
  bool in_redis() const override { return true; }

  void fill(const World& w, std::size_t from, std::size_t to) override {
    constexpr std::size_t kPerCommand = 256;  // field/value pairs per HSET
    const std::string key = hash_key(w.tag), value = fmt::format("filler|{}", wall_ms() + kHeldTtl.count());
    pipelined(addr_, (to - from + kPerCommand - 1) / kPerCommand, [&](std::size_t j) {
      std::vector<std::string> argv{"HSET", key};
      for (std::size_t i = from + j * kPerCommand; i < std::min(to, from + (j + 1) * kPerCommand); ++i) {
        argv.push_back(held_path(w.depth, i));
        argv.push_back(value);
      }
      return argv;
    });
  }

  std::vector<std::unique_ptr<Worker>> workers(const World& w, std::size_t held, unsigned clients) override {
    std::vector<std::unique_ptr<Worker>> out;
    for (unsigned c = 0; c < clients; ++c)
      out.push_back(std::make_unique<ScanWorker>(addr_, acquire_sha_, release_sha_, hash_key(w.tag), w.depth, held, c));
    return out;
  }

 private:
  class ScanWorker final : public Worker {
   public:
    ScanWorker(const std::string& addr, std::string acquire, std::string release, std::string key, int depth,
               std::size_t held, unsigned c)
        : conn_(addr), acquire_(std::move(acquire)), release_(std::move(release)), key_(std::move(key)), client_(c) {
      for (std::size_t k = 0; k < kRing; ++k) paths_.push_back(probe_path(depth, held, c, k));
    }
    bool pair(std::size_t k) override {
      const std::string& path = paths_[k % kRing];
      const long long now = wall_ms();
      const std::string value = fmt::format("client-{}|{}", client_, now + kPairTtl.count());
      const RedisReply r = conn_.command({"EVALSHA", acquire_, "1", key_, path, value, std::to_string(now)});
      if (r.type == RedisReply::Type::error) throw std::runtime_error("scan acquire: " + r.str);
      if (r.integer != 1) return false;
      const RedisReply d = conn_.command({"EVALSHA", release_, "1", key_, path, value});
      if (d.type != RedisReply::Type::integer || d.integer != 1) throw std::runtime_error("scan release failed: " + d.str);
      return true;
    }

   private:
    RedisConnection conn_;
    std::string acquire_, release_, key_;
    unsigned client_;
    std::vector<std::string> paths_;
  };

  std::string hash_key(const std::string& tag) const { return fmt::format("scan:{}:{}", run_, tag); }

  std::string addr_;
  std::string run_, acquire_sha_, release_sha_;
};

}  // namespace

// ---- paths -------------------------------------------------------------------
std::string held_path(int depth, std::size_t i) {
  std::string p = "/p";
  std::size_t x = i;
  for (int level = 0; level < depth - 2; ++level) {
    p += fmt::format("/{}{:02}", static_cast<char>('d' + level), x % kFanout);
    x /= kFanout;
  }
  return p + fmt::format("/h{:07}", i);
}

std::string probe_path(int depth, std::size_t held, unsigned client, std::size_t k) {
  const std::size_t span = std::max<std::size_t>(held, 4096);
  const std::size_t j = (k * 7919 + std::size_t{client} * 104729) % span;
  const std::string parent = parent_of(held_path(depth, j));
  return fmt::format("{}/q{:03}-{:03}", parent == "/" ? "" : parent, client, k % kRing);
}

std::unique_ptr<Subject> make_pathlock_subject(Backend backend, const std::string& redis_url, const std::string& run) {
  return std::make_unique<PathlockSubject>(backend, redis_url, run);
}
std::unique_ptr<Subject> make_bare_subject(const std::string& addr, const std::string& run) {
  return std::make_unique<BareSubject>(addr, run);
}
std::unique_ptr<Subject> make_scan_subject(const std::string& addr, const std::string& run) {
  return std::make_unique<ScanSubject>(addr, run);
}

// ---- the timed loop ------------------------------------------------------------
Measurement measure(std::vector<std::unique_ptr<Worker>>& workers, const Window& window) {
  enum Phase : int { kWait, kWarm, kMeasure, kStop };
  std::atomic<int> phase{kWait};
  const std::size_t n = workers.size();
  std::vector<Latencies> lat(n);
  std::vector<std::size_t> refused(n, 0);
  std::vector<Clock::time_point> ended(n);
  std::vector<std::size_t> done(n, 0);  // pairs including warm-up
  std::exception_ptr error;
  std::mutex error_mutex;

  auto body = [&](std::size_t w) {
    try {
      Worker& worker = *workers[w];
      while (phase.load() == kWait) std::this_thread::yield();
      std::size_t k = 0;
      Clock::time_point t0 = Clock::now();
      for (;;) {
        const int ph = phase.load(std::memory_order_relaxed);
        if (ph == kStop && lat[w].size() >= window.min_pairs) break;
        if (interrupted()) break;
        const bool granted = worker.pair(k++);
        const Clock::time_point t1 = Clock::now();
        if (ph != kWarm) {
          if (granted)
            lat[w].add(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
          else
            ++refused[w];
        }
        t0 = t1;
      }
      ended[w] = Clock::now();
      done[w] = k;
    } catch (...) {
      std::lock_guard g(error_mutex);
      if (!error) error = std::current_exception();
      phase.store(kStop);
      ended[w] = Clock::now();
    }
  };
  std::vector<std::thread> threads;
  for (std::size_t w = 0; w < n; ++w) threads.emplace_back(body, w);

  auto sleep_for = [&](double s) {
    const auto until = Clock::now() + std::chrono::duration<double>(s);
    while (Clock::now() < until && !interrupted() && phase.load() != kStop)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  };
  phase.store(kWarm);
  sleep_for(window.warmup_s);
  int expected = kWarm;
  phase.compare_exchange_strong(expected, kMeasure);
  const Clock::time_point start = Clock::now();
  sleep_for(window.measure_s);
  phase.store(kStop);
  for (std::thread& t : threads) t.join();
  if (error) std::rethrow_exception(error);
  check_interrupted();

  Measurement m;
  Latencies all;
  Clock::time_point end = start;
  for (std::size_t w = 0; w < n; ++w) {
    all.merge(lat[w]);
    m.refused += refused[w];
    m.all_pairs += done[w];
    end = std::max(end, ended[w]);
  }
  m.pairs = all.size();
  m.seconds = std::chrono::duration<double>(end - start).count();
  m.throughput = m.seconds > 0 ? static_cast<double>(m.pairs) / m.seconds : 0;
  m.p50_us = all.percentile_us(50);
  m.p99_us = all.percentile_us(99);
  m.max_us = all.percentile_us(100);
  return m;
}

}  // namespace pathlock::bench
