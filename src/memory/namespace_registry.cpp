// The namespace registry of the embedded backend; the design is in
// namespace_registry.hpp.
#include "memory/namespace_registry.hpp"

#include <array>
#include <mutex>

namespace pathlock::memory {
namespace {

struct CacheEntry {
  std::uint64_t registry = 0;
  std::string name;
  Tenant* tenant = nullptr;
};
constexpr std::size_t kCacheSize = 8;
thread_local std::array<CacheEntry, kCacheSize> tls_cache;
thread_local std::size_t tls_cache_next = 0;
thread_local std::uint32_t tls_calls = 0;
std::atomic<std::uint64_t> registry_serials{0};

}  // namespace

NamespaceRegistry::NamespaceRegistry(Factory make) : make_(std::move(make)), serial_(++registry_serials) {}

Tenant* NamespaceRegistry::find(std::string_view name) {
  for (const CacheEntry& e : tls_cache)
    if (e.registry == serial_ && e.name == name) return e.tenant;
  Tenant* tenant = nullptr;
  {
    std::shared_lock read(mutex_);
    const auto it = by_name_.find(name);
    if (it == by_name_.end()) return nullptr;
    tenant = it->second.get();
  }
  CacheEntry& slot = tls_cache[tls_cache_next++ % kCacheSize];
  slot.registry = serial_;
  slot.name.assign(name);
  slot.tenant = tenant;
  return tenant;
}

Tenant& NamespaceRegistry::get(std::string_view name) {
  if (Tenant* t = find(name)) return *t;
  Tenant* tenant = nullptr;
  bool created = false;
  {
    std::unique_lock write(mutex_);
    auto& slot = by_name_[std::string(name)];
    if (!slot) {
      slot = make_();
      order_.push_back(slot.get());
      created = true;
    }
    tenant = slot.get();
  }
  if (created) sweep(kSweepOnCreate);
  return *tenant;
}

void NamespaceRegistry::note_call() {
  if (++tls_calls % kCallsPerSweep == 0) sweep(1);
}

void NamespaceRegistry::sweep(std::size_t visits) {
  for (std::size_t i = 0; i < visits; ++i) {
    Tenant* tenant = nullptr;
    {
      std::shared_lock read(mutex_);
      if (order_.empty()) return;
      tenant = order_[sweep_next_.fetch_add(1, std::memory_order_relaxed) % order_.size()];
    }
    tenant->trim_if_idle();  // never destroyed before the registry: safe unlocked
  }
}

std::size_t NamespaceRegistry::size() const {
  std::shared_lock read(mutex_);
  return by_name_.size();
}

}  // namespace pathlock::memory
