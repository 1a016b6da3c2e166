// The embedded backend: an intention-lock index over a path trie.
//
// Data layout (one Namespace per namespace name):
//   * A trie of Nodes, one per path component that some live lock touches.
//     For every code c (operation, role) a node keeps a Slot:
//       here  = number of lock targets with code c exactly at this node,
//       below = number of lock targets with code c strictly inside it,
//       first = intrusive list of the targets counted in `here`.
//     here_mask / below_mask have bit c set while here / below are non-zero.
//   * locks: id -> Lock, and reentry: (owner, op, targets) -> Lock.
//   * expiry: a min-heap of (expires_at, fence) entries; a renewal pushes a
//     new entry and the stale one is skipped when popped.
//
// Conflict check for one requested target (code r, path P = n0/n1/.../nk):
//   for every strict ancestor ni: here_mask(ni) & blockers[held_ancestor][r]
//   at nk:                        here_mask(nk) & blockers[same][r]
//                                 below_mask(nk) & blockers[held_descendant][r]
// That is O(depth) hash lookups and mask tests, whatever the number of locks.
// Only a refusal does more: it names one conflicting lock, found at the head
// of a slot list (same or ancestor) or by descending from nk through children
// whose counters say a conflicting target lies below (held_descendant).
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
// to add a namespace). Lock order: namespaces_mutex_ before Namespace::mutex,
// never the other way round. Time: std::chrono::steady_clock.
#include "memory/memory_engine.hpp"

#include "core/request.hpp"

#include <pathlock/path.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <list>
#include <mutex>
#include <queue>
#include <shared_mutex>
#include <unordered_map>

namespace pathlock::memory {
namespace {

using Clock = std::chrono::steady_clock;

// Upper bound on a waiter's sleep between two checks.
constexpr Millis kRecheckInterval{200};

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
  std::string id;
  std::string token;
  std::string owner;
  int op = 0;
  std::string reentry_key;
  std::uint64_t fence = 0;
  std::uint32_t holds = 1;
  Millis ttl{0};
  Clock::time_point expires_at;
  std::vector<Entry> entries;  // never resized after linking
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
  std::uint32_t here[2] = {0, 0};   // by Kind
  std::uint32_t below[2] = {0, 0};  // by Kind
  Entry* first[2] = {nullptr, nullptr};
};

struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct Node {
  Node* parent = nullptr;
  std::string name;
  std::unordered_map<std::string, std::unique_ptr<Node>, StringHash, std::equal_to<>> children;
  CodeMask here_mask[2] = {0, 0};   // by Kind: codes with here > 0
  CodeMask below_mask[2] = {0, 0};  // by Kind: codes with below > 0
  std::vector<Slot> slots;          // sized code_count on first use

  Node* child(std::string_view n) const {
    const auto it = children.find(n);
    return it == children.end() ? nullptr : it->second.get();
  }
  bool unused() const {
    return (here_mask[kHeld] | below_mask[kHeld] | here_mask[kWaiting] | below_mask[kWaiting]) == 0 &&
           children.empty();
  }
};

struct ExpiryEntry {
  Clock::time_point at;
  std::uint64_t fence;
  std::string id;
  bool operator>(const ExpiryEntry& o) const { return at > o.at; }
};

struct Namespace {
  std::mutex mutex;
  Node root;
  std::unordered_map<std::string, std::unique_ptr<Lock>, StringHash, std::equal_to<>> locks;
  std::unordered_map<std::string, Lock*, StringHash, std::equal_to<>> reentry;
  std::priority_queue<ExpiryEntry, std::vector<ExpiryEntry>, std::greater<>> expiry;
  std::uint64_t next_fence = 1;
  std::list<Waiter> waiters;  // fair requests waiting, oldest first
  std::uint64_t next_waiter = 1;
  std::condition_variable changed;  // notified when a lock or a waiter goes
};

Millis remaining(Clock::time_point expires_at, Clock::time_point now) {
  return std::max(Millis{0}, std::chrono::duration_cast<Millis>(expires_at - now));
}

class MemoryEngine final : public LockEngine {
 public:
  explicit MemoryEngine(const MatrixTable& matrix) : matrix_(matrix) {}

  const MatrixTable& matrix() const override { return matrix_; }

  AcquireResult acquire(const LockRequest& request) override {
    const core::ResolvedRequest req = core::resolve_request(matrix_, request);
    Namespace& ns = get_namespace(request.ns);
    std::unique_lock guard(ns.mutex);
    Clock::time_point now = Clock::now();
    const Clock::time_point deadline = now + request.wait;
    reap(ns, now);
    AcquireResult result;
    Waiter* me = nullptr;
    while (!try_acquire(ns, req, request, me, now, result) && now < deadline) {
      if (!me && request.fair) me = enqueue(ns, req, request.owner, deadline);
      Clock::time_point wake = std::min(deadline, now + kRecheckInterval);
      if (!ns.expiry.empty()) wake = std::min(wake, ns.expiry.top().at);
      ns.changed.wait_until(guard, wake);
      now = Clock::now();
      reap(ns, now);
    }
    if (me) dequeue(ns, *me);
    return result;
  }

  bool release(std::string_view ns_name, std::string_view id, std::string_view token) override {
    core::check_namespace(ns_name);
    Namespace* ns = find_namespace(ns_name);
    if (!ns) return false;
    std::lock_guard guard(ns->mutex);
    reap(*ns, Clock::now());
    Lock* lock = find_lock(*ns, id, token);
    if (!lock) return false;
    if (--lock->holds == 0) {
      remove(*ns, *lock);
      ns->changed.notify_all();
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
    const Clock::time_point now = Clock::now();
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
    const Clock::time_point now = Clock::now();
    reap(*ns, now);
    const Node* node = &ns->root;
    for (const std::string_view part : path_components(canonical))
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

  bool force_release(std::string_view ns_name, std::string_view id) override {
    core::check_namespace(ns_name);
    Namespace* ns = find_namespace(ns_name);
    if (!ns) return false;
    std::lock_guard guard(ns->mutex);
    reap(*ns, Clock::now());
    const auto it = ns->locks.find(id);
    if (it == ns->locks.end()) return false;
    remove(*ns, *it->second);
    ns->changed.notify_all();
    return true;
  }

 private:
  // One attempt: grants (true) or fills result.conflict (false).
  bool try_acquire(Namespace& ns, const core::ResolvedRequest& req, const LockRequest& request, const Waiter* me,
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

    auto lock = std::make_unique<Lock>();
    lock->id = core::random_hex(12);
    lock->token = core::random_hex(16);
    lock->owner = request.owner;
    lock->op = req.op;
    lock->reentry_key = req.reentry_key;
    lock->fence = ns.next_fence++;
    lock->ttl = request.ttl;
    lock->expires_at = now + request.ttl;
    lock->entries.resize(req.targets.size());
    for (std::size_t i = 0; i < req.targets.size(); ++i) {
      Entry& e = lock->entries[i];
      e.lock = lock.get();
      e.code = req.targets[i].code;
      e.path = req.targets[i].path;
      link(ns, e, kHeld);
    }
    ns.expiry.push(ExpiryEntry{lock->expires_at, lock->fence, lock->id});
    ns.reentry.emplace(lock->reentry_key, lock.get());
    result.granted = true;
    result.grant = grant_of(*lock, now);
    ns.locks.emplace(lock->id, std::move(lock));
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
    ns.changed.notify_all();  // younger waiters may go now
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
        rel = e.path == t.path ? Relation::same
              : path_within(t.path, e.path) ? Relation::held_ancestor
                                             : Relation::held_descendant;
        if (!matrix_.refuses(rel, e.code, t.code)) continue;
        describe(e, t, rel, now, out);
        return true;
      }
    }
    return false;
  }

  Namespace* find_namespace(std::string_view name) {
    std::shared_lock read(namespaces_mutex_);
    const auto it = namespaces_.find(name);
    return it == namespaces_.end() ? nullptr : it->second.get();
  }

  Namespace& get_namespace(std::string_view name) {
    if (Namespace* ns = find_namespace(name)) return *ns;
    std::unique_lock write(namespaces_mutex_);
    auto& slot = namespaces_[std::string(name)];
    if (!slot) slot = std::make_unique<Namespace>();
    return *slot;
  }

  static Lock* find_lock(Namespace& ns, std::string_view id, std::string_view token) {
    const auto it = ns.locks.find(id);
    if (it == ns.locks.end() || it->second->token != token) return nullptr;
    return it->second.get();
  }

  static void extend(Namespace& ns, Lock& lock, Clock::time_point at) {
    if (at == lock.expires_at) return;
    lock.expires_at = at;
    ns.expiry.push(ExpiryEntry{at, lock.fence, lock.id});
  }

  Grant grant_of(const Lock& lock, Clock::time_point now) const {
    return Grant{lock.id, lock.token, lock.fence, remaining(lock.expires_at, now), lock.holds};
  }

  Slot& slot(Node& node, int code) {
    if (node.slots.empty()) node.slots.resize(matrix_.code_count);
    return node.slots[static_cast<std::size_t>(code)];
  }

  // Adds entry e to the index: counters along its path and its slot list.
  void link(Namespace& ns, Entry& e, Kind kind) {
    const CodeMask bit = CodeMask{1} << e.code;
    Node* node = &ns.root;
    for (const std::string_view part : path_components(e.path)) {
      Slot& s = slot(*node, e.code);
      if (s.below[kind]++ == 0) node->below_mask[kind] |= bit;
      auto& child = node->children[std::string(part)];
      if (!child) {
        child = std::make_unique<Node>();
        child->parent = node;
        child->name = std::string(part);
      }
      node = child.get();
    }
    Slot& s = slot(*node, e.code);
    if (s.here[kind]++ == 0) node->here_mask[kind] |= bit;
    e.node = node;
    e.prev = nullptr;
    e.next = s.first[kind];
    if (s.first[kind]) s.first[kind]->prev = &e;
    s.first[kind] = &e;
  }

  // Removes entry e from the index and prunes nodes nothing uses any more.
  void unlink(Namespace& ns, Entry& e, Kind kind) {
    const CodeMask bit = CodeMask{1} << e.code;
    Node* node = e.node;
    Slot& s = slot(*node, e.code);
    if (e.prev) e.prev->next = e.next;
    else s.first[kind] = e.next;
    if (e.next) e.next->prev = e.prev;
    if (--s.here[kind] == 0) node->here_mask[kind] &= ~bit;
    for (Node* up = node->parent; up; up = up->parent) {
      Slot& us = slot(*up, e.code);
      if (--us.below[kind] == 0) up->below_mask[kind] &= ~bit;
    }
    while (node != &ns.root && node->unused()) {
      Node* parent = node->parent;
      parent->children.erase(node->name);  // destroys node
      node = parent;
    }
  }

  void remove(Namespace& ns, Lock& lock) {
    for (Entry& e : lock.entries) unlink(ns, e, kHeld);
    ns.reentry.erase(lock.reentry_key);
    ns.locks.erase(lock.id);  // destroys lock
  }

  void reap(Namespace& ns, Clock::time_point now) {
    bool removed = false;
    while (!ns.expiry.empty() && ns.expiry.top().at <= now) {
      const ExpiryEntry top = ns.expiry.top();
      ns.expiry.pop();
      const auto it = ns.locks.find(top.id);
      if (it != ns.locks.end() && it->second->fence == top.fence && it->second->expires_at <= now) {
        remove(ns, *it->second);
        removed = true;
      }
    }
    if (removed) ns.changed.notify_all();
  }

  static const Entry* first_with(const Node& node, CodeMask mask, Kind kind) {
    // Lowest conflicting code first: deterministic across backends.
    const auto code = static_cast<std::size_t>(__builtin_ctzll(mask));
    return node.slots[code].first[kind];
  }

  // Descends from `node` to an entry strictly inside it with a code in mask.
  static const Entry* find_below(const Node& node, CodeMask mask, Kind kind) {
    const Node* at = &node;
    while (true) {
      const Node* next = nullptr;
      for (const auto& [name, child] : at->children) {
        if (const CodeMask m = child->here_mask[kind] & mask) return first_with(*child, m, kind);
        if (!next && (child->below_mask[kind] & mask)) next = child.get();
      }
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
    for (const std::string_view part : path_components(t.path)) {
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
  std::shared_mutex namespaces_mutex_;
  std::unordered_map<std::string, std::unique_ptr<Namespace>, StringHash, std::equal_to<>> namespaces_;
};

}  // namespace

std::unique_ptr<LockEngine> make_memory_engine(const MatrixTable& matrix) {
  return std::make_unique<MemoryEngine>(matrix);
}

}  // namespace pathlock::memory
