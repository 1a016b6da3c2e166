// Two peers pathlock is measured against, and the setup every Redis-key peer
// shares (RedisPeerSubject); see subject.hpp.
//
// bare: SET key token NX PX ttl, then EVALSHA of
//   if redis.call('get',KEYS[1])==ARGV[1] then return redis.call('del',KEYS[1]) end return 0
// the floor any Redis lock pays (two round trips per pair). It knows no
// tree: its refused acquire is SET NX on a held lock's own key.
//
// scan: the original algorithm as docs/matrix.md describes it. Every lock of a
// project is a field of ONE hash (field = locked path, value =
// "owner|expires_at_ms", the expiry taken from the CLIENT's clock, as the
// original did). acquire is a Lua script that reads every held path (HKEYS;
// a value is read only for a match, so this is the cheapest form of the scan:
// HGETALL costs about 60% more at 100k held) and tests each against the
// requested one with substring containment in both directions; release is
// HGET + HDEL. The original called string.find WITHOUT the plain flag, so a
// path was a Lua pattern; we pass plain = true so paths with pattern
// characters cannot crash it. The cost (a full scan per request) is the
// same; its wrong answers (/A/C "contains" /A/CD) are reproduced, but none of
// our paths trigger them. Its refused acquire asks for a held lock's parent
// folder (a substring of the held path).
//
// Both fill their held locks with pipelined SET / HSET commands.
#include <fmt/format.h>

#include "subject.hpp"
#include "util.hpp"

namespace pathlock::bench {
namespace {

long long wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// ---- bare ------------------------------------------------------------------
constexpr const char* kCompareAndDelete =
    "if redis.call('get',KEYS[1])==ARGV[1] then return redis.call('del',KEYS[1]) end return 0";

class BareSubject final : public RedisPeerSubject {
 public:
  BareSubject(std::string url, std::string run)
      : RedisPeerSubject("bare", "bare", std::move(url), std::move(run), {kCompareAndDelete}) {}

  void fill(const World& w, std::size_t from, std::size_t to) override {
    const std::string prefix = key_prefix(w.tag), ttl = std::to_string(kPeerHeldTtlMs);
    pipelined(url_, to - from, [&](std::size_t j) {
      return std::vector<std::string>{"SET", prefix + held_path(w.depth, from + j), "filler-token", "PX", ttl};
    });
  }

  std::vector<std::unique_ptr<Worker>> workers(const World& w, std::size_t held, unsigned clients, Task task) override {
    return one_worker_per_client(clients, [&](unsigned c) {
      return std::make_unique<BareWorker>(url_, shas_[0], key_prefix(w.tag), w.depth, held, c, task);
    });
  }

 private:
  class BareWorker final : public Worker {
   public:
    BareWorker(const std::string& url, std::string sha, const std::string& prefix, int depth, std::size_t held,
               unsigned c, Task task)
        : conn_(url), sha_(std::move(sha)), client_(c), task_(task) {
      for (std::size_t k = 0; k < kRing; ++k)
        keys_.push_back(prefix + (task == Task::pair ? probe_path(depth, held, c, k)
                                                     : held_path(depth, refused_index(held, c, k))));
    }
    bool step(std::size_t k) override {
      const std::string& key = keys_[k % kRing];
      const std::string token = fmt::format("t{}-{}", client_, k);
      const RedisReply r = conn_.command({"SET", key, token, "NX", "PX", std::to_string(kPeerPairTtlMs)});
      if (r.is_error()) throw std::runtime_error("SET: " + r.str);
      const bool granted = r.type == RedisReply::Type::status;
      if (granted) {
        const RedisReply d = conn_.command({"EVALSHA", sha_, "1", key, token});
        if (d.type != RedisReply::Type::integer || d.integer != 1)
          throw std::runtime_error("bare release failed: " + d.str);
      }
      return granted == (task_ == Task::pair);
    }

   private:
    RedisConnection conn_;
    std::string sha_;
    unsigned client_;
    Task task_;
    std::vector<std::string> keys_;
  };

  std::string key_prefix(const std::string& tag) const { return world_key(tag) + ":"; }
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

class ScanSubject final : public RedisPeerSubject {
 public:
  ScanSubject(std::string url, std::string run)
      : RedisPeerSubject("scan", "scan", std::move(url), std::move(run), {kScanAcquire, kScanRelease}) {}

  void fill(const World& w, std::size_t from, std::size_t to) override {
    constexpr std::size_t kPerCommand = 256;  // field/value pairs per HSET
    const std::string key = hash_key(w.tag), value = fmt::format("filler|{}", wall_ms() + kPeerHeldTtlMs);
    pipelined(url_, (to - from + kPerCommand - 1) / kPerCommand, [&](std::size_t j) {
      std::vector<std::string> argv{"HSET", key};
      for (std::size_t i = from + j * kPerCommand; i < std::min(to, from + (j + 1) * kPerCommand); ++i) {
        argv.push_back(held_path(w.depth, i));
        argv.push_back(value);
      }
      return argv;
    });
  }

  std::vector<std::unique_ptr<Worker>> workers(const World& w, std::size_t held, unsigned clients, Task task) override {
    return one_worker_per_client(clients, [&](unsigned c) {
      return std::make_unique<ScanWorker>(url_, shas_[0], shas_[1], hash_key(w.tag), w.depth, held, c, task);
    });
  }

 private:
  class ScanWorker final : public Worker {
   public:
    ScanWorker(const std::string& url, std::string acquire, std::string release, std::string key, int depth,
               std::size_t held, unsigned c, Task task)
        : conn_(url),
          acquire_(std::move(acquire)),
          release_(std::move(release)),
          key_(std::move(key)),
          client_(c),
          task_(task) {
      for (std::size_t k = 0; k < kRing; ++k)
        paths_.push_back(task == Task::pair ? probe_path(depth, held, c, k) : refused_path(depth, held, c, k));
    }
    bool step(std::size_t k) override {
      const std::string& path = paths_[k % kRing];
      const long long now = wall_ms();
      const std::string value = fmt::format("client-{}|{}", client_, now + kPeerPairTtlMs);
      const RedisReply r = conn_.command({"EVALSHA", acquire_, "1", key_, path, value, std::to_string(now)});
      if (r.is_error()) throw std::runtime_error("scan acquire: " + r.str);
      const bool granted = r.integer == 1;
      if (granted) {
        const RedisReply d = conn_.command({"EVALSHA", release_, "1", key_, path, value});
        if (d.type != RedisReply::Type::integer || d.integer != 1)
          throw std::runtime_error("scan release failed: " + d.str);
      }
      return granted == (task_ == Task::pair);
    }

   private:
    RedisConnection conn_;
    std::string acquire_, release_, key_;
    unsigned client_;
    Task task_;
    std::vector<std::string> paths_;
  };

  std::string hash_key(const std::string& tag) const { return world_key(tag); }
};

}  // namespace

RedisPeerSubject::RedisPeerSubject(std::string name, std::string prefix, std::string url, std::string run,
                                   const std::vector<std::string>& scripts)
    : url_(std::move(url)), run_(std::move(run)), name_(std::move(name)), prefix_(std::move(prefix)) {
  RedisConnection c(url_);
  command_ok(c, {"PING"});
  for (const std::string& source : scripts) shas_.push_back(load_script(c, source));
}

std::unique_ptr<Subject> make_bare_subject(const std::string& redis_url, const std::string& run) {
  return std::make_unique<BareSubject>(redis_url, run);
}
std::unique_ptr<Subject> make_scan_subject(const std::string& redis_url, const std::string& run) {
  return std::make_unique<ScanSubject>(redis_url, run);
}

}  // namespace pathlock::bench
