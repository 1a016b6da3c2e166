// The read side of the embedded backend: naming a conflict, listing locks
// and waiters, and the blockers of a request. Functions of a namespace's
// state and the matrix; the caller holds the namespace's mutex and reaped
// first (memory_engine.cpp). See reads.hpp.
#include "memory/reads.hpp"

#include <pathlock/path.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace pathlock::memory {

Millis remaining(Clock::time_point at, Clock::time_point now) {
  return std::max(Millis{0}, std::chrono::duration_cast<Millis>(at - now));
}

Relation relation_of(std::string_view held, std::string_view requested) {
  if (held == requested) return Relation::same;
  return path_within(requested, held) ? Relation::held_ancestor : Relation::held_descendant;
}

Blockers blockers_of(const MatrixTable& matrix_, int code) {
  const auto r = static_cast<std::size_t>(code);
  const auto& b = matrix_.blockers;
  return Blockers{b[static_cast<std::size_t>(Relation::held_ancestor)][r], b[static_cast<std::size_t>(Relation::same)][r],
                  b[static_cast<std::size_t>(Relation::held_descendant)][r]};
}

void describe(const MatrixTable& matrix_, const Entry& hit, const core::ResolvedTarget& t, Relation rel,
              Clock::time_point now, Conflict& out) {
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

Blocker blocker_of(const MatrixTable& matrix, const Entry& e, const core::ResolvedTarget& t, Relation rel,
                   Clock::time_point now) {
  Conflict c;
  describe(matrix, e, t, rel, now, c);
  Blocker b{c.queued, c.id, c.owner, c.op, c.role, c.path, c.requested_role, c.requested_path, c.relation};
  if (e.lock) {
    b.fence = e.lock->fence;
    b.holds = e.lock->holds;
  } else {
    b.waited = std::chrono::duration_cast<Millis>(now - e.waiter->since);
  }
  b.expires_in = c.expires_in;
  return b;
}

bool passed_over(const MatrixTable& matrix, const Lock& lock, const Waiter& w) {
  if (w.converts == lock.id) return true;
  for (const Entry& held : lock.entries)
    for (const Entry& wanted : w.entries)
      if (paths_overlap(held.path, wanted.path) &&
          matrix.refuses(relation_of(held.path, wanted.path), held.code, wanted.code))
        return true;
  return false;
}

BlockersPage find_blockers(const MatrixTable& matrix, const NamespaceState& st, const core::ResolvedRequest& req,
                           std::size_t limit, Clock::time_point now, const Lock* own, bool fair) {
  BlockersPage out;
  // What a conversion of `own` is never judged against (convert.hpp).
  const auto skipped = [&](const Entry& e) {
    return own && (e.lock ? e.lock == own : passed_over(matrix, *own, *e.waiter));
  };
  for (const Kind kind : {kHeld, kWaiting}) {
    if (kind == kWaiting && !fair) break;
    for (const core::ResolvedTarget& t : req.targets) {
      const std::size_t from = out.blockers.size();
      st.index.for_each_refusal(t.path, blockers_of(matrix, t.code), kind, [&](const Entry& e, Relation rel) {
        if (skipped(e)) return true;
        if (out.blockers.size() == limit) return !(out.truncated = true);
        out.blockers.push_back(blocker_of(matrix, e, t, rel, now));
        return true;
      });
      core::order_blockers(out.blockers, from);
    }
  }
  return out;
}

const Entry* held_refusal(const MatrixTable& matrix, const NamespaceState& st, const core::ResolvedRequest& req,
                          Clock::time_point now, Conflict& out, PathProbe* probes) {
  for (std::size_t i = 0; i < req.targets.size(); ++i) {
    const core::ResolvedTarget& t = req.targets[i];
    Relation rel = Relation::same;
    if (const Entry* hit = st.index.find_refusal(t.path, blockers_of(matrix, t.code), kHeld, rel,
                                                 probes ? &probes[i] : nullptr)) {
      describe(matrix, *hit, t, rel, now, out);
      return hit;
    }
  }
  return nullptr;
}

bool find_older_waiter(const MatrixTable& matrix, const NamespaceState& st, const core::ResolvedTarget& t,
                       const Waiter* me, Clock::time_point now, Conflict& out,
                       const std::function<bool(const Waiter&)>& skip) {
  if (st.waiters.empty()) return false;
  Relation rel = Relation::same;
  if (!st.index.find_refusal(t.path, blockers_of(matrix, t.code), kWaiting, rel)) return false;
  for (const Waiter& w : st.waiters) {
    if (me && w.seq >= me->seq) break;
    if (skip && skip(w)) continue;
    for (const Entry& e : w.entries) {
      if (!paths_overlap(e.path, t.path)) continue;
      rel = relation_of(e.path, t.path);
      if (!matrix.refuses(rel, e.code, t.code)) continue;
      describe(matrix, e, t, rel, now, out);
      return true;
    }
  }
  return false;
}

std::vector<WaiterInfo> list_waiters(const MatrixTable& matrix_, const NamespaceState& st, const std::string& canonical,
                                     std::size_t limit, Clock::time_point now) {
  std::vector<WaiterInfo> out;
  for (const Waiter& w : st.waiters) {
    if (out.size() == limit) break;
    if (w.deadline <= now) continue;  // its reservation ended: no longer in line
    const bool inside = std::any_of(w.entries.begin(), w.entries.end(),
                                    [&](const Entry& e) { return path_within(e.path, canonical); });
    if (!inside) continue;
    WaiterInfo info;
    info.id = fmt::format("waiter-{}", w.seq);
    info.owner = w.owner;
    info.op = std::string(matrix_.ops[static_cast<std::size_t>(w.op)].name);
    for (const Entry& e : w.entries) info.targets.push_back(Target{std::string(matrix_.role_name_of_code(e.code)), e.path});
    info.waited = std::chrono::duration_cast<Millis>(now - w.since);
    info.expires_in = remaining(w.deadline, now);
    info.converts = w.converts;
    out.push_back(std::move(info));
  }
  return out;
}

std::vector<LockInfo> list_locks(const MatrixTable& matrix_, const NamespaceState& st, const std::string& canonical,
                                 Clock::time_point now) {
  std::vector<LockInfo> out;
  const Node* node = st.index.find(canonical);
  if (!node) return out;
  std::vector<const Lock*> found;
  PathIndex::for_each_entry(*node, kHeld, [&](const Entry& e) { found.push_back(e.lock); });
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

}  // namespace pathlock::memory
