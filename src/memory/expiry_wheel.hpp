// ExpiryWheel: the lease timer of one namespace of the embedded backend, a
// timing wheel of one-millisecond buckets. Private to src/memory/.
//
// Data layout. An ExpiryHook (embedded in each lock) carries its expiry time
// and its position in its bucket. A hook sits in bucket (expiry tick mod
// bucket count), where a tick is one millisecond of the clock; each bucket is
// {hooks, earliest}: an array of its hooks and a lower bound of their expiry
// times. Arming appends, disarming moves the bucket's last hook into the
// hole: O(1), and neither touches another lock's memory unless it is that
// last hook (an intrusive list writes its neighbour, a cold lock among a
// million, on every arm).
//
// Reaping. reap(now) visits the ticks from the cursor (the tick of the last
// reap) to now, at most one lap, and in each bucket removes the hooks whose
// expiry has come. A bucket whose `earliest` lies after `now` is skipped
// without touching its hooks: that is what keeps a call cheap when a bucket
// holds hundreds of locks of later laps (a million locks over 4096 buckets is
// about 244 per bucket, and every call within one millisecond revisits the
// current bucket). Walking a bucket recomputes its exact `earliest`;
// disarming leaves it as it was (still a lower bound).
//
// Size follows use: no buckets until the first hook is armed, then 16,
// doubling while the hooks outnumber the buckets (up to kMaxBuckets = 4096,
// a lap of 4.1 s), halved (at the end of a reap) while the hooks are fewer
// than an eighth of the buckets, and none again once the wheel is empty and
// release_memory() is called. A
// resize re-files every hook (O(hooks), amortised O(1) per arm).
//
// Invariants: every armed hook is in the bucket of its tick under the current
// bucket count; no armed hook's expiry is at or before the last reap's `now`
// (reap removed it); `earliest` <= the expiry of every hook in its bucket.
//
// Thread safety: none; the namespace's mutex guards the wheel.
#pragma once

#include <pathlock/clock.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

namespace pathlock::memory {

struct ExpiryHook {
  Clock::time_point expires_at;
  std::uint32_t position = 0;  // index in its bucket while armed
};

class ExpiryWheel {
 public:
  static constexpr std::size_t kMinBuckets = 16;
  static constexpr std::size_t kMaxBuckets = 4096;

  explicit ExpiryWheel(Clock::time_point now);
  ExpiryWheel(const ExpiryWheel&) = delete;
  ExpiryWheel& operator=(const ExpiryWheel&) = delete;

  // Files `hook` (not armed; expires_at set, after the last reap's now).
  void arm(ExpiryHook& hook);
  // Takes armed `hook` out.
  void disarm(ExpiryHook& hook);
  // Disarms armed `hook` and arms it again for `at`.
  void rearm(ExpiryHook& hook, Clock::time_point at);

  // Calls ended(hook) for every armed hook whose expiry is at or before
  // `now`; ended must disarm that hook and no other, and arm nothing. A
  // `now` before the last reap's does nothing. Shrinks the wheel when an
  // eighth of its buckets would do.
  template <class F>
  void reap(Clock::time_point now, F&& ended) {
    const std::int64_t to = tick(now);
    if (to < cursor_) return;
    if (count_ != 0) {
      const std::int64_t lap = static_cast<std::int64_t>(buckets_count_);
      for (std::int64_t t = std::max(cursor_, to - lap + 1); t <= to; ++t) {
        Bucket& b = buckets_[index(t)];
        if (b.hooks.empty() || b.earliest > now) continue;
        Clock::time_point earliest = Clock::time_point::max();
        for (std::size_t i = 0; i < b.hooks.size();) {
          ExpiryHook& h = *b.hooks[i];
          if (h.expires_at <= now) {
            ended(h);  // disarms: the last hook moves to position i
          } else {
            if (h.expires_at < earliest) earliest = h.expires_at;
            ++i;
          }
        }
        b.earliest = earliest;
      }
    }
    cursor_ = to;  // the bucket of `to` may still hold hooks ending later in that tick
    std::size_t fit = buckets_count_;
    while (fit > kMinBuckets && count_ * 8 < fit) fit /= 2;
    if (fit != buckets_count_) resize(fit);
  }

  std::size_t size() const { return count_; }
  std::size_t bucket_count() const { return buckets_count_; }
  // Heap bytes held by the buckets.
  std::size_t heap_bytes() const;
  // Frees the buckets when no hook is armed.
  void release_memory();

 private:
  struct Bucket {
    std::vector<ExpiryHook*> hooks;
    Clock::time_point earliest = Clock::time_point::max();
  };

  static std::int64_t tick(Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  }
  std::size_t index(std::int64_t t) const { return static_cast<std::size_t>(t) & (buckets_count_ - 1); }
  void file(ExpiryHook& hook);
  void resize(std::size_t buckets);

  std::unique_ptr<Bucket[]> buckets_;
  std::size_t buckets_count_ = 0;
  std::size_t count_ = 0;
  std::int64_t cursor_;
};

}  // namespace pathlock::memory
