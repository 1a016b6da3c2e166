// The per-level peer: how a file-sync server of the Nextcloud kind locks a
// path today, written from that description (no code taken from it).
//
// Every path level has its own key, lvl:RUN:TAG:<level path>. A lock on
// /a/b/c takes a shared lock on each ancestor, root first, then an exclusive
// lock on the leaf, one round trip per level:
//   INCR  lvl:..:/a        shared: a counter of holders; the reply is an
//   INCR  lvl:..:/a/b      error when the key holds the exclusive marker
//   SET   lvl:..:/a/b/c exclusive NX PX ttl   exclusive: only if nobody holds
//                                             the level (no lock below it)
// and releases the same way: DEL of the leaf, then DECR of each ancestor,
// leaf side first. A refusal at some level undoes the levels already taken
// (one DECR each). So a pair at depth D costs 2 * D round trips, against two
// for pathlock and for the bare lock; its Redis work per call is the
// cheapest there is. Held locks are exclusive leaves with their ancestors'
// counters; a refused acquire asks for the exclusive lock of a held lock's
// parent folder, whose counter is not zero.
//
// Fill: per batch of held locks, one INCRBY per distinct ancestor (the sum
// of that batch's INCRs) and one SET per leaf, pipelined: the same keys and
// values as taking each lock one by one.

#include <map>

#include "subject.hpp"
#include "util.hpp"

namespace pathlock::bench {
namespace {

constexpr const char* kExclusive = "exclusive";

class PerLevelSubject final : public RedisPeerSubject {
 public:
  PerLevelSubject(std::string url, std::string run)
      : RedisPeerSubject("per-level", "lvl", std::move(url), std::move(run)) {}

  void fill(const World& w, std::size_t from, std::size_t to) override {
    constexpr std::size_t kBatch = 4096;
    const std::string prefix = key_prefix(w.tag), ttl = std::to_string(kPeerHeldTtlMs);
    for (std::size_t b = from; b < to; b += kBatch) {
      std::map<std::string, long long> ancestors;
      std::vector<std::vector<std::string>> commands;
      for (std::size_t i = b; i < std::min(to, b + kBatch); ++i) {
        const std::vector<std::string> levels = path_levels(held_path(w.depth, i));
        for (std::size_t l = 0; l + 1 < levels.size(); ++l) ++ancestors[levels[l]];
        commands.push_back({"SET", prefix + levels.back(), kExclusive, "NX", "PX", ttl});
      }
      for (const auto& [level, n] : ancestors) commands.push_back({"INCRBY", prefix + level, std::to_string(n)});
      pipelined(url_, commands.size(), [&](std::size_t j) { return commands[j]; });
    }
  }

  std::vector<std::unique_ptr<Worker>> workers(const World& w, std::size_t held, unsigned clients, Task task) override {
    return one_worker_per_client(clients, [&](unsigned c) {
      return std::make_unique<PerLevelWorker>(url_, key_prefix(w.tag), w.depth, held, c, task);
    });
  }

 private:
  class PerLevelWorker final : public Worker {
   public:
    PerLevelWorker(const std::string& url, const std::string& prefix, int depth, std::size_t held, unsigned c,
                   Task task)
        : conn_(url), task_(task) {
      for (std::size_t k = 0; k < kRing; ++k) {
        std::vector<std::string> keys;
        for (const std::string& level :
             path_levels(task == Task::pair ? probe_path(depth, held, c, k) : refused_path(depth, held, c, k)))
          keys.push_back(prefix + level);
        ring_.push_back(std::move(keys));
      }
    }
    bool step(std::size_t k) override {
      const std::vector<std::string>& keys = ring_[k % kRing];
      const bool granted = acquire(keys);
      if (granted) release(keys, keys.size() - 1, true);
      return granted == (task_ == Task::pair);
    }

   private:
    // Shared on keys[0..n-2], exclusive on keys[n-1]; on a refusal, undoes
    // what it took and returns false.
    bool acquire(const std::vector<std::string>& keys) {
      for (std::size_t l = 0; l + 1 < keys.size(); ++l) {
        const RedisReply r = conn_.command({"INCR", keys[l]});
        if (r.is_error()) {  // the level holds the exclusive marker
          release(keys, l, false);
          return false;
        }
      }
      const RedisReply r = conn_.command({"SET", keys.back(), kExclusive, "NX", "PX", std::to_string(kPeerPairTtlMs)});
      if (r.is_error()) throw std::runtime_error("per-level SET: " + r.str);
      if (r.type != RedisReply::Type::status) {
        release(keys, keys.size() - 1, false);
        return false;
      }
      return true;
    }
    // DEL of the leaf (when held), then DECR of the first `shared` levels, deepest first.
    void release(const std::vector<std::string>& keys, std::size_t shared, bool leaf) {
      if (leaf) {
        const RedisReply d = conn_.command({"DEL", keys.back()});
        if (d.is_error() || d.integer != 1) throw std::runtime_error("per-level release of the leaf failed");
      }
      for (std::size_t l = shared; l-- > 0;) {
        const RedisReply d = conn_.command({"DECR", keys[l]});
        if (d.is_error()) throw std::runtime_error("per-level DECR: " + d.str);
      }
    }

    RedisConnection conn_;
    Task task_;
    std::vector<std::vector<std::string>> ring_;
  };

  std::string key_prefix(const std::string& tag) const { return world_key(tag) + ":"; }
};

}  // namespace

std::unique_ptr<Subject> make_per_level_subject(const std::string& redis_url, const std::string& run) {
  return std::make_unique<PerLevelSubject>(redis_url, run);
}

}  // namespace pathlock::bench
