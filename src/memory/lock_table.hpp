// LockTable: the locks (and the Waiter record) of one namespace of the
// embedded backend. Private to src/memory/.
//
// Data layout: a slab of Lock objects (stable addresses, each allocated once
// and reused) with a free list of slot numbers. A lock id is
// "<slot>-<fence>" in hex: find() parses the slot, indexes the slab and
// compares the whole id, so release, renew and force_release need no hash
// table however many locks are held, and an id never names a later lock in
// the same slot (fences never repeat in a namespace).
//
// Tokens: 16 bytes of the kernel's CSPRNG (core::random_hex, which draws
// them in batches per thread), hex encoded.
//
// Invariants: a slot is either live (in no free list) or free (in the free
// list once, id and token empty); live() counts the live ones.
// Thread safety: none; the namespace's mutex guards the table.
#pragma once

#include "memory/expiry_wheel.hpp"
#include "memory/path_index.hpp"

#include <pathlock/engine.hpp>

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace pathlock::memory {

struct Lock : ExpiryHook {
  bool live = false;
  std::uint32_t slot = 0;  // index in the slab
  std::string id;
  std::string token;
  std::string owner;
  int op = 0;
  std::uint64_t fence = 0;
  std::uint32_t holds = 1;
  Millis ttl{0};
  std::string idempotency_key;   // empty: none
  std::string convert_key;       // the key of the conversion that made it what it is (empty: none)
  Clock::time_point granted_at;  // for the hold time (core/observe.hpp)
  bool hold_logged = false;      // a long hold was logged
  std::vector<Entry> entries;    // in role order; never resized while linked
};

// A waiting fair request: its place in line and its indexed targets.
struct Waiter {
  std::uint64_t seq = 0;  // arrival order; smaller is older
  std::string owner;
  int op = 0;
  Clock::time_point since;     // when it took its place
  Clock::time_point deadline;
  std::vector<Entry> entries;  // never resized while linked
  std::string converts;        // a waiting conversion: the id of the lock it converts
  std::list<Waiter>::iterator in_line;  // its place in NamespaceState::waiters (erased in O(1))
};

class LockTable {
 public:
  // A free lock made live for `fence` (never used before in this
  // namespace): id, fresh token, holds = 1; the caller sets the rest.
  Lock& take(std::uint64_t fence);
  // The live lock with this id, or null.
  Lock* find(std::string_view id);
  // Frees live `lock`; its entries must be unlinked and its hook disarmed.
  void give_back(Lock& lock);
  std::size_t live() const { return live_; }

 private:
  std::vector<std::unique_ptr<Lock>> slab_;
  std::vector<std::uint32_t> free_;
  std::size_t live_ = 0;
};

}  // namespace pathlock::memory
