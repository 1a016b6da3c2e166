// pathlock/admin.hpp: the operator's questions, answered through the
// engine's public calls (blockers, waiters), the same on every backend.
// Programs (pathlock admin, the console) and services ask them here, so no
// program reads a backend's records itself.
#pragma once

#include <pathlock/engine.hpp>
#include <pathlock/factory.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
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

// Why is a conversion of lock `id` to `op` on `paths` blocked now? (added in
// 1.1) LockEngine::blockers of that conversion (fair): never the lock
// itself, nor its own place in line, nor a place its lock refuses. Each
// blocker's `refuses` is {op}. Throws as why() does for a named operation,
// and InvalidRequest for a malformed id.
WhyAnswer why_conversion(LockEngine& engine, std::string_view ns, std::string_view id, std::string_view op,
                         const std::vector<std::string>& paths, std::size_t limit = 100);

// One matrix in use in a namespace (NamespaceStatus::matrices).
struct MatrixInUse {
  int tag = 0;  // its small number in the namespace (Redis layouts 3 and 4); 0: none
  std::string fingerprint;
  std::string name, version;  // empty where the backend does not record them
  // Its live locks and places in line (ended ones not counted, reaped or
  // not); nullopt where the backend records no counts (Redis layouts 1, 2).
  std::optional<std::uint64_t> locks, waiters;
};

// What a backend holds for one namespace, for an operator during a rolling
// deploy: its layout, its last fence, and the matrices in use (those with a
// live lock or place in line; Redis layouts 1 and 2: the one bound matrix).
struct NamespaceStatus {
  std::string ns;
  bool exists = false;  // false: never used on this backend (the rest is empty)
  int layout = 0;       // the data layout that wrote it (docs/lua-protocol.md#versions; PostgreSQL: its schema's)
  std::optional<std::uint64_t> fence;
  std::vector<MatrixInUse> matrices;  // by tag, else by fingerprint
};

// The reads an operator makes of a backend beside its engine: which
// namespaces exist and what each holds. Read-only: a user with read rights
// only may use it (docs/operations.md); it writes and reaps nothing.
// Thread safety: one thread at a time.
class Inspector {
 public:
  virtual ~Inspector() = default;
  // Calls each(ns) for every namespace of the backend, in no particular
  // order (Redis: SCAN on every master; a namespace may come twice while a
  // Cluster reshards), until it returns false. Bounded work per step.
  virtual void for_each_namespace(const std::function<bool(const std::string&)>& each) = 0;
  // The status of `ns`. Throws InvalidRequest for a malformed name.
  virtual NamespaceStatus status(std::string_view ns) = 0;
  // Whether `ns` was ever used on the backend (cheaper than status).
  virtual bool exists(std::string_view ns) = 0;
};

// An Inspector of options.backend, with that backend's connection options
// (url, password, TLS, timeouts: its matrix is not used). The memory
// backend's is of a new engine of its own (no namespace). Throws what the
// backend's engine factory throws for bad options or an unusable server.
std::unique_ptr<Inspector> make_inspector(const EngineOptions& options);

// The namespaces, sorted and each once, at most `limit` of them (the first
// `limit` found: `truncated` says when there were more).
struct NamespaceList {
  std::vector<std::string> namespaces;
  bool truncated = false;
};
NamespaceList list_namespaces(Inspector& inspector, std::size_t limit);

// Checks of an operator's input, as the engines check them: throw
// InvalidRequest for a malformed namespace or lock id.
void check_namespace(std::string_view ns);
void check_lock_id(std::string_view id);
// `text` fit for one log line: control characters, quotes and backslashes
// escaped, so that a value never forges a line or a terminal escape.
std::string log_escape(std::string_view text);

}  // namespace pathlock::admin
