// pathlock/admin.hpp: the operator's questions, answered through the
// engine's public calls (blockers, waiters), the same on every backend.
// Programs (pathlock admin, the console) and services ask them here, so no
// program reads a backend's records itself.
#pragma once

#include <pathlock/engine.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace pathlock::admin {

// One blocker of a `why` question, and the operations it refuses there
// (when the question named no operation).
struct WhyBlocker {
  Blocker blocker;
  std::vector<std::string> refuses;
};

struct WhyAnswer {
  std::vector<WhyBlocker> blockers;
  bool truncated = false;  // more than `limit` blockers
};

// Why is a request blocked now? A dry run (LockEngine::blockers), taking and
// changing nothing.
//
// - `op` names the operation and `paths` its paths, one per role in the
//   matrix's role order. The request itself is never its own blocker: a
//   waiting request with this very operation and these very paths (the
//   stuck request an operator asks about, or its twin) is left out.
// - `op` empty: what refuses *any* operation on `paths` now. With one path,
//   every operation is asked with that path in each of its roles (a move
//   whose source or destination is the path is asked too; its other path is
//   one that overlaps nothing), and each blocker is given once with the
//   operations it refuses there. With two paths, the two-path operations.
//
// At most `limit` (1..kMaxBlockers) blockers. Throws InvalidRequest for an
// unknown operation, a wrong number of paths or a bad path, and what
// blockers() throws.
WhyAnswer why(LockEngine& engine, std::string_view ns, std::string_view op, const std::vector<std::string>& paths,
              std::size_t limit = 100);

}  // namespace pathlock::admin
