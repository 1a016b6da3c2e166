// pathlock/engine.hpp: the lock engine interface and its factory.
//
// A LockEngine grants locks on paths for file operations. A request names a
// namespace (one per project or tenant), an owner, an operation from the
// engine's matrix and one path per role of that operation. The request is
// granted when none of its targets overlaps a held lock whose operation and
// role the matrix says refuses it; all targets are taken at once, or none.
//
// Errors. A refusal is a normal result (AcquireResult::granted == false).
// Bad input (unknown operation or role, missing or repeated role, bad path,
// bad TTL, bad namespace or owner, a folder moved into its own subtree)
// throws InvalidRequest and changes nothing. A backend failure (lost
// connection, a namespace compiled from another matrix) throws BackendError.
//
// Thread safety: every method of every backend may be called concurrently
// from any number of threads.
//
// Backends: pathlock/memory.hpp (embedded), pathlock/redis.hpp (Redis);
// pathlock/factory.hpp picks one by name at run time.
#pragma once

#include <pathlock/matrix_table.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace pathlock {

class Metrics;  // pathlock/metrics.hpp

using Millis = std::chrono::milliseconds;

inline constexpr Millis kMinTtl{1};
inline constexpr Millis kMaxTtl{7LL * 24 * 3600 * 1000};  // one week
inline constexpr std::size_t kMaxNamespaceBytes = 128;
inline constexpr std::size_t kMaxOwnerBytes = 256;

// Bad input: nothing was changed. what() names the offending field.
class InvalidRequest : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// The backend could not do its work (connection lost, timeout, a namespace
// of another data layout, ...). The lock state is unchanged, or the
// operation's effect is unknown when the connection broke mid-call.
class BackendError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One path of a request, with the role it plays in the operation.
struct Target {
  std::string role;  // e.g. "target", "src", "dst"
  std::string path;  // absolute path; see pathlock/path.hpp
};

struct LockRequest {
  std::string ns;     // namespace: 1..128 bytes of [A-Za-z0-9._:-]
  std::string owner;  // who holds the lock: 1..256 bytes of UTF-8, no controls
  std::string op;     // operation name from the matrix, e.g. "move_folder"
  std::vector<Target> targets;  // exactly one per role of `op`
  Millis ttl{30000};  // lease length, kMinTtl..kMaxTtl
  Millis wait{0};     // how long to wait for a refused request (0: answer now)
  // Fairness (docs/design.md#waiting): a fair request is refused by an older
  // waiting request it conflicts with, as by a held lock, and while it waits
  // it holds its own place in line. fair = false lets the request overtake
  // waiters and wait without a place in line (more throughput, may starve).
  bool fair = true;
};

// A granted lock. `token` is the secret needed to release or renew it.
struct Grant {
  std::string id;
  std::string token;
  std::uint64_t fence = 0;  // strictly increasing per namespace, per new lock
  Millis expires_in{0};     // lease left when granted
  std::uint32_t holds = 1;  // reentrant hold count
};

// The held lock that refused a request.
struct Conflict {
  std::string id;
  std::string op;
  std::string role;
  std::string path;
  std::string owner;
  Millis expires_in{0};
  std::string requested_role;  // which target of the request hit it
  std::string requested_path;
  Relation relation = Relation::same;  // held path vs requested path
  // True when the conflict is an older *waiting* request that this one may
  // not overtake (fairness), not a held lock; `id` then names the waiter and
  // `expires_in` is what is left of its reservation.
  bool queued = false;
};

struct AcquireResult {
  bool granted = false;
  Grant grant;        // valid when granted
  Conflict conflict;  // valid when refused
  explicit operator bool() const { return granted; }
};

// A held lock, as listed.
struct LockInfo {
  std::string id;
  std::string owner;
  std::string op;
  std::vector<Target> targets;  // canonical paths, in the matrix's role order
  std::uint64_t fence = 0;
  std::uint32_t holds = 1;
  Millis expires_in{0};
};

// One page of a listing: locks in fence order, and where the next page
// starts.
struct ListPage {
  std::vector<LockInfo> locks;
  std::string next;  // cursor for list_page's `after`; empty on the last page
};

// The most locks one list_page call returns.
inline constexpr std::size_t kMaxListLimit = 10000;

class LockEngine {
 public:
  virtual ~LockEngine() = default;

  // Takes every target of `request`, or none. Returns a grant, or the held
  // lock that refused the request. The same owner asking again for the same
  // operation on the same targets gets the same lock back with holds + 1 and
  // a lease extended to at least now + ttl. With request.wait > 0, a refused
  // request blocks up to that long: it is woken when a release or an expiry
  // could let it in (with a bounded re-check, so a lost wake-up cannot strand
  // it), and returns the last conflict if the deadline passes.
  // Throws InvalidRequest for bad input, BackendError on backend failure.
  virtual AcquireResult acquire(const LockRequest& request) = 0;

  // Drops one hold of lock `id`; the lock goes when no hold is left.
  // Returns false if no live lock has this id and token.
  virtual bool release(std::string_view ns, std::string_view id, std::string_view token) = 0;

  // Extends the lease of lock `id` to now + ttl (the lock's own TTL when
  // ttl is empty). Returns false if no live lock has this id and token.
  virtual bool renew(std::string_view ns, std::string_view id, std::string_view token,
                     std::optional<Millis> ttl = std::nullopt) = 0;

  // Returns the live locks with a target at or inside `prefix`, ordered by
  // fence. Costs O(size of that subtree), never a scan of all locks.
  virtual std::vector<LockInfo> list(std::string_view ns, std::string_view prefix = "/") = 0;

  // One page of list(ns, prefix): at most `limit` (1..kMaxListLimit) locks
  // with fences above the cursor `after` ("" for the first page), in fence
  // order. `next` is empty on the last page; a page may hold fewer than
  // `limit` locks and still have a `next` (a backend bounds the work of one
  // call). Across the pages of one walk every lock that is live throughout
  // it appears exactly once. Throws InvalidRequest for a bad namespace,
  // prefix, limit or cursor.
  virtual ListPage list_page(std::string_view ns, std::string_view prefix, std::size_t limit,
                             std::string_view after) = 0;

  // Administrator's release: drops lock `id` whatever its holds and token.
  // Returns false if there was no such live lock.
  virtual bool force_release(std::string_view ns, std::string_view id) = 0;

  // The rules this engine enforces.
  virtual const MatrixTable& matrix() const = 0;

  // Where this engine counts (pathlock/metrics.hpp), shared with whoever
  // passed it in the options; nullptr when counting is off or the backend
  // does not count.
  virtual std::shared_ptr<Metrics> metrics() const { return nullptr; }
};

}  // namespace pathlock
