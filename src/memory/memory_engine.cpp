// The embedded backend: an intention-lock index over a path trie.
//
// Data layout (one Namespace per namespace name):
//   * A trie of Nodes, one per path component that some live lock (or
//     waiting request) touches. For each code c (operation, role) in use at a
//     node, the node keeps a Slot with, per kind (held locks / waiters):
//       here  = number of targets with code c exactly at this node,
//       below = number of targets with code c strictly inside it,
//       first = intrusive list of the targets counted in `here`.
//     here_mask / below_mask have bit c set while here / below are non-zero.
//   * locks: a slab (std::deque, stable addresses) with a free list. A lock
//     id is "<slot>-<fence>" in hex, so release and renew find their lock by
//     index and check the fence and token: no hash lookup in a table of a
//     million locks. reentry: (owner, op, targets) -> Lock.
//   * expiry: a timing wheel of kWheelSlots one-millisecond buckets; a lock
//     sits (intrusively linked) in the bucket of its expiry tick modulo the
//     wheel size, so arming, renewing and disarming are O(1). Reaping
//     advances a cursor over the buckets up to now and removes the locks that
//     ended; a lock of a later lap stays where it is. A red-black tree keyed
//     by expiry cost several cache misses per lock at a million locks.
//   * Pruned trie nodes are kept on a bounded spare list and reused, so a
//     steady stream of acquire/release does not allocate trie nodes.
//
// Conflict check for one requested target (code r, path P = n0/n1/.../nk):
//   for every strict ancestor ni: here_mask(ni) & blockers[held_ancestor][r]
//   at nk:                        here_mask(nk) & blockers[same][r]
//                                 below_mask(nk) & blockers[held_descendant][r]
// That is O(depth) hash lookups and mask tests, whatever the number of locks.
// Only a refusal does more: it names one conflicting lock, found at the head
// of a slot list (same or ancestor) or by descending from nk through children
// whose counters say a conflicting target lies below (held_descendant),
// visiting children in byte order like the Redis backend.
//
// Waiting and fairness: a request with wait > 0 that is refused sleeps on the
// namespace's condition variable until a release, a force-release, an expiry
// or a waiter leaving notifies it, or a bounded re-check interval passes, or
// its deadline. A fair waiter enters the queue: its targets are indexed like a
// lock's, in a second set of counters (kind kWaiting), so a fair newcomer
// checks "does an older waiter refuse me?" with the same O(depth) mask test.
// A waiter re-checking itself only considers waiters older than itself,
// scanning the queue (a slow path that only waiters take). Waiters therefore
// form a strict order and can never wait for each other in a cycle.
//
// Invariants (checked by the tests through behaviour):
//   I1 here/below counters equal the number of live targets they describe;
//      every node with no children and zero counters is removed.
//   I2 no two live locks have targets that overlap with a deny verdict, in
//      the order they were granted (the held one refuses the later one).
//   I3 an expired lock is never reported, listed or counted as a conflict:
//      every public call first reaps the leases that ended.
//
// Locking: one std::mutex per Namespace guards all of it, including the
// queue of waiters and the condition variable they sleep on; the map of
// namespaces is guarded by a shared_mutex (readers for lookups, a writer only
// to add a namespace). Namespaces are never removed, so each thread also
// keeps a small cache of the namespaces it used (keyed by a per-engine serial
// number, never by address): calls on different namespaces from different
// threads then share no written memory at all. Lock order: namespaces_mutex_ before Namespace::mutex,
// never the other way round. Time: the injected Clock (MemoryOptions::clock).
#include <pathlock/memory.hpp>

#include "core/request.hpp"
#include "core/waiting.hpp"

#include <pathlock/path.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <deque>
#include <list>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

namespace pathlock::memory {
namespace {

using Clock = pathlock::Clock;
// Pruned trie nodes kept for reuse, per namespace.
constexpr std::size_t kMaxSpareNodes = 1024;
// Expiry wheel: one bucket per millisecond, 4096 buckets per lap.
constexpr std::int64_t kWheelSlots = 4096;

struct Node;
struct Lock;
struct Waiter;

// Counters come in two kinds: targets of held locks, and targets of fair
// requests waiting in line.
enum Kind : std::size_t { kHeld = 0, kWaiting = 1 };

// One target of a lock (or of a waiter), linked into its node's slot list.
struct Entry {
  Lock* lock = nullptr;      // set for kHeld entries
  Waiter* waiter = nullptr;  // set for kWaiting entries
  Node* node = nullptr;
  int code = 0;
  std::string path;
  Entry* prev = nullptr;
  Entry* next = nullptr;
};

struct Lock {
  bool live = false;
  std::uint32_t slot = 0;  // index in Namespace::slab
  std::string id;
  std::string token;
  std::string owner;
  int op = 0;
  const std::string* reentry_key = nullptr;  // the key in Namespace::reentry
  std::uint64_t fence = 0;
  std::uint32_t holds = 1;
  Millis ttl{0};
  Clock::time_point expires_at;
  Lock* wheel_prev = nullptr;  // links in the expiry wheel bucket
  Lock* wheel_next = nullptr;
  std::vector<Entry> entries;  // never resized after linking
};

// The expiry timing wheel (see the essay above).
class ExpiryWheel {
 public:
  explicit ExpiryWheel(Clock::time_point now) : buckets_(kWheelSlots, nullptr), cursor_(tick(now)) {}

  void arm(Lock& lock) {
    Lock*& head = buckets_[slot(tick(lock.expires_at))];
    lock.wheel_prev = nullptr;
    lock.wheel_next = head;
    if (head) head->wheel_prev = &lock;
    head = &lock;
  }
  void disarm(Lock& lock) {
    if (lock.wheel_prev) lock.wheel_prev->wheel_next = lock.wheel_next;
    else buckets_[slot(tick(lock.expires_at))] = lock.wheel_next;
    if (lock.wheel_next) lock.wheel_next->wheel_prev = lock.wheel_prev;
  }
  // Calls ended(lock) for every lock whose lease ended by `now`; ended must
  // disarm it. Visits each bucket at most once per call.
  template <class F>
  void reap(Clock::time_point now, F&& ended) {
    const std::int64_t to = tick(now);
    if (to < cursor_) return;
    const std::int64_t from = std::max(cursor_, to - kWheelSlots + 1);
    for (std::int64_t t = from; t <= to; ++t) {
      for (Lock* lock = buckets_[slot(t)]; lock;) {
        Lock* next = lock->wheel_next;
        if (lock->expires_at <= now) ended(*lock);
        lock = next;
      }
    }
    cursor_ = to;  // the bucket of `to` may still hold locks ending later in it
  }

 private:
  static std::int64_t tick(Clock::time_point t) {
    return std::chrono::duration_cast<Millis>(t.time_since_epoch()).count();
  }
  static std::size_t slot(std::int64_t t) { return static_cast<std::size_t>(t & (kWheelSlots - 1)); }

  std::vector<Lock*> buckets_;
  std::int64_t cursor_;
};

// A waiting fair request: its place in line and its indexed targets.
struct Waiter {
  std::uint64_t seq = 0;  // arrival order; smaller is older
  std::string owner;
  int op = 0;
  Clock::time_point deadline;
  std::vector<Entry> entries;  // never resized after linking
};

struct Slot {
  int code = 0;
  std::uint32_t here[2] = {0, 0};   // by Kind
  std::uint32_t below[2] = {0, 0};  // by Kind
  Entry* first[2] = {nullptr, nullptr};
};

struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

template <class V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

struct Node {
  Node* parent = nullptr;
  std::string_view name;  // the key of this node in parent->children
  StringMap<std::unique_ptr<Node>> children;
  CodeMask here_mask[2] = {0, 0};   // by Kind: codes with here > 0
  CodeMask below_mask[2] = {0, 0};  // by Kind: codes with below > 0
  std::vector<Slot> slots;          // only the codes used here; a few at most

  Node* child(std::string_view n) const {
    const auto it = children.find(n);
    return it == children.end() ? nullptr : it->second.get();
  }
  bool unused() const {
    return (here_mask[kHeld] | below_mask[kHeld] | here_mask[kWaiting] | below_mask[kWaiting]) == 0 &&
           children.empty();
  }
  Slot& slot(int code) {
    for (Slot& s : slots)
      if (s.code == code) return s;
    Slot& s = slots.emplace_back();
    s.code = code;
    return s;
  }
  // Precondition: a counter of `code` is non-zero here (its mask bit is set).
  const Slot& slot_of(int code) const {
    for (const Slot& s : slots)
      if (s.code == code) return s;
    std::abort();  // a mask bit without its slot breaks invariant I1
  }
};

struct Namespace {
  std::mutex mutex;
  Node root;
  std::deque<Lock> slab;                // live and free locks
  std::vector<std::uint32_t> free_slots;  // indices of free slab entries
  StringMap<Lock*> reentry;
  ExpiryWheel expiry;
  std::vector<StringMap<std::unique_ptr<Node>>::node_type> spare_nodes;
  std::uint64_t next_fence = 1;
  std::list<Waiter> waiters;  // fair requests waiting, oldest first
  std::uint64_t next_waiter = 1;
  std::condition_variable changed;  // notified when a lock or a waiter goes
  std::uint64_t generation = 0;     // counts those notifications

  explicit Namespace(Clock::time_point now) : expiry(now) {}

  // A lock or a waiter went: wake the waiters, which may now get in.
  void notify() {
    ++generation;
    changed.notify_all();
  }
};

Millis remaining(Clock::time_point expires_at, Clock::time_point now) {
  return std::max(Millis{0}, std::chrono::duration_cast<Millis>(expires_at - now));
}

Relation relation_of(std::string_view held, std::string_view requested) {
  if (held == requested) return Relation::same;
  return path_within(requested, held) ? Relation::held_ancestor : Relation::held_descendant;
}

// Per-thread cache of namespace lookups: (engine serial, name) -> Namespace.
struct NamespaceCacheEntry {
  std::uint64_t engine = 0;
  std::string name;
  Namespace* ns = nullptr;
};
constexpr std::size_t kNamespaceCacheSize = 8;
thread_local std::array<NamespaceCacheEntry, kNamespaceCacheSize> tls_namespace_cache;
thread_local std::size_t tls_namespace_cache_next = 0;
std::atomic<std::uint64_t> engine_serials{0};

class MemoryEngine final : public LockEngine {
 public:
  MemoryEngine(const MatrixTable& matrix, std::shared_ptr<const Clock> clock)
      : matrix_(matrix), clock_(std::move(clock)), serial_(++engine_serials) {}

  const MatrixTable& matrix() const override { return matrix_; }

  AcquireResult acquire(const LockRequest& request) override {
    core::ResolvedRequest req = core::resolve_request(matrix_, request);
    Attempts attempts(*this, get_namespace(request.ns), req, request);
    return core::wait_for_grant(request, *clock_, attempts);
  }

  bool release(std::string_view ns_name, std::string_view id, std::string_view token) override {
    core::check_namespace(ns_name);
    Namespace* ns = find_namespace(ns_name);
    if (!ns) return false;
    std::lock_guard guard(ns->mutex);
    reap(*ns, clock_->now());
    Lock* lock = find_lock(*ns, id, token);
    if (!lock) return false;
    if (--lock->holds == 0) {
      remove(*ns, *lock);
      ns->notify();
    }
    return true;
  }

  bool renew(std::string_view ns_name, std::string_view id, std::string_view token,
             std::optional<Millis> ttl) override {
    core::check_namespace(ns_name);
    if (ttl) core::check_ttl(*ttl);
    Namespace* ns = find_namespace(ns_name);
    if (!ns) return false;
    std::lock_guard guard(ns->mutex);
    const Clock::time_point now = clock_->now();
    reap(*ns, now);
    Lock* lock = find_lock(*ns, id, token);
    if (!lock) return false;
    if (ttl) lock->ttl = *ttl;
    extend(*ns, *lock, now + lock->ttl);
    return true;
  }

  std::vector<LockInfo> list(std::string_view ns_name, std::string_view prefix) override {
    core::check_namespace(ns_name);
    const std::string canonical = core::resolve_prefix(prefix);
    std::vector<LockInfo> out;
    Namespace* ns = find_namespace(ns_name);
    if (!ns) return out;
    std::lock_guard guard(ns->mutex);
    const Clock::time_point now = clock_->now();
    reap(*ns, now);
    const Node* node = &ns->root;
    PathCursor cursor(canonical);
    for (std::string_view part; cursor.next(part);)
      if (!(node = node->child(part))) return out;
    std::vector<const Lock*> found;
    collect(*node, found);
    std::sort(found.begin(), found.end(), [](const Lock* a, const Lock* b) { return a->fence < b->fence; });
    found.erase(std::unique(found.begin(), found.end()), found.end());
    for (const Lock* lock : found) {
      LockInfo info;
      info.id = lock->id;
      info.owner = lock->owner;
      info.op = std::string(matrix_.ops[static_cast<std::size_t>(lock->op)].name);
      for (const Entry& e : lock->entries)
        info.targets.push_back(Target{std::string(matrix_.role_name_of_code(e.code)), e.path});
      info.fence = lock->fence;
      info.holds = lock->holds;
      info.expires_in = remaining(lock->expires_at, now);
      out.push_back(std::move(info));
    }
    return out;
  }

  ListPage list_page(std::string_view ns_name, std::string_view prefix, std::size_t limit,
                     std::string_view after) override {
    core::check_page(limit, after);
    return core::page_of(list(ns_name, prefix), limit, after);
  }

  bool force_release(std::string_view ns_name, std::string_view id) override {
    core::check_namespace(ns_name);
    Namespace* ns = find_namespace(ns_name);
    if (!ns) return false;
    std::lock_guard guard(ns->mutex);
    reap(*ns, clock_->now());
    Lock* lock = find_lock(*ns, id);
    if (!lock) return false;
    remove(*ns, *lock);
    ns->notify();
    return true;
  }

 private:
  // The embedded backend's side of the waiting policy (core/waiting.hpp):
  // attempts under the namespace mutex, and a sleep on the namespace's
  // condition variable that ends when its generation moves on.
  class Attempts final : public core::WaitingAttempts {
   public:
    Attempts(MemoryEngine& engine, Namespace& ns, core::ResolvedRequest& req, const LockRequest& request)
        : engine_(engine), ns_(ns), req_(req), request_(request) {}

    AcquireResult attempt(Millis reserve) override {
      std::lock_guard guard(ns_.mutex);
      const Clock::time_point now = engine_.clock_->now();
      reap(ns_, now);
      AcquireResult result;
      const bool granted = engine_.try_acquire(ns_, req_, request_, me_, now, result);
      seen_ = ns_.generation;
      if (!granted && reserve > Millis{0}) {
        if (me_)
          me_->deadline = now + reserve;
        else
          me_ = engine_.enqueue(ns_, req_, request_.owner, now + reserve);
      } else if (me_) {
        engine_.dequeue(ns_, *me_);
        me_ = nullptr;
      }
      return result;
    }
    // Attempts record the generation under the mutex: nothing is missed.
    bool listen() override { return false; }
    void sleep_until(Clock::time_point until) override {
      std::unique_lock guard(ns_.mutex);
      ns_.changed.wait_for(guard, until - engine_.clock_->now(), [&] { return ns_.generation != seen_; });
    }
    void leave() noexcept override {
      if (!me_) return;
      std::lock_guard guard(ns_.mutex);
      engine_.dequeue(ns_, *me_);
      me_ = nullptr;
    }

   private:
    MemoryEngine& engine_;
    Namespace& ns_;
    core::ResolvedRequest& req_;
    const LockRequest& request_;
    Waiter* me_ = nullptr;     // the request's place in line, if it has one
    std::uint64_t seen_ = 0;   // ns_.generation at the last attempt
  };

  // One attempt: grants (true) or fills result.conflict (false). On a grant
  // the paths and key of `req` are moved into the lock.
  bool try_acquire(Namespace& ns, core::ResolvedRequest& req, const LockRequest& request, const Waiter* me,
                   Clock::time_point now, AcquireResult& result) {
    if (const auto it = ns.reentry.find(req.reentry_key); it != ns.reentry.end()) {
      Lock& lock = *it->second;
      ++lock.holds;
      extend(ns, lock, std::max(lock.expires_at, now + request.ttl));
      lock.ttl = request.ttl;
      result.granted = true;
      result.grant = grant_of(lock, now);
      return true;
    }
    for (const core::ResolvedTarget& t : req.targets)
      if (find_conflict(ns, t, now, result.conflict)) return false;
    if (request.fair)
      for (const core::ResolvedTarget& t : req.targets)
        if (find_older_waiter(ns, t, me, now, result.conflict)) return false;

    const std::uint64_t fence = ns.next_fence++;
    std::uint32_t slot = 0;
    if (ns.free_slots.empty()) {
      slot = static_cast<std::uint32_t>(ns.slab.size());
      ns.slab.emplace_back();
    } else {
      slot = ns.free_slots.back();
      ns.free_slots.pop_back();
    }
    Lock& lock = ns.slab[slot];
    lock.live = true;
    lock.slot = slot;
    char digits[48];
    char* end = std::to_chars(digits, digits + 20, slot, 16).ptr;
    *end++ = '-';
    end = std::to_chars(end, digits + sizeof digits, fence, 16).ptr;
    lock.id.assign(digits, end);  // unique: the fence never repeats
    lock.token = core::random_hex(16);
    lock.owner = request.owner;
    lock.op = req.op;
    lock.holds = 1;
    lock.fence = fence;
    lock.ttl = request.ttl;
    lock.expires_at = now + request.ttl;
    ns.expiry.arm(lock);
    lock.reentry_key = &ns.reentry.emplace(std::move(req.reentry_key), &lock).first->first;
    lock.entries.resize(req.targets.size());
    for (std::size_t i = 0; i < req.targets.size(); ++i) {
      Entry& e = lock.entries[i];
      e.lock = &lock;
      e.code = req.targets[i].code;
      e.path = std::move(req.targets[i].path);
      link(ns, e, kHeld);
    }
    result.granted = true;
    result.grant = grant_of(lock, now);
    return true;
  }

  Waiter* enqueue(Namespace& ns, const core::ResolvedRequest& req, const std::string& owner,
                  Clock::time_point deadline) {
    Waiter& w = ns.waiters.emplace_back();
    w.seq = ns.next_waiter++;
    w.owner = owner;
    w.op = req.op;
    w.deadline = deadline;
    w.entries.resize(req.targets.size());
    for (std::size_t i = 0; i < req.targets.size(); ++i) {
      Entry& e = w.entries[i];
      e.waiter = &w;
      e.code = req.targets[i].code;
      e.path = req.targets[i].path;
      link(ns, e, kWaiting);
    }
    return &w;
  }

  void dequeue(Namespace& ns, Waiter& w) {
    for (Entry& e : w.entries) unlink(ns, e, kWaiting);
    ns.waiters.remove_if([&](const Waiter& x) { return &x == &w; });
    ns.notify();  // younger waiters may go now
  }

  // Fairness: is there a waiter older than `me` (all of them if me is null)
  // that refuses target t? The index answers "none" in O(depth); only a
  // conflict scans the queue to name the oldest such waiter.
  bool find_older_waiter(Namespace& ns, const core::ResolvedTarget& t, const Waiter* me, Clock::time_point now,
                         Conflict& out) const {
    if (ns.waiters.empty()) return false;
    Relation rel = Relation::same;
    if (!me && !find_entry(ns, t, kWaiting, rel)) return false;
    for (const Waiter& w : ns.waiters) {
      if (me && w.seq >= me->seq) break;
      for (const Entry& e : w.entries) {
        if (!paths_overlap(e.path, t.path)) continue;
        rel = relation_of(e.path, t.path);
        if (!matrix_.refuses(rel, e.code, t.code)) continue;
        describe(e, t, rel, now, out);
        return true;
      }
    }
    return false;
  }

  Namespace* find_namespace(std::string_view name) {
    for (const NamespaceCacheEntry& e : tls_namespace_cache)
      if (e.engine == serial_ && e.name == name) return e.ns;
    Namespace* ns = nullptr;
    {
      std::shared_lock read(namespaces_mutex_);
      const auto it = namespaces_.find(name);
      if (it == namespaces_.end()) return nullptr;
      ns = it->second.get();
    }
    NamespaceCacheEntry& slot = tls_namespace_cache[tls_namespace_cache_next++ % kNamespaceCacheSize];
    slot.engine = serial_;
    slot.name.assign(name);
    slot.ns = ns;
    return ns;
  }

  Namespace& get_namespace(std::string_view name) {
    if (Namespace* ns = find_namespace(name)) return *ns;
    std::unique_lock write(namespaces_mutex_);
    auto& slot = namespaces_[std::string(name)];
    if (!slot) slot = std::make_unique<Namespace>(clock_->now());
    return *slot;
  }

  // The live lock with this id, or null. Ids are "<slot>-<fence>" in hex.
  static Lock* find_lock(Namespace& ns, std::string_view id) {
    const std::size_t dash = id.find('-');
    if (dash == std::string_view::npos) return nullptr;
    std::uint64_t slot = 0;
    const auto [p, ec] = std::from_chars(id.data(), id.data() + dash, slot, 16);
    if (ec != std::errc() || p != id.data() + dash || slot >= ns.slab.size()) return nullptr;
    Lock& lock = ns.slab[slot];
    return lock.live && lock.id == id ? &lock : nullptr;
  }

  static Lock* find_lock(Namespace& ns, std::string_view id, std::string_view token) {
    Lock* lock = find_lock(ns, id);
    return lock && lock->token == token ? lock : nullptr;
  }

  static void extend(Namespace& ns, Lock& lock, Clock::time_point at) {
    if (at == lock.expires_at) return;
    ns.expiry.disarm(lock);
    lock.expires_at = at;
    ns.expiry.arm(lock);
  }

  static Grant grant_of(const Lock& lock, Clock::time_point now) {
    return Grant{lock.id, lock.token, lock.fence, remaining(lock.expires_at, now), lock.holds};
  }

  // Returns the child `part` of `node`, creating it (from the spare list
  // when possible).
  static Node* child_for(Namespace& ns, Node* node, std::string_view part) {
    if (Node* c = node->child(part)) return c;
    Node* c = nullptr;
    if (!ns.spare_nodes.empty()) {
      auto handle = std::move(ns.spare_nodes.back());
      ns.spare_nodes.pop_back();
      handle.key().assign(part);
      c = handle.mapped().get();
      c->name = node->children.insert(std::move(handle)).position->first;
    } else {
      const auto it = node->children.emplace(std::string(part), std::make_unique<Node>()).first;
      c = it->second.get();
      c->name = it->first;
    }
    c->parent = node;
    return c;
  }

  // Adds entry e to the index: counters along its path and its slot list.
  static void link(Namespace& ns, Entry& e, Kind kind) {
    const CodeMask bit = CodeMask{1} << e.code;
    Node* node = &ns.root;
    PathCursor cursor(e.path);
    for (std::string_view part; cursor.next(part);) {
      Slot& s = node->slot(e.code);
      if (s.below[kind]++ == 0) node->below_mask[kind] |= bit;
      node = child_for(ns, node, part);
    }
    Slot& s = node->slot(e.code);
    if (s.here[kind]++ == 0) node->here_mask[kind] |= bit;
    e.node = node;
    e.prev = nullptr;
    e.next = s.first[kind];
    if (s.first[kind]) s.first[kind]->prev = &e;
    s.first[kind] = &e;
  }

  // Removes entry e from the index and prunes nodes nothing uses any more.
  static void unlink(Namespace& ns, Entry& e, Kind kind) {
    const CodeMask bit = CodeMask{1} << e.code;
    Node* node = e.node;
    Slot& s = node->slot(e.code);
    if (e.prev) e.prev->next = e.next;
    else s.first[kind] = e.next;
    if (e.next) e.next->prev = e.prev;
    if (--s.here[kind] == 0) node->here_mask[kind] &= ~bit;
    for (Node* up = node->parent; up; up = up->parent) {
      Slot& us = up->slot(e.code);
      if (--us.below[kind] == 0) up->below_mask[kind] &= ~bit;
    }
    while (node != &ns.root && node->unused()) {
      Node* parent = node->parent;
      auto handle = parent->children.extract(parent->children.find(node->name));
      if (ns.spare_nodes.size() < kMaxSpareNodes) ns.spare_nodes.push_back(std::move(handle));
      node = parent;  // the handle, if not kept, destroys the node here
    }
  }

  static void remove(Namespace& ns, Lock& lock) {
    for (Entry& e : lock.entries) unlink(ns, e, kHeld);
    ns.reentry.erase(ns.reentry.find(*lock.reentry_key));
    ns.expiry.disarm(lock);
    lock.live = false;
    lock.id.clear();
    lock.token.clear();
    lock.owner.clear();
    lock.entries.clear();
    ns.free_slots.push_back(lock.slot);
  }

  static void reap(Namespace& ns, Clock::time_point now) {
    bool removed = false;
    ns.expiry.reap(now, [&](Lock& lock) {
      remove(ns, lock);
      removed = true;
    });
    if (removed) ns.notify();
  }

  static const Entry* first_with(const Node& node, CodeMask mask, Kind kind) {
    // Lowest conflicting code first: deterministic across backends.
    return node.slot_of(__builtin_ctzll(mask)).first[kind];
  }

  // Descends from `node` to an entry strictly inside it with a code in mask:
  // at each level the first child in byte order holding one exactly there,
  // else the first child in byte order with one below it. The same rule as
  // the Redis scripts, so both backends name the same lock. Refusals only.
  static const Entry* find_below(const Node& node, CodeMask mask, Kind kind) {
    const Node* at = &node;
    while (true) {
      const Node* here = nullptr;
      const Node* next = nullptr;
      for (const auto& [name, child] : at->children) {
        if ((child->here_mask[kind] & mask) && (!here || name < here->name)) here = child.get();
        if ((child->below_mask[kind] & mask) && (!next || name < next->name)) next = child.get();
      }
      if (here) return first_with(*here, here->here_mask[kind] & mask, kind);
      if (!next) return nullptr;  // unreachable while I1 holds
      at = next;
    }
  }

  // The O(depth) check: an entry of `kind` that refuses target t, or null.
  const Entry* find_entry(const Namespace& ns, const core::ResolvedTarget& t, Kind kind, Relation& rel) const {
    const auto r = static_cast<std::size_t>(t.code);
    const auto& blockers = matrix_.blockers;
    const CodeMask anc = blockers[static_cast<std::size_t>(Relation::held_ancestor)][r];
    const Node* node = &ns.root;
    PathCursor cursor(t.path);
    for (std::string_view part; cursor.next(part);) {
      if (const CodeMask m = node->here_mask[kind] & anc) {
        rel = Relation::held_ancestor;
        return first_with(*node, m, kind);
      }
      node = node->child(part);
      if (!node) return nullptr;
    }
    if (const CodeMask m = node->here_mask[kind] & blockers[static_cast<std::size_t>(Relation::same)][r]) {
      rel = Relation::same;
      return first_with(*node, m, kind);
    }
    if (const CodeMask m = node->below_mask[kind] & blockers[static_cast<std::size_t>(Relation::held_descendant)][r]) {
      rel = Relation::held_descendant;
      return find_below(*node, m, kind);
    }
    return nullptr;
  }

  bool find_conflict(const Namespace& ns, const core::ResolvedTarget& t, Clock::time_point now, Conflict& out) const {
    Relation rel = Relation::same;
    const Entry* hit = find_entry(ns, t, kHeld, rel);
    if (!hit) return false;
    describe(*hit, t, rel, now, out);
    return true;
  }

  void describe(const Entry& hit, const core::ResolvedTarget& t, Relation rel, Clock::time_point now,
                Conflict& out) const {
    const bool queued = hit.waiter != nullptr;
    const int op = queued ? hit.waiter->op : hit.lock->op;
    out.id = queued ? fmt::format("waiter-{}", hit.waiter->seq) : hit.lock->id;
    out.op = std::string(matrix_.ops[static_cast<std::size_t>(op)].name);
    out.role = std::string(matrix_.role_name_of_code(hit.code));
    out.path = hit.path;
    out.owner = queued ? hit.waiter->owner : hit.lock->owner;
    out.expires_in = remaining(queued ? hit.waiter->deadline : hit.lock->expires_at, now);
    out.requested_role = std::string(matrix_.role_name_of_code(t.code));
    out.requested_path = t.path;
    out.relation = rel;
    out.queued = queued;
  }

  static void collect(const Node& node, std::vector<const Lock*>& out) {
    for (const Slot& s : node.slots)
      for (const Entry* e = s.first[kHeld]; e; e = e->next) out.push_back(e->lock);
    for (const auto& [name, child] : node.children) collect(*child, out);
  }

  const MatrixTable& matrix_;
  const std::shared_ptr<const Clock> clock_;
  const std::uint64_t serial_;  // identifies this engine in thread caches
  std::shared_mutex namespaces_mutex_;
  StringMap<std::unique_ptr<Namespace>> namespaces_;
};

}  // namespace

}  // namespace pathlock::memory

namespace pathlock {

std::unique_ptr<LockEngine> make_memory_engine(const MemoryOptions& options) {
  return std::make_unique<memory::MemoryEngine>(options.matrix ? *options.matrix : default_matrix(),
                                                options.clock ? options.clock : steady_clock());
}

}  // namespace pathlock
