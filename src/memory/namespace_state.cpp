// See namespace_state.hpp.
#include "memory/namespace_state.hpp"

#include "memory/reads.hpp"

#include <iterator>

#include <utility>

namespace pathlock::memory {

bool Namespace::trim_if_idle() {
  std::unique_lock guard(mutex, std::try_to_lock);
  if (!guard || !state) return false;
  const bool recently = std::exchange(acquired_since_visit, false);
  if (recently || !state->idle()) return false;
  state.reset();
  ++trims;
  return true;
}

NamespaceState& Namespace::use(Clock::time_point now) {
  if (!state) state = std::make_unique<NamespaceState>(now);
  return *state;
}

void Namespace::notify() {
  ++generation;
  changed.notify_all();
}

Waiter* enqueue(Namespace& ns, NamespaceState& st, const core::ResolvedRequest& req, const std::string& owner,
                Clock::time_point now, Clock::time_point deadline) {
  Waiter& w = st.waiters.emplace_back();
  w.in_line = std::prev(st.waiters.end());
  w.seq = ns.next_waiter++;
  w.owner = owner;
  w.op = req.op;
  w.since = now;
  w.deadline = deadline;
  w.entries.resize(req.targets.size());
  for (std::size_t i = 0; i < req.targets.size(); ++i) {
    Entry& e = w.entries[i];
    e.waiter = &w;
    e.code = req.targets[i].code;
    e.path = req.targets[i].path;
    st.index.link(e, kWaiting);
  }
  return &w;
}

void dequeue(Namespace& ns, NamespaceState& st, Waiter& w) {
  for (Entry& e : w.entries) st.index.unlink(e, kWaiting);
  st.waiters.erase(w.in_line);
  ns.notify();  // younger waiters may go now
}

void link_targets(NamespaceState& st, Lock& lock, core::ResolvedRequest& req, const PathProbe* probes) {
  lock.entries.clear();
  lock.entries.resize(req.targets.size());
  for (std::size_t i = 0; i < req.targets.size(); ++i) {
    Entry& e = lock.entries[i];
    e.lock = &lock;
    e.code = req.targets[i].code;
    e.path = std::move(req.targets[i].path);
    st.index.link(e, kHeld, probes ? &probes[i] : nullptr);
  }
}

bool same_targets(const Lock& lock, const core::ResolvedRequest& req) {
  if (lock.op != req.op || lock.entries.size() != req.targets.size()) return false;
  for (std::size_t i = 0; i < lock.entries.size(); ++i)
    if (lock.entries[i].path != req.targets[i].path) return false;
  return true;
}

Grant grant_of(const Lock& lock, Clock::time_point now) {
  return Grant{lock.id, lock.token, lock.fence, remaining(lock.expires_at, now), lock.holds};
}

}  // namespace pathlock::memory
