// The lock table of the embedded backend; the design is in lock_table.hpp.
#include "memory/lock_table.hpp"

#include "core/request.hpp"

#include <charconv>

namespace pathlock::memory {

Lock& LockTable::take(std::uint64_t fence) {
  std::uint32_t slot = 0;
  if (free_.empty()) {
    slot = static_cast<std::uint32_t>(slab_.size());
    slab_.push_back(std::make_unique<Lock>());
  } else {
    slot = free_.back();
    free_.pop_back();
  }
  Lock& lock = *slab_[slot];
  lock.live = true;
  lock.slot = slot;
  lock.fence = fence;
  lock.holds = 1;
  char digits[48];
  char* end = std::to_chars(digits, digits + 20, slot, 16).ptr;
  *end++ = '-';
  end = std::to_chars(end, digits + sizeof digits, fence, 16).ptr;
  lock.id.assign(digits, end);
  lock.token = core::random_hex(16);
  ++live_;
  return lock;
}

Lock* LockTable::find(std::string_view id) {
  const std::size_t dash = id.find('-');
  if (dash == std::string_view::npos) return nullptr;
  std::uint64_t slot = 0;
  const auto [p, ec] = std::from_chars(id.data(), id.data() + dash, slot, 16);
  if (ec != std::errc() || p != id.data() + dash || slot >= slab_.size()) return nullptr;
  Lock& lock = *slab_[slot];
  return lock.live && lock.id == id ? &lock : nullptr;
}

void LockTable::give_back(Lock& lock) {
  lock.live = false;
  lock.id.clear();
  lock.token.clear();
  lock.owner.clear();
  lock.idempotency_key.clear();
  lock.entries.clear();
  free_.push_back(lock.slot);
  --live_;
}

}  // namespace pathlock::memory
