// NamespaceRegistry: the namespaces of one embedded engine, by name, and the
// sweep that gives idle namespaces' memory back. Private to src/memory/.
//
// Data layout. A hash map name -> the engine's namespace object (a subclass
// of Tenant), plus a vector of the same objects in creation order for the
// sweep's round robin. A namespace object is never destroyed before the
// registry: callers (and waiting requests, and the per-thread caches) may
// keep a plain pointer to it for as long as the engine lives. What an idle
// namespace costs is therefore its small fixed part: the engine keeps
// everything that grows (the path index, the lock table, the expiry wheel)
// in a state object that Tenant::trim_if_idle() frees.
//
// The sweep. Every creation of a namespace visits kSweepOnCreate namespaces,
// and every kCallsPerSweep-th call of note_call() on a thread visits one, in
// round robin; a visit calls trim_if_idle(), which must only try-lock. So
// every namespace is visited once per (namespaces / kSweepOnCreate)
// creations or (namespaces * kCallsPerSweep) calls, whichever comes first.
// The engine's namespaces take a second chance (trimmed at the first visit
// that finds them idle with no acquire since the visit before), so one that
// became idle is trimmed within two such laps.
//
// Per-thread cache: each thread remembers the last kCacheSize namespaces it
// looked up, keyed by the registry's serial number (never its address, which
// a later registry may reuse), so calls on different namespaces from
// different threads write no shared memory.
//
// Lock order: the registry's mutex before a namespace's mutex; a visit of the
// sweep only try-locks a namespace, and never under the registry's mutex.
// Thread safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace pathlock::memory {

// What the registry keeps of one namespace.
class Tenant {
 public:
  virtual ~Tenant() = default;
  // Frees what the namespace holds beyond its fixed part, if it has no lock
  // and no waiter (and, at the tenant's choice, was not used since the last
  // visit), without blocking (try-lock). Returns true if it did.
  virtual bool trim_if_idle() = 0;
};

class NamespaceRegistry {
 public:
  static constexpr std::size_t kSweepOnCreate = 4;
  static constexpr std::uint32_t kCallsPerSweep = 16;

  using Factory = std::function<std::unique_ptr<Tenant>()>;
  explicit NamespaceRegistry(Factory make);
  NamespaceRegistry(const NamespaceRegistry&) = delete;
  NamespaceRegistry& operator=(const NamespaceRegistry&) = delete;

  // The namespace `name`, or null if it was never created.
  Tenant* find(std::string_view name);
  // The namespace `name`, created (and a sweep step taken) if needed.
  Tenant& get(std::string_view name);
  // Counts one call of the engine on this thread; every kCallsPerSweep-th
  // one visits a namespace.
  void note_call();
  // Visits `visits` namespaces in round robin.
  void sweep(std::size_t visits);
  std::size_t size() const;
  // Calls f(Tenant&) for every namespace, under the registry's shared lock
  // (f must not call the registry).
  template <class F>
  void for_each(F&& f) const {
    std::shared_lock read(mutex_);
    for (Tenant* t : order_) f(*t);
  }

 private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  const Factory make_;
  const std::uint64_t serial_;  // identifies this registry in thread caches
  mutable std::shared_mutex mutex_;
  std::unordered_map<std::string, std::unique_ptr<Tenant>, Hash, std::equal_to<>> by_name_;
  std::vector<Tenant*> order_;  // creation order, for the sweep
  std::atomic<std::size_t> sweep_next_{0};
};

}  // namespace pathlock::memory
