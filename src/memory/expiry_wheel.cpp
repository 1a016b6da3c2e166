// The expiry wheel of the embedded backend; the design is in expiry_wheel.hpp.
#include "memory/expiry_wheel.hpp"

namespace pathlock::memory {

ExpiryWheel::ExpiryWheel(Clock::time_point now) : cursor_(tick(now)) {}

void ExpiryWheel::file(ExpiryHook& hook) {
  Bucket& b = buckets_[index(tick(hook.expires_at))];
  hook.position = static_cast<std::uint32_t>(b.hooks.size());
  b.hooks.push_back(&hook);
  if (hook.expires_at < b.earliest) b.earliest = hook.expires_at;
}

void ExpiryWheel::arm(ExpiryHook& hook) {
  if (count_ >= buckets_count_ && buckets_count_ < kMaxBuckets)
    resize(buckets_count_ ? buckets_count_ * 2 : kMinBuckets);
  file(hook);
  ++count_;
}

void ExpiryWheel::disarm(ExpiryHook& hook) {
  std::vector<ExpiryHook*>& hooks = buckets_[index(tick(hook.expires_at))].hooks;
  ExpiryHook* last = hooks.back();
  hooks[hook.position] = last;
  last->position = hook.position;
  hooks.pop_back();
  --count_;
}

void ExpiryWheel::rearm(ExpiryHook& hook, Clock::time_point at) {
  disarm(hook);
  hook.expires_at = at;
  arm(hook);
}

void ExpiryWheel::resize(std::size_t buckets) {
  std::unique_ptr<Bucket[]> old = std::move(buckets_);
  const std::size_t old_count = buckets_count_;
  buckets_ = std::make_unique<Bucket[]>(buckets);
  buckets_count_ = buckets;
  for (std::size_t i = 0; i < old_count; ++i)
    for (ExpiryHook* h : old[i].hooks) file(*h);
}

std::size_t ExpiryWheel::heap_bytes() const {
  std::size_t bytes = buckets_count_ * sizeof(Bucket);
  for (std::size_t i = 0; i < buckets_count_; ++i) bytes += buckets_[i].hooks.capacity() * sizeof(ExpiryHook*);
  return bytes;
}

void ExpiryWheel::release_memory() {
  if (count_ != 0) return;
  buckets_.reset();
  buckets_count_ = 0;
}

}  // namespace pathlock::memory
