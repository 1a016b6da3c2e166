// The Redis backend. See redis_engine.cpp for the design and
// docs/lua-protocol.md for the data layout and the Functions library.
#pragma once

#include <pathlock/engine.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace pathlock::redis {

std::unique_ptr<LockEngine> make_redis_engine(const MatrixTable& matrix, const EngineOptions& options);

// Paged listing of the Redis engine, until LockEngine::list_page exists:
// dynamic_cast a Redis engine to PagedLister. Order is by fence; `after` is
// the `next` of the previous page (empty: from the start); every live lock
// appears exactly once across the pages; a page may hold fewer than `limit`
// locks and still have a `next` (bounded work per call); `next` is empty on
// the last page.
struct ListPage {
  std::vector<LockInfo> locks;
  std::string next;
};
class PagedLister {
 public:
  virtual ListPage list_page(std::string_view ns, std::string_view prefix, std::size_t limit,
                             std::string_view after) = 0;

 protected:
  ~PagedLister() = default;
};

}  // namespace pathlock::redis
