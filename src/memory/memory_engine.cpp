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
// Invariants (checked by the tests through behaviour):
//   I1 here/below counters equal the number of live targets they describe;
//      every node with no children and zero counters is removed.
//   I2 no two live locks have targets that overlap with a deny verdict, in
//      the order they were granted (the held one refuses the later one).
//   I3 an expired lock is never reported, listed or counted as a conflict:
//      every public call first reaps the leases that ended.
//
// Locking: one std::mutex per Namespace guards all of it; the map of
// namespaces is guarded by a shared_mutex (readers for lookups, a writer only
// to add a namespace). Lock order: namespaces_mutex_ before Namespace::mutex,
// never the other way round. Time: std::chrono::steady_clock.
#include "memory/memory_engine.hpp"

#include "core/request.hpp"

#include <pathlock/path.hpp>

#include <algorithm>
#include <mutex>
#include <queue>
#include <shared_mutex>
#include <unordered_map>

namespace pathlock::memory {
namespace {

using Clock = std::chrono::steady_clock;

struct Node;
struct Lock;

// One target of a lock, linked into its node's slot list.
struct Entry {
  Lock* lock = nullptr;
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

struct Slot {
  std::uint32_t here = 0;
  std::uint32_t below = 0;
  Entry* first = nullptr;
};

struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct Node {
  Node* parent = nullptr;
  std::string name;
  std::unordered_map<std::string, std::unique_ptr<Node>, StringHash, std::equal_to<>> children;
  CodeMask here_mask = 0;
  CodeMask below_mask = 0;
  std::vector<Slot> slots;  // sized code_count on first use

  Node* child(std::string_view n) const {
    const auto it = children.find(n);
    return it == children.end() ? nullptr : it->second.get();
  }
  bool unused() const { return here_mask == 0 && below_mask == 0 && children.empty(); }
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
    if (request.wait > Millis{0}) throw InvalidRequest("wait is not supported yet; use wait=0");
    Namespace& ns = get_namespace(request.ns);
    std::lock_guard guard(ns.mutex);
    const Clock::time_point now = Clock::now();
    reap(ns, now);

    AcquireResult result;
    if (const auto it = ns.reentry.find(req.reentry_key); it != ns.reentry.end()) {
      Lock& lock = *it->second;
      ++lock.holds;
      extend(ns, lock, std::max(lock.expires_at, now + request.ttl));
      lock.ttl = request.ttl;
      result.granted = true;
      result.grant = grant_of(lock, now);
      return result;
    }
    for (const core::ResolvedTarget& t : req.targets)
      if (find_conflict(ns, t, now, result.conflict)) return result;

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
      link(ns, e);
    }
    ns.expiry.push(ExpiryEntry{lock->expires_at, lock->fence, lock->id});
    ns.reentry.emplace(lock->reentry_key, lock.get());
    result.granted = true;
    result.grant = grant_of(*lock, now);
    ns.locks.emplace(lock->id, std::move(lock));
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
    if (--lock->holds == 0) remove(*ns, *lock);
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
    return true;
  }

 private:
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
  void link(Namespace& ns, Entry& e) {
    const CodeMask bit = CodeMask{1} << e.code;
    Node* node = &ns.root;
    for (const std::string_view part : path_components(e.path)) {
      Slot& s = slot(*node, e.code);
      if (s.below++ == 0) node->below_mask |= bit;
      auto& child = node->children[std::string(part)];
      if (!child) {
        child = std::make_unique<Node>();
        child->parent = node;
        child->name = std::string(part);
      }
      node = child.get();
    }
    Slot& s = slot(*node, e.code);
    if (s.here++ == 0) node->here_mask |= bit;
    e.node = node;
    e.prev = nullptr;
    e.next = s.first;
    if (s.first) s.first->prev = &e;
    s.first = &e;
  }

  // Removes entry e from the index and prunes nodes nothing uses any more.
  void unlink(Namespace& ns, Entry& e) {
    const CodeMask bit = CodeMask{1} << e.code;
    Node* node = e.node;
    Slot& s = slot(*node, e.code);
    if (e.prev) e.prev->next = e.next;
    else s.first = e.next;
    if (e.next) e.next->prev = e.prev;
    if (--s.here == 0) node->here_mask &= ~bit;
    for (Node* up = node->parent; up; up = up->parent) {
      Slot& us = slot(*up, e.code);
      if (--us.below == 0) up->below_mask &= ~bit;
    }
    while (node != &ns.root && node->unused()) {
      Node* parent = node->parent;
      parent->children.erase(node->name);  // destroys node
      node = parent;
    }
  }

  void remove(Namespace& ns, Lock& lock) {
    for (Entry& e : lock.entries) unlink(ns, e);
    ns.reentry.erase(lock.reentry_key);
    ns.locks.erase(lock.id);  // destroys lock
  }

  void reap(Namespace& ns, Clock::time_point now) {
    while (!ns.expiry.empty() && ns.expiry.top().at <= now) {
      const ExpiryEntry top = ns.expiry.top();
      ns.expiry.pop();
      const auto it = ns.locks.find(top.id);
      if (it != ns.locks.end() && it->second->fence == top.fence && it->second->expires_at <= now)
        remove(ns, *it->second);
    }
  }

  const Entry* first_with(const Node& node, CodeMask mask) const {
    // Lowest conflicting code first: deterministic across backends.
    const int code = __builtin_ctzll(mask);
    return node.slots[static_cast<std::size_t>(code)].first;
  }

  // Descends from `node` to a target strictly inside it with a code in mask.
  const Entry* find_below(const Node& node, CodeMask mask) const {
    const Node* at = &node;
    while (true) {
      const Node* next = nullptr;
      for (const auto& [name, child] : at->children) {
        if (child->here_mask & mask) return first_with(*child, child->here_mask & mask);
        if (!next && (child->below_mask & mask)) next = child.get();
      }
      if (!next) return nullptr;  // unreachable while I1 holds
      at = next;
    }
  }

  bool find_conflict(Namespace& ns, const core::ResolvedTarget& t, Clock::time_point now, Conflict& out) const {
    const auto r = static_cast<std::size_t>(t.code);
    const CodeMask anc = matrix_.blockers[static_cast<std::size_t>(Relation::held_ancestor)][r];
    const Entry* hit = nullptr;
    Relation rel = Relation::same;
    const Node* node = &ns.root;
    for (const std::string_view part : path_components(t.path)) {
      if (const CodeMask m = node->here_mask & anc) {
        hit = first_with(*node, m);
        rel = Relation::held_ancestor;
        break;
      }
      node = node->child(part);
      if (!node) return false;
    }
    if (!hit) {
      if (const CodeMask m = node->here_mask & matrix_.blockers[static_cast<std::size_t>(Relation::same)][r]) {
        hit = first_with(*node, m);
        rel = Relation::same;
      } else if (const CodeMask d = node->below_mask &
                                    matrix_.blockers[static_cast<std::size_t>(Relation::held_descendant)][r]) {
        hit = find_below(*node, d);
        rel = Relation::held_descendant;
      }
    }
    if (!hit) return false;
    const Lock& lock = *hit->lock;
    out.id = lock.id;
    out.op = std::string(matrix_.ops[static_cast<std::size_t>(lock.op)].name);
    out.role = std::string(matrix_.role_name_of_code(hit->code));
    out.path = hit->path;
    out.owner = lock.owner;
    out.expires_in = remaining(lock.expires_at, now);
    out.requested_role = std::string(matrix_.role_name_of_code(t.code));
    out.requested_path = t.path;
    out.relation = rel;
    return true;
  }

  static void collect(const Node& node, std::vector<const Lock*>& out) {
    for (const Slot& s : node.slots)
      for (const Entry* e = s.first; e; e = e->next) out.push_back(e->lock);
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
