// The memory backend's Inspector and the operator's input checks
// (pathlock/admin.hpp); admin::make_inspector is in factory.cpp's backend table.
#include <pathlock/admin.hpp>
#include <pathlock/redis_admin.hpp>

#include "core/request.hpp"

#include <algorithm>

namespace pathlock {
namespace admin {
namespace {

// The memory backend keeps its namespaces in its engine's process: a new
// Inspector sees none.
class MemoryInspector final : public Inspector {
 public:
  void for_each_namespace(const std::function<bool(const std::string&)>&) override {}
  NamespaceStatus status(std::string_view ns) override {
    check_namespace(ns);
    NamespaceStatus s;
    s.ns = std::string(ns);
    return s;
  }
  bool exists(std::string_view) override { return false; }
};

}  // namespace

// The memory backend's Inspector (factory.cpp's table names it).
std::unique_ptr<Inspector> make_memory_inspector() { return std::make_unique<MemoryInspector>(); }

NamespaceList list_namespaces(Inspector& inspector, std::size_t limit) {
  NamespaceList out;
  inspector.for_each_namespace([&](const std::string& ns) {
    if (out.namespaces.size() == limit) return !(out.truncated = true);
    out.namespaces.push_back(ns);
    return true;
  });
  std::sort(out.namespaces.begin(), out.namespaces.end());
  out.namespaces.erase(std::unique(out.namespaces.begin(), out.namespaces.end()), out.namespaces.end());
  return out;
}

void check_namespace(std::string_view ns) { core::check_namespace(ns); }
void check_lock_id(std::string_view id) { core::check_lock_id(id); }
std::string log_escape(std::string_view text) { return core::log_escape(text); }

}  // namespace admin

}  // namespace pathlock

#ifndef PATHLOCK_WITH_REDIS
namespace pathlock::redis_admin {
[[noreturn]] static void no_redis() {
  throw InvalidRequest("this build of pathlock has no Redis backend (PATHLOCK_WITH_REDIS=OFF)");
}
std::vector<LibraryLoad> load_library(const RedisOptions&) { no_redis(); }
std::vector<ServerLibrary> list_libraries(const RedisOptions&) { no_redis(); }
std::string key_pattern(std::string_view) { no_redis(); }
}  // namespace pathlock::redis_admin
#endif
