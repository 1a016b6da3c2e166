// pathlock/engine.hpp: the lock engine interface, its requests and results
// (each backend's factory is in its own header: memory.hpp, redis.hpp,
// postgres.hpp; make_engine, by configuration, in factory.hpp).
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
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

namespace pathlock {

// The backends behind LockEngine: the embedded one, Redis and PostgreSQL
// (make_engine's choice, factory.hpp; the `backend` label of the metrics'
// call series, metrics.hpp).
enum class Backend { memory, redis, postgres };

class Metrics;  // pathlock/metrics.hpp

using Millis = std::chrono::milliseconds;

inline constexpr Millis kMinTtl{1};
inline constexpr Millis kMaxTtl{7LL * 24 * 3600 * 1000};  // one week
inline constexpr std::size_t kMaxNamespaceBytes = 128;
inline constexpr std::size_t kMaxOwnerBytes = 256;
// Lock ids: 1..kMaxIdBytes of [A-Za-z0-9-]; tokens: 1..kMaxTokenBytes bytes.
inline constexpr std::size_t kMaxIdBytes = 64;
inline constexpr std::size_t kMaxTokenBytes = 256;
// Idempotency keys: 1..kMaxIdempotencyKeyBytes of [A-Za-z0-9._:-].
inline constexpr std::size_t kMaxIdempotencyKeyBytes = 128;

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

struct Grant;

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

  // Reentry by proof (docs/design.md#lock-identity). Both empty: a new lock,
  // judged against every held lock, the owner's own included. Both set: the
  // request re-enters the live lock `reenter_id` whose token is
  // `reenter_token`, with the same operation and targets; it gets that lock
  // with holds + 1 and a lease of at least now + ttl. When no live lock has
  // this id and token, the request is refused with
  // AcquireResult::not_holder (nothing about any lock is revealed); another
  // operation or other targets than the proven lock's are InvalidRequest.
  // A reentry never waits and never takes a place in line.
  std::string reenter_id{};
  std::string reenter_token{};
  // Idempotent retries: a key chosen by the caller (1..128 of
  // [A-Za-z0-9._:-]; a fresh random one per logical acquire) and stored with
  // the lock it creates. A request whose key names a live lock of this
  // namespace with the same owner, operation and targets gets that lock back
  // unchanged (same id, token, fence and holds; its lease extended to at
  // least now + ttl): this is how to retry an acquire whose reply was lost.
  // The key of a live lock with another owner, operation or targets is
  // InvalidRequest. Excludes reenter_id. Empty: no key.
  std::string idempotency_key{};

  // Sets reenter_id and reenter_token from a grant of this engine.
  LockRequest& reenter(const Grant& grant);
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

// What an acquire came to: exactly one of these (AcquireResult::outcome).
enum class AcquireOutcome {
  // Refused by a conflicting lock: `conflict` names it.
  conflicted,
  // Granted: `grant` is the lock.
  granted,
  // Refused because the request's reenter_id and reenter_token name no live
  // lock (unknown or expired id, or a wrong token); `conflict` is empty.
  not_holder,
  // The caller's stop token was triggered before the call returned
  // (acquire(request, stop)): the request left the line and holds nothing (a
  // grant that raced the stop was released); `conflict` is the last refusal
  // seen, if any.
  cancelled,
  // Refused because granting (or queueing) the request would take its
  // namespace or its owner over a limit the operator set (set_limits):
  // `limit` names the limit and the count; nothing was taken, no place in
  // line kept. A waiting request is answered at once (a limit is not a
  // lock that ends). Added in 1.1.
  over_limit,
  // A conversion only (LockEngine::convert): the lock that refuses it is
  // itself waiting to convert, and its new operation is refused by the
  // converting lock as it is now. Both would wait for each other, so the
  // later one is answered at once; `conflict` names the other lock, and the
  // converting lock is unchanged. Added in 1.1.
  would_deadlock,
};

// The limits of a namespace (docs/operations.md#limits-per-namespace). Each
// empty: no limit. All count live data only: a lock whose lease ended, or a
// place whose reservation ended, no longer counts.
struct Limits {
  std::optional<std::uint64_t> locks;        // live locks in the namespace
  std::optional<std::uint64_t> places;       // places in line (fair waiting requests) in the namespace
  std::optional<std::uint64_t> owner_locks;  // live locks of one owner in the namespace
  bool operator==(const Limits&) const = default;
};
// The largest value of a limit.
inline constexpr std::uint64_t kMaxLimit = 1'000'000'000;

// Which limit refused a request.
enum class LimitKind { locks, places, owner_locks };
// "locks", "places", "owner_locks": the names of docs, replies and metrics.
std::string_view limit_name(LimitKind kind) noexcept;

// A request refused by a limit (AcquireOutcome::over_limit).
struct LimitRefusal {
  LimitKind limit = LimitKind::locks;
  std::uint64_t max = 0;    // the limit in force
  std::uint64_t count = 0;  // what the namespace (the owner) has now, at least `max`
};

struct AcquireResult {
  AcquireOutcome outcome = AcquireOutcome::conflicted;
  Grant grant;        // valid when granted()
  Conflict conflict;  // valid when conflicted() (and see cancelled)
  LimitRefusal limit;  // valid when over_limit()
  bool granted() const noexcept { return outcome == AcquireOutcome::granted; }
  bool over_limit() const noexcept { return outcome == AcquireOutcome::over_limit; }
  bool conflicted() const noexcept { return outcome == AcquireOutcome::conflicted; }
  bool not_holder() const noexcept { return outcome == AcquireOutcome::not_holder; }
  bool cancelled() const noexcept { return outcome == AcquireOutcome::cancelled; }
  bool would_deadlock() const noexcept { return outcome == AcquireOutcome::would_deadlock; }
  explicit operator bool() const noexcept { return granted(); }
};

// A conversion (LockEngine::convert, added in 1.1; docs/design.md#conversion):
// the live lock `id` with token `token` gets a new operation and new targets
// in one atomic step, or stays exactly as it was.
struct ConvertRequest {
  std::string ns;
  std::string id;     // the lock's proof, as granted
  std::string token;
  std::string op;               // the new operation, any of the matrix
  std::vector<Target> targets;  // its targets: exactly one per role of `op`
  Millis ttl{30000};  // the lease on success: now + ttl
  Millis wait{0};     // how long to wait while refused, holding the lock as it is
  bool fair = true;   // as LockRequest::fair: waits with a place in line
  // Retries of a conversion whose reply was lost: a conversion whose key
  // is the key of the conversion that made the lock what it is now (same
  // operation and targets) gets the lock back unchanged (lease extended).
  // 1..128 of [A-Za-z0-9._:-]; empty: no key.
  std::string idempotency_key{};

  // A conversion of the lock `grant` names.
  static ConvertRequest of(std::string ns, const Grant& grant, std::string op, std::vector<Target> targets);
};

inline LockRequest& LockRequest::reenter(const Grant& grant) {
  reenter_id = grant.id;
  reenter_token = grant.token;
  return *this;
}

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

// How long a Redis engine keeps the default limits it read (set_default_limits).
inline constexpr Millis kLimitsRefresh{5000};

// The most locks one list_page call returns.
inline constexpr std::size_t kMaxListLimit = 10000;

// One held lock or waiting request that refuses a request now (blockers()).
struct Blocker {
  bool queued = false;         // a waiting request (fairness), not a held lock
  std::string id;              // the lock's id, or the waiter's place-in-line id
  std::string owner;
  std::string op;
  std::string role;            // the blocker's role whose path overlaps
  std::string path;            // that path
  std::string requested_role;  // the request's target it refuses
  std::string requested_path;
  Relation relation = Relation::same;  // blocker's path vs requested path
  std::uint64_t fence = 0;             // held locks: their fence; waiters: 0
  std::uint32_t holds = 0;             // held locks: their holds; waiters: 0
  Millis expires_in{0};  // held: lease left; waiter: what is left of its reservation
  Millis waited{0};      // waiters: how long they have waited so far; held: 0
};

// The answer of blockers(): in the request's role order, held locks before
// waiters, then strict ancestors (root first), the path, descendants.
struct BlockersPage {
  std::vector<Blocker> blockers;
  bool truncated = false;  // more blockers exist than `limit`
};

// A waiting request with a place in line, as listed by waiters().
struct WaiterInfo {
  std::string id;
  std::string owner;
  std::string op;
  std::vector<Target> targets;  // canonical paths, in the matrix's role order
  Millis waited{0};             // since it took its place
  Millis expires_in{0};         // what is left of its reservation
  // A waiting conversion (added in 1.1): the id of the lock it converts (op
  // and targets: what it converts to). Empty otherwise.
  std::string converts{};
};

// The limits of one namespace and its use of them (LockEngine::limits).
struct LimitsStatus {
  Limits defaults;                  // the default for every namespace (set_default_limits)
  std::optional<Limits> overrides;  // this namespace's own, replacing the default whole (set_limits)
  Limits effective;                 // what is enforced: overrides, else defaults
  std::uint64_t locks = 0;          // live locks now
  std::uint64_t places = 0;         // places in line now
  std::uint64_t owner_locks = 0;    // the live locks of the owner that has the most
  std::string owner;                // that owner (empty when no lock is held)
};

// The most blockers one blockers() call returns, and the most waiters one
// waiters() call returns.
inline constexpr std::size_t kMaxBlockers = 1000;
inline constexpr std::size_t kMaxWaiters = 1000;

// The interface of every backend. The shorter forms of renew, list,
// blockers and waiters are not virtual: each calls the full form with the
// documented default (virtual functions take no default arguments, so an
// override cannot disagree with them). This library's backends derive from
// an internal base that checks input and counts once (src/README.md).
class LockEngine {
 public:
  virtual ~LockEngine() = default;

  // Takes every target of `request`, or none. Returns a grant, or the held
  // lock that refused the request. Every request is judged against every
  // held lock, including the locks of its own owner: an owner's name is no
  // proof. Only a request carrying a lock's id and token (reenter_id,
  // reenter_token) re-enters it, and only a request with the same
  // idempotency_key gets its lock back (see LockRequest). With request.wait > 0, a refused
  // request blocks up to that long: it is woken when a release or an expiry
  // could let it in (with a bounded re-check, so a lost wake-up cannot strand
  // it), and returns the last conflict if the deadline passes.
  // Throws InvalidRequest for bad input, BackendError on backend failure.
  virtual AcquireResult acquire(const LockRequest& request) = 0;

  // acquire(), stoppable: once `stop` is triggered (from any thread) a
  // waiting request leaves the line at once and the call returns with
  // `cancelled` set, holding nothing. The rule is "stopped before the call
  // returned: nothing held": a grant that arrives while the stop is being
  // requested is released before the call returns, never dropped. A grant
  // returned (cancelled == false) belongs to the caller even when the stop
  // comes later. A token that is already stopped answers `cancelled` without
  // asking the backend. Every backend of this library stops a wait within
  // one wake-up (no polling); the default, for engines from elsewhere,
  // answers at the end of the wait and then releases a grant it no longer
  // wants. Throws what acquire(request) throws.
  virtual AcquireResult acquire(const LockRequest& request, std::stop_token stop);

  // Drops one hold of lock `id`; the lock goes when no hold is left.
  // Returns false if no live lock has this id and token.
  virtual bool release(std::string_view ns, std::string_view id, std::string_view token) = 0;

  // Extends the lease of lock `id` to now + ttl (the lock's own TTL when
  // ttl is empty). Returns false if no live lock has this id and token.
  virtual bool renew(std::string_view ns, std::string_view id, std::string_view token,
                     std::optional<Millis> ttl) = 0;
  bool renew(std::string_view ns, std::string_view id, std::string_view token) {
    return renew(ns, id, token, std::nullopt);
  }

  // Am I still the holder? True when lock `id` is live and its token is
  // `token`. Read-only and cheap (one lookup; on Redis one read-only call
  // that replicas may serve): a storage write can ask it just before it
  // commits, next to the fence check (docs/guard.md). Throws InvalidRequest
  // for a bad namespace, BackendError on backend failure.
  virtual bool is_held(std::string_view ns, std::string_view id, std::string_view token) = 0;

  // Returns the live locks with a target at or inside `prefix`, ordered by
  // fence. Costs O(size of that subtree), never a scan of all locks.
  virtual std::vector<LockInfo> list(std::string_view ns, std::string_view prefix) = 0;
  std::vector<LockInfo> list(std::string_view ns) { return list(ns, "/"); }

  // One page of list(ns, prefix): at most `limit` (1..kMaxListLimit) locks
  // with fences above the cursor `after` ("" for the first page), in fence
  // order. `next` is empty on the last page; a page may hold fewer than
  // `limit` locks and still have a `next` (a backend bounds the work of one
  // call). Across the pages of one walk every lock that is live throughout
  // it appears exactly once. Throws InvalidRequest for a bad namespace,
  // prefix, limit or cursor.
  virtual ListPage list_page(std::string_view ns, std::string_view prefix, std::size_t limit,
                             std::string_view after) = 0;

  // Why is this blocked? A dry run that takes and changes nothing: every
  // live held lock and every waiting request (with a place in line) that
  // would refuse a request for `op` on `targets` now, each once per pair of
  // (its overlapping path, the request's target). A fair request is refused
  // by every such waiter; an unfair one (fair = false) by the held locks
  // only. Costs O(depth + answer), at most `limit` (1..kMaxBlockers)
  // blockers; `truncated` says there are more. Validates like acquire
  // (InvalidRequest); on Redis one read-only call that replicas may serve.
  virtual BlockersPage blockers(std::string_view ns, std::string_view op, const std::vector<Target>& targets,
                                std::size_t limit) = 0;
  BlockersPage blockers(std::string_view ns, std::string_view op, const std::vector<Target>& targets) {
    return blockers(ns, op, targets, kMaxBlockers);
  }

  // The waiting requests with a place in line that have a target at or
  // inside `prefix`, oldest first, at most `limit` (1..kMaxWaiters).
  virtual std::vector<WaiterInfo> waiters(std::string_view ns, std::string_view prefix, std::size_t limit) = 0;
  std::vector<WaiterInfo> waiters(std::string_view ns, std::string_view prefix) {
    return waiters(ns, prefix, kMaxWaiters);
  }
  std::vector<WaiterInfo> waiters(std::string_view ns) { return waiters(ns, "/", kMaxWaiters); }

  // Administrator's release: drops lock `id` whatever its holds and token.
  // Returns false if there was no such live lock.
  virtual bool force_release(std::string_view ns, std::string_view id) = 0;

  // Limits per namespace (added in 1.1; docs/operations.md#limits-per-namespace).
  // An operator's calls: they change what every engine on the backend
  // enforces, in the same call as each grant. The default applies to every
  // namespace without limits of its own; set_limits gives `ns` its own
  // (replacing the default whole) or, with nullopt, takes them away. A value
  // above kMaxLimit is InvalidRequest. Where an engine learns the default
  // (Redis: each engine reads it at most every kLimitsRefresh) a change of
  // the default reaches it within that time; a namespace's own limits at once.
  // The defaults of these three throw BackendError (engines from elsewhere).
  virtual void set_default_limits(const Limits& limits);
  virtual void set_limits(std::string_view ns, const std::optional<Limits>& limits);
  // The limits in force in `ns` and its use of them. Read-only.
  virtual LimitsStatus limits(std::string_view ns);

  // Conversion (added in 1.1; docs/design.md#conversion): lock `request.id`
  // (proven by its token) takes `request`'s operation and targets in one
  // atomic step, judged as an acquire of them against every other live lock
  // and place in line, never against itself. Granted: the same id, token and
  // holds, a fence above every fence given before, the lease now + ttl.
  // Otherwise (conflicted, would_deadlock, not_holder, cancelled, a throw)
  // the lock is exactly as it was. More than one hold: InvalidRequest. With
  // wait > 0 it waits holding the lock; it goes before every waiter its own
  // lock refuses, and later conflicting requests wait behind it. A stop after
  // the conversion was made does not undo it. Default: BackendError.
  virtual AcquireResult convert(const ConvertRequest& request, std::stop_token stop);
  AcquireResult convert(const ConvertRequest& request) { return convert(request, std::stop_token{}); }

  // convert(request)'s dry run (1.1), as blockers() is an acquire's: never
  // lock request.id, its place, nor a place it refuses; places only when
  // request.fair; no token read; a lock not live excludes nothing. Default: BackendError.
  virtual BlockersPage blockers(const ConvertRequest& request, std::size_t limit);
  BlockersPage blockers(const ConvertRequest& request) { return blockers(request, kMaxBlockers); }

  // The rules this engine enforces.
  virtual const MatrixTable& matrix() const = 0;

  // Where this engine counts (pathlock/metrics.hpp), shared with whoever
  // passed it in the options; nullptr when counting is off or the backend
  // does not count.
  virtual std::shared_ptr<Metrics> metrics() const { return nullptr; }
};

}  // namespace pathlock
