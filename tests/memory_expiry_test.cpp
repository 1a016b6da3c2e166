// The expiry wheel of the embedded backend (src/memory/expiry_wheel.hpp) on
// its own, with explicit time points: nothing sleeps.
#include "memory/expiry_wheel.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <deque>
#include <random>
#include <set>

using namespace pathlock;
using namespace pathlock::memory;
using namespace std::chrono_literals;

namespace {

struct Fixture {
  const Clock::time_point t0 = Clock::time_point{} + 1000h;
  ExpiryWheel wheel{t0};
  std::deque<ExpiryHook> hooks;

  ExpiryHook& arm(std::chrono::steady_clock::duration after) {
    ExpiryHook& h = hooks.emplace_back();
    h.expires_at = t0 + after;
    wheel.arm(h);
    return h;
  }
  // The hooks reaped at `now`, disarmed.
  std::set<const ExpiryHook*> reap(std::chrono::steady_clock::duration at) {
    std::set<const ExpiryHook*> out;
    wheel.reap(t0 + at, [&](ExpiryHook& h) {
      out.insert(&h);
      wheel.disarm(h);
    });
    return out;
  }
};

}  // namespace

TEST_CASE("wheel: a hook ends exactly at its expiry, later laps wait", "[memory][expiry]") {
  Fixture f;
  CHECK(f.wheel.bucket_count() == 0);  // nothing allocated before use
  ExpiryHook& a = f.arm(10ms);
  ExpiryHook& lap = f.arm(10ms + 4096ms * 3);  // same bucket, three laps later
  ExpiryHook& b = f.arm(10ms + 500us);         // same millisecond tick, later in it
  CHECK(f.wheel.size() == 3);
  CHECK(f.reap(9ms).empty());
  CHECK(f.reap(10ms) == std::set<const ExpiryHook*>{&a});
  CHECK(f.reap(10ms + 499us).empty());
  CHECK(f.reap(10ms + 500us) == std::set<const ExpiryHook*>{&b});
  CHECK(f.reap(4096ms * 3).empty());
  CHECK(f.reap(10ms + 4096ms * 3) == std::set<const ExpiryHook*>{&lap});
  CHECK(f.wheel.size() == 0);
}

TEST_CASE("wheel: a jump of many laps reaps everything due, once", "[memory][expiry]") {
  Fixture f;
  std::set<const ExpiryHook*> due;
  for (int i = 0; i < 300; ++i) {
    const ExpiryHook& h = f.arm(std::chrono::milliseconds(1 + i * 97));
    if (h.expires_at <= f.t0 + 20000ms) due.insert(&h);
  }
  CHECK(f.reap(20000ms) == due);
  CHECK(f.wheel.size() == 300 - due.size());
  CHECK(f.reap(19000ms).empty());  // time never goes back
}

TEST_CASE("wheel: rearm moves a hook - disarm forgets it", "[memory][expiry]") {
  Fixture f;
  ExpiryHook& a = f.arm(5ms);
  ExpiryHook& b = f.arm(5ms);
  f.wheel.rearm(a, f.t0 + 50ms);
  f.wheel.disarm(b);
  CHECK(f.reap(49ms).empty());
  CHECK(f.reap(50ms) == std::set<const ExpiryHook*>{&a});
}

TEST_CASE("wheel: buckets follow use, and an empty wheel gives them back", "[memory][expiry]") {
  Fixture f;
  f.arm(1h);
  CHECK(f.wheel.bucket_count() == ExpiryWheel::kMinBuckets);
  for (int i = 0; i < 9999; ++i) f.arm(std::chrono::milliseconds(10 + i));
  CHECK(f.wheel.bucket_count() == ExpiryWheel::kMaxBuckets);
  CHECK(f.reap(10s + 8ms).size() == 9999);
  CHECK(f.wheel.size() == 1);
  CHECK(f.wheel.bucket_count() == ExpiryWheel::kMinBuckets);
  CHECK(f.reap(1h).size() == 1);
  f.wheel.release_memory();
  CHECK(f.wheel.bucket_count() == 0);
  CHECK(f.wheel.heap_bytes() == 0);
  f.arm(2h);  // usable again
  CHECK(f.reap(2h).size() == 1);
}

TEST_CASE("wheel: random arms, rearms, disarms and reaps agree with a plain model", "[memory][expiry]") {
  Fixture f;
  std::mt19937 rng(7);
  std::vector<ExpiryHook*> armed;
  std::chrono::steady_clock::duration now{0};
  for (int step = 0; step < 20000; ++step) {
    const auto r = rng() % 10;
    if (r < 5 || armed.empty()) {
      armed.push_back(&f.arm(now + std::chrono::microseconds(1 + rng() % 10000000)));
    } else if (r < 6) {
      f.wheel.rearm(*armed[rng() % armed.size()], f.t0 + now + std::chrono::microseconds(1 + rng() % 100000));
    } else if (r < 7) {
      const std::size_t k = rng() % armed.size();
      f.wheel.disarm(*armed[k]);
      armed.erase(armed.begin() + static_cast<std::ptrdiff_t>(k));
    } else {
      now += std::chrono::microseconds(rng() % 3000);
      std::set<const ExpiryHook*> due;
      for (const ExpiryHook* h : armed)
        if (h->expires_at <= f.t0 + now) due.insert(h);
      REQUIRE(f.reap(now) == due);
      armed.erase(std::remove_if(armed.begin(), armed.end(), [&](ExpiryHook* h) { return due.count(h) > 0; }),
                  armed.end());
    }
    REQUIRE(f.wheel.size() == armed.size());
  }
}
