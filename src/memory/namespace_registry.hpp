// NamespaceRegistry: the namespaces of one embedded engine, by name, and the
// sweep that gives idle namespaces' memory back. Private to src/memory/.
//
// Data layout. A hash map name -> the engine's namespace object (a T: the
// registry is a template over its one tenant type, which provides a default
// constructor and `bool trim_if_idle()`, see below), plus a vector of the
// same objects in creation order for the sweep's round robin. A namespace object is never destroyed before the
// registry: callers (and waiting requests, and the per-thread caches) may
// keep a plain pointer to it for as long as the engine lives. What an idle
// namespace costs is therefore its small fixed part: the engine keeps
// everything that grows (the path index, the lock table, the expiry wheel)
// in a state object that T::trim_if_idle() frees.
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

#include <array>
#include <atomic>
#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace pathlock::memory {

// The pace of the sweep (see above).
inline constexpr std::size_t kSweepOnCreate = 4;
inline constexpr std::uint32_t kCallsPerSweep = 16;

// What the registry keeps of one namespace: trim_if_idle() frees what the
// namespace holds beyond its fixed part, if it has no lock and no waiter
// (and, at the tenant's choice, was not used since the last visit), without
// blocking (try-lock), and returns true if it did.
template <class T>
concept Tenant = std::default_initializable<T> && requires(T& t) {
  { t.trim_if_idle() } -> std::same_as<bool>;
};

namespace detail {
inline std::atomic<std::uint64_t> registry_serials{0};
inline thread_local std::uint32_t calls_on_thread = 0;
}  // namespace detail

template <Tenant T>
class NamespaceRegistry {
 public:
  NamespaceRegistry() = default;

  // The namespace `name`, or null if it was never created.
  T* find(std::string_view name) {
    for (const CacheEntry& e : tls_cache_)
      if (e.registry == serial_ && e.name == name) return e.tenant;
    T* tenant = nullptr;
    {
      std::shared_lock read(mutex_);
      const auto it = by_name_.find(name);
      if (it == by_name_.end()) return nullptr;
      tenant = it->second.get();
    }
    CacheEntry& slot = tls_cache_[tls_cache_next_++ % kCacheSize];
    slot.registry = serial_;
    slot.name.assign(name);
    slot.tenant = tenant;
    return tenant;
  }

  // The namespace `name`, created (and a sweep step taken) if needed.
  T& get(std::string_view name) {
    if (T* t = find(name)) return *t;
    T* tenant = nullptr;
    bool created = false;
    {
      std::unique_lock write(mutex_);
      auto& slot = by_name_[std::string(name)];
      if (!slot) {
        slot = std::make_unique<T>();
        order_.push_back(slot.get());
        created = true;
      }
      tenant = slot.get();
    }
    if (created) sweep(kSweepOnCreate);
    return *tenant;
  }

  // Counts one call of the engine on this thread; every kCallsPerSweep-th
  // one visits a namespace.
  void note_call() {
    if (++detail::calls_on_thread % kCallsPerSweep == 0) sweep(1);
  }

  // Visits `visits` namespaces in round robin.
  void sweep(std::size_t visits) {
    for (std::size_t i = 0; i < visits; ++i) {
      T* tenant = nullptr;
      {
        std::shared_lock read(mutex_);
        if (order_.empty()) return;
        tenant = order_[sweep_next_.fetch_add(1, std::memory_order_relaxed) % order_.size()];
      }
      tenant->trim_if_idle();  // never destroyed before the registry: safe unlocked
    }
  }

  std::size_t size() const {
    std::shared_lock read(mutex_);
    return by_name_.size();
  }

  // Calls f(T&) for every namespace, under the registry's shared lock
  // (f must not call the registry).
  template <class F>
  void for_each(F&& f) const {
    std::shared_lock read(mutex_);
    for (T* t : order_) f(*t);
  }

  // Callers and the threads' caches keep plain pointers into it.
  NamespaceRegistry(const NamespaceRegistry&) = delete;
  NamespaceRegistry& operator=(const NamespaceRegistry&) = delete;

 private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct CacheEntry {
    std::uint64_t registry = 0;
    std::string name;
    T* tenant = nullptr;
  };
  static constexpr std::size_t kCacheSize = 8;
  static inline thread_local std::array<CacheEntry, kCacheSize> tls_cache_{};
  static inline thread_local std::size_t tls_cache_next_ = 0;

  const std::uint64_t serial_ = ++detail::registry_serials;  // identifies this registry in thread caches
  mutable std::shared_mutex mutex_;
  std::unordered_map<std::string, std::unique_ptr<T>, Hash, std::equal_to<>> by_name_;
  std::vector<T*> order_;  // creation order, for the sweep
  std::atomic<std::size_t> sweep_next_{0};
};

}  // namespace pathlock::memory
