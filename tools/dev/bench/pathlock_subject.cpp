// The pathlock subjects (both backends) and the paths every subject uses;
// see subject.hpp.
//
// Held locks are single-target upload / create / rename_file / delete_file
// locks on held_path(); a measured pair is acquire(rename_folder on
// probe_path()) + release(id, token); a refused acquire is delete_folder on
// refused_path() (refused because of the held lock below it; the reply names
// that lock). All through the public API. Redis: a filler engine (pool of 4,
// four threads) adds held locks; for a point with C clients one new engine
// with pool_size = C is shared by the C client threads (as a service would
// share one engine). Embedded: one engine for the whole run, shared by filler
// and clients.
//
// Engines are made in exactly one place, open_engine(), with the backend's
// own factory (make_redis_engine, make_memory_engine).
#include <fmt/format.h>

#include <atomic>
#include <exception>
#include <mutex>
#include <pathlock/engine.hpp>
#include <pathlock/memory.hpp>
#include <pathlock/redis.hpp>
#include <pathlock/redis_admin.hpp>
#include <thread>

#include "subject.hpp"
#include "util.hpp"

namespace pathlock::bench {
namespace {

constexpr Millis kHeldTtl{6LL * 3600 * 1000};
constexpr Millis kPairTtl{30000};
constexpr const char* kHeldOps[] = {"upload", "create", "rename_file", "delete_file"};

std::shared_ptr<LockEngine> open_engine(Engine engine, const std::string& url, std::size_t pool,
                                        const RedisTlsOptions& tls) {
  if (engine == Engine::memory) return make_memory_engine();
  RedisOptions o;
  o.url = url;
  o.pool_size = pool;
  o.tls = tls;
  return make_redis_engine(o);
}

class PathlockSubject final : public Subject {
 public:
  PathlockSubject(Engine engine, std::string url, std::string run, RedisTlsOptions tls = {})
      : engine_(engine), url_(std::move(url)), run_(std::move(run)), tls_(std::move(tls)) {
    filler_ = open_engine(engine_, url_, 4, tls_);
    // Prove the backend works before the run counts on it.
    const std::string ns = name_space("probe");
    const AcquireResult r = filler_->acquire(LockRequest{ns, "probe", "upload", {{"target", "/p"}}, kPairTtl});
    if (!r.granted()) throw BackendError("a lone probe lock was refused");
    if (!filler_->release(ns, r.grant.id, r.grant.token)) throw BackendError("the probe lock could not be released");
  }

  std::string name() const override {
    if (engine_ == Engine::memory) return "pathlock-memory";
    return url_.rfind("rediss://", 0) == 0 ? "pathlock-redis-tls" : "pathlock-redis";
  }
  bool in_redis() const override { return engine_ == Engine::redis; }
  std::vector<std::string> key_patterns() const override {
    if (engine_ != Engine::redis) return {};
    return {redis_admin::key_pattern("bench-" + run_ + "-")};
  }

  void fill(const World& w, std::size_t from, std::size_t to) override {
    const std::string ns = name_space(w.tag);
    const unsigned threads = engine_ == Engine::redis ? 4 : 1;
    std::atomic<std::size_t> done{0};
    std::atomic<bool> failed{false};
    std::exception_ptr error;
    std::mutex error_mutex;
    auto body = [&](unsigned t) {
      try {
        for (std::size_t i = from + t; i < to && !failed.load(std::memory_order_relaxed); i += threads) {
          if ((i & 1023) == 0) check_interrupted();
          LockRequest req{ns, "filler", kHeldOps[i % 4], {{"target", held_path(w.depth, i)}}, kHeldTtl};
          if (!filler_->acquire(req).granted()) throw std::runtime_error("held lock refused: " + req.targets[0].path);
          const std::size_t n = done.fetch_add(1) + 1;
          if (n % 200000 == 0) fmt::print(stderr, "  ... {} filled {}/{}\n", name(), from + n, to);
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

  std::vector<std::unique_ptr<Worker>> workers(const World& w, std::size_t held, unsigned clients, Task task) override {
    const std::shared_ptr<LockEngine> engine = engine_ == Engine::redis ? open_engine(engine_, url_, clients, tls_) : filler_;
    return one_worker_per_client(clients, [&](unsigned c) {
      return std::make_unique<PathlockWorker>(engine, name_space(w.tag), w.depth, held, c, task);
    });
  }

 private:
  class PathlockWorker final : public Worker {
   public:
    PathlockWorker(std::shared_ptr<LockEngine> engine, const std::string& ns, int depth, std::size_t held, unsigned c,
                   Task task)
        : engine_(std::move(engine)), ns_(ns), task_(task) {
      ring_.reserve(kRing);
      const std::string owner = fmt::format("client-{}", c);
      for (std::size_t k = 0; k < kRing; ++k)
        ring_.push_back(
            task == Task::pair
                ? LockRequest{ns, owner, "rename_folder", {{"target", probe_path(depth, held, c, k)}}, kPairTtl}
                : LockRequest{ns, owner, "delete_folder", {{"target", refused_path(depth, held, c, k)}}, kPairTtl});
    }
    bool step(std::size_t k) override {
      const AcquireResult r = engine_->acquire(ring_[k % kRing]);
      if (r.granted() && !engine_->release(ns_, r.grant.id, r.grant.token))
        throw std::runtime_error("release of a granted lock failed");
      return r.granted() == (task_ == Task::pair);
    }

   private:
    std::shared_ptr<LockEngine> engine_;
    std::string ns_;
    Task task_;
    std::vector<LockRequest> ring_;
  };

  std::string name_space(const std::string& tag) const { return fmt::format("bench-{}-{}", run_, tag); }

  Engine engine_;
  std::string url_, run_;
  RedisTlsOptions tls_;
  std::shared_ptr<LockEngine> filler_;
};

}  // namespace

std::unique_ptr<Subject> make_pathlock_tls_subject(const std::string& redis_url, const std::string& run,
                                                   const RedisTlsOptions& tls) {
  return std::make_unique<PathlockSubject>(Engine::redis, redis_url, run, tls);
}

std::unique_ptr<Subject> make_pathlock_subject(Engine engine, const std::string& redis_url, const std::string& run) {
  return std::make_unique<PathlockSubject>(engine, redis_url, run);
}

}  // namespace pathlock::bench
