// One blocker (LockEngine::blockers()) as JSON, the same for `pathlock admin
// why` and the console's API: kind "lock" (with fence, holds) or "waiter"
// (with waited_ms), then id, owner, op, role, path, relation,
// requested_role, requested_path, expires_in_ms.
#pragma once

#include <pathlock/engine.hpp>

#include <nlohmann/json.hpp>

namespace pathlock::cli {

inline nlohmann::json blocker_json(const Blocker& b) {
  nlohmann::json j{{"kind", b.queued ? "waiter" : "lock"},
                   {"id", b.id},
                   {"owner", b.owner},
                   {"op", b.op},
                   {"role", b.role},
                   {"path", b.path},
                   {"relation", relation_name(b.relation)},
                   {"requested_role", b.requested_role},
                   {"requested_path", b.requested_path},
                   {"expires_in_ms", b.expires_in.count()}};
  if (b.queued) {
    j["waited_ms"] = b.waited.count();
  } else {
    j["fence"] = b.fence;
    j["holds"] = b.holds;
  }
  return j;
}

}  // namespace pathlock::cli
