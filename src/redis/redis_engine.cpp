// The Redis backend: the embedded backend's intention-lock index, kept in
// Redis and changed only by the generated Lua scripts (lua/*.lua), so each
// public call is ONE atomic script call and its targets are all-or-nothing.
//
// Data layout (namespace NS; every key starts with "pl:{NS}:", so all keys of
// a namespace share the hash tag {NS} and one cluster slot):
//   pl:{NS}:meta     hash   fingerprint, matrix, version (written by the first acquire)
//   pl:{NS}:fence    string INCR counter; the fencing token of each new lock
//   pl:{NS}:exp      zset   lock id -> expiry time in ms (server clock)
//   pl:{NS}:re       hash   LEN:owner \0 op \0 paths... -> lock id (reentrancy)
//   pl:{NS}:k:ID     hash   one lock: token, owner, op, fence, holds, ttl,
//                           expiry and its paths in role order
//   pl:{NS}:n:PATH   hash   per path node, per (op, role) code c:
//                           h<c> = targets with code c held exactly at PATH,
//                           b<c> = targets with code c held strictly below
//   pl:{NS}:e:PATH   zset   the targets held exactly at PATH, one member
//                           "CC|fence|id" each (lex order; code then fence)
//   pl:{NS}:c:PATH   zset   the names of PATH's existing children
//   pl:{NS}:wq       zset   waiter id -> place in line (arrival order)
//   pl:{NS}:wexp     zset   waiter id -> end of its reservation (ms)
//   pl:{NS}:w:WID    hash   one fair request waiting: owner, op, place,
//                           reservation end and its paths
//   (n:PATH also holds wh<c> / wb<c>: the h/b counters of waiting targets)
//   channel pl:{NS}:wake    every removal of a lock or waiter publishes the
//                           removed paths there ("\n"-separated)
// PATH is the canonical path with % { } * ? [ ] \ and space escaped as %XX.
// docs/lua-protocol.md documents every key, argument and reply.
//
// Why a conflict check costs O(depth x codes), not O(locks): for a requested
// target (code r, path P) a script reads, with one HMGET each, the h<c>
// fields of every strict ancestor of P (c in blockers[held_ancestor][r]),
// then h<c> at P (blockers[same][r]) and b<c> at P (blockers[held_descendant]
// [r]). Counters answer "is a conflicting lock there"; only a refusal reads
// more, to name the conflicting lock: the top member of an e: zset
// (O(log n)), or a walk down c: children sets guided by the b<c> counters.
// list(prefix) walks the subtree below the prefix node only.
//
// Invariants (kept by the scripts, checked by tests/redis_test.cpp):
//   R1 the counters equal the number of indexed targets they describe, and a
//      node key exists iff some indexed target is at or below it; a lock's
//      removal decrements exactly what its creation incremented, so a
//      namespace whose locks are all gone holds only meta and fence.
//   R2 counters may include expired locks not reaped yet (reaping is bounded
//      per call) but never miss a live one: a stale counter can only cause a
//      refusal, and a refusal whose witness turns out to be expired removes
//      that lock and checks again, so it is never a false refusal.
//   R3 fence only grows: scripts never delete or decrement it.
// Time is the server's (TIME inside the scripts), never this host's clock.
//
// Waiting and fairness: the policy is core/waiting.hpp's, shared by every
// backend; this file supplies its steps (class Attempts). An attempt is one
// acquire script call. The wake-up: after the first refusal a Subscription
// (a dedicated connection, subscribed to pl:{NS}:wake) is opened and the
// policy attempts once more right away, so a removal between the two
// attempts is seen by the second, and any later one arrives as a message;
// only messages naming a path that overlaps one of the request's targets
// end the sleep early (a removal elsewhere cannot let it in). A fair request
// waits with a place in line: the script that refuses it creates (first
// refusal) or refreshes (later ones) its waiter record with the reservation
// the policy asks for, the script that grants it removes it, and the last
// attempt's refusal removes it instead of refreshing, all in the same call.
// An exception leaves the line with the leave script (best effort); a waiter
// that dies keeps its place no longer than its reservation, which every
// script reaps like an expired lock. Cost of waiting: one extra connection
// per waiting call, one attempt per wake-up that concerns it or per re-check.
//
// Behaviour matches the embedded backend (memory_engine.cpp) call for call:
// the same validation (core::resolve_request before touching Redis), the
// same reentrancy, renew and release rules, and the same choice of the
// conflicting lock to report, except that below a requested path children
// are visited in byte order (the embedded backend uses hash order), and that
// a refusal by a waiter names it by its waiter id and reports what is left of
// its reservation (the embedded backend: "waiter-N" and its deadline).
//
// Thread safety: the client's pool serialises nothing but a connection;
// atomicity comes from Redis running each script alone.
#include <pathlock/redis.hpp>

#include "core/request.hpp"
#include "core/waiting.hpp"
#include "redis/redis_client.hpp"
#include "redis/redis_url.hpp"

#include <pathlock/path.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

namespace pathlock::redis {
namespace {

constexpr std::size_t kIdBytes = 12;     // 24 hex characters
constexpr std::size_t kTokenBytes = 16;  // 32 hex characters

std::string key_prefix(std::string_view ns) { return fmt::format("pl:{{{}}}:", ns); }

Millis millis(const Reply& r) { return Millis{r.number()}; }

Relation parse_relation(const RedisClient& client, const std::string& name) {
  for (const Relation rel : {Relation::same, Relation::held_ancestor, Relation::held_descendant})
    if (relation_name(rel) == name) return rel;
  client.fail(fmt::format("acquire script reported an unknown relation '{}'", name));
}

Script script_of(const MatrixTable& matrix, std::string_view name) {
  const std::string_view source = matrix.script(name);
  if (source.empty())
    throw InvalidRequest(fmt::format(
        "matrix '{}' has no Lua script '{}'; the Redis backend needs a matrix compiled with "
        "pathlock_compile_matrix(... LUA_DIR lua)",
        matrix.name, name));
  return Script{std::string(name), source, {}};
}

ClientOptions client_options(const RedisOptions& options) {
  return ClientOptions{parse_redis_url(options.url), options.connect_timeout, options.command_timeout,
                       options.pool_size};
}

class RedisEngine final : public LockEngine {
 public:
  RedisEngine(const MatrixTable& matrix, const RedisOptions& options)
      : matrix_(matrix),
        acquire_(script_of(matrix, "acquire")),
        release_(script_of(matrix, "release")),
        renew_(script_of(matrix, "renew")),
        list_(script_of(matrix, "list")),
        force_release_(script_of(matrix, "force_release")),
        leave_(script_of(matrix, "leave")),
        client_(client_options(options)) {
    for (Script* s : {&acquire_, &release_, &renew_, &list_, &force_release_, &leave_})
      client_.load(*s);
  }

  const MatrixTable& matrix() const override { return matrix_; }

  AcquireResult acquire(const LockRequest& request) override {
    const core::ResolvedRequest req = core::resolve_request(matrix_, request);
    // ARGV: owner, op, ttl, new_id, new_token, paths..., fair, waiter_id,
    // reserve_ms. The new id and token serve every attempt of this call
    // (only a grant uses them, and a grant ends the call).
    std::vector<std::string> args{request.owner, std::string(matrix_.ops[static_cast<std::size_t>(req.op)].name),
                                  std::to_string(request.ttl.count()), core::random_hex(kIdBytes),
                                  core::random_hex(kTokenBytes)};
    for (const core::ResolvedTarget& t : req.targets) args.push_back(t.path);
    const bool in_line = request.fair && request.wait > Millis{0};
    const std::string waiter = in_line ? "w" + core::random_hex(kIdBytes) : std::string();
    args.push_back(request.fair ? "1" : "0");
    args.push_back(waiter);
    args.push_back("0");  // reserve_ms, set per attempt
    Attempts attempts(*this, request.ns, req, std::move(args), waiter);
    return core::wait_for_grant(request, *steady_clock(), attempts);
  }

  bool release(std::string_view ns, std::string_view id, std::string_view token) override {
    core::check_namespace(ns);
    return released(release_, run(release_, ns, {std::string(id), std::string(token)}));
  }

  bool renew(std::string_view ns, std::string_view id, std::string_view token, std::optional<Millis> ttl) override {
    core::check_namespace(ns);
    if (ttl) core::check_ttl(*ttl);
    const Reply r =
        run(renew_, ns, {std::string(id), std::string(token), ttl ? std::to_string(ttl->count()) : std::string()});
    const std::string& status = r.at(0).text();
    if (status == "renewed") return true;
    if (status == "missing") return false;
    unexpected(renew_, status);
  }

  std::vector<LockInfo> list(std::string_view ns, std::string_view prefix) override {
    core::check_namespace(ns);
    const std::string canonical = core::resolve_prefix(prefix);
    const Reply r = run(list_, ns, {canonical});
    if (r.at(0).text() != "locks") unexpected(list_, r.at(0).text());
    std::vector<LockInfo> out;
    out.reserve(r.elements.size() - 1);
    for (std::size_t i = 1; i < r.elements.size(); ++i) {
      const Reply& l = r.elements[i];
      LockInfo info;
      info.id = l.at(0).text();
      info.owner = l.at(1).text();
      info.op = l.at(2).text();
      info.fence = static_cast<std::uint64_t>(l.at(3).number());
      info.holds = static_cast<std::uint32_t>(l.at(4).number());
      info.expires_in = millis(l.at(5));
      const Reply& targets = l.at(6);
      for (std::size_t t = 0; t + 1 < targets.elements.size(); t += 2)
        info.targets.push_back(Target{targets.at(t).text(), targets.at(t + 1).text()});
      out.push_back(std::move(info));
    }
    return out;
  }

  ListPage list_page(std::string_view ns, std::string_view prefix, std::size_t limit,
                     std::string_view after) override {
    core::check_page(limit, after);
    return core::page_of(list(ns, prefix), limit, after);
  }

  bool force_release(std::string_view ns, std::string_view id) override {
    core::check_namespace(ns);
    return released(force_release_, run(force_release_, ns, {std::string(id)}));
  }

 private:
  // The Redis backend's side of the waiting policy (core/waiting.hpp): an
  // attempt is one acquire script call; wake-ups come from a subscription
  // to the namespace's wake channel, opened after the first refusal.
  class Attempts final : public core::WaitingAttempts {
   public:
    Attempts(RedisEngine& engine, std::string_view ns, const core::ResolvedRequest& req,
             std::vector<std::string> args, std::string waiter)
        : engine_(engine), ns_(ns), req_(req), args_(std::move(args)), waiter_(std::move(waiter)) {}

    AcquireResult attempt(Millis reserve) override {
      args_.back() = std::to_string(reserve.count());
      return engine_.attempt(ns_, args_);
    }
    // Subscribe, then look again at once: a removal between the first
    // attempt and the subscription would otherwise be missed.
    bool listen() override {
      listener_ = engine_.client_.subscribe(key_prefix(ns_) + "wake");
      return true;
    }
    void sleep_until(Clock::time_point until) override { sleep_until_woken(*listener_, until, req_); }
    void leave() noexcept override {
      if (!waiter_.empty()) engine_.leave(ns_, waiter_);
    }

   private:
    RedisEngine& engine_;
    std::string_view ns_;
    const core::ResolvedRequest& req_;
    std::vector<std::string> args_;  // the acquire arguments; the last is reserve_ms
    std::string waiter_;             // place-in-line id ("" when not in line)
    std::unique_ptr<Subscription> listener_;
  };

  // One acquire script call with `args` (see acquire()).
  AcquireResult attempt(std::string_view ns, const std::vector<std::string>& args) {
    const Reply r = run(acquire_, ns, args);
    const std::string& status = r.at(0).text();
    AcquireResult out;
    if (status == "granted") {
      out.granted = true;
      out.grant.id = r.at(1).text();
      out.grant.token = r.at(2).text();
      out.grant.fence = static_cast<std::uint64_t>(r.at(3).number());
      out.grant.expires_in = millis(r.at(4));
      out.grant.holds = static_cast<std::uint32_t>(r.at(5).number());
    } else if (status == "refused") {
      Conflict& c = out.conflict;
      c.id = r.at(1).text();
      c.op = r.at(2).text();
      c.role = r.at(3).text();
      c.path = r.at(4).text();
      c.owner = r.at(5).text();
      c.expires_in = millis(r.at(6));
      c.requested_role = r.at(7).text();
      c.requested_path = r.at(8).text();
      c.relation = parse_relation(client_, r.at(9).text());
      c.queued = r.at(10).number() != 0;
    } else {
      unexpected(acquire_, status);
    }
    return out;
  }

  // Sleeps until `until`, or until a message on the wake channel names a
  // path that overlaps one of the request's targets (only such a removal can
  // let it in), or the subscription had to be reopened (messages may have
  // been lost). An empty payload (another client's bare wake-up) also wakes.
  static void sleep_until_woken(Subscription& listener, Clock::time_point until, const core::ResolvedRequest& req) {
    std::vector<std::string> payloads;
    while (true) {
      const Millis left = std::chrono::ceil<Millis>(until - std::chrono::steady_clock::now());
      if (left <= Millis{0}) return;
      payloads.clear();
      if (listener.wait(left, payloads) != Subscription::Wake::message) return;
      for (const std::string& payload : payloads) {
        if (payload.empty()) return;
        for (std::size_t at = 0; at <= payload.size();) {
          const std::size_t end = std::min(payload.find('\n', at), payload.size());
          const std::string_view removed(payload.data() + at, end - at);
          for (const core::ResolvedTarget& t : req.targets)
            if (paths_overlap(removed, t.path)) return;
          at = end + 1;
        }
      }
    }
  }

  // Takes waiter `id` out of the line after an error. Best effort: when it
  // fails too (the server is gone), the reservation lease ends the place.
  void leave(std::string_view ns, const std::string& id) noexcept {
    try {
      client_.eval(leave_, {key_prefix(ns)}, {id});
    } catch (...) {
    }
  }

  // Runs a lock script on namespace `ns` (already validated). Handles the
  // replies every script may give: "mismatch" and "invalid".
  Reply run(const Script& script, std::string_view ns, const std::vector<std::string>& args) {
    // One round trip: every script checks the namespace's matrix binding
    // itself (and acquire writes it when the namespace has none).
    Reply r = client_.eval(script, {key_prefix(ns)}, args);
    const std::string& status = r.at(0).text();
    if (status == "mismatch") mismatch(ns, r);
    if (status == "invalid") throw InvalidRequest(fmt::format("{}: {}", script.name, r.at(1).text()));
    return r;
  }

  [[noreturn]] void mismatch(std::string_view ns, const Reply& r) const {
    client_.fail(fmt::format(
        "namespace '{}' belongs to matrix '{}' version {} (fingerprint {}); this engine enforces matrix '{}' "
        "version {} (fingerprint {}). Use another namespace, or the matrix that owns it",
        ns, r.at(2).text(), r.at(3).text(), r.at(1).text(), matrix_.name, matrix_.version, matrix_.fingerprint));
  }

  bool released(const Script& script, const Reply& r) const {
    const std::string& status = r.at(0).text();
    if (status == "released") return true;
    if (status == "missing") return false;
    unexpected(script, status);
  }

  [[noreturn]] void unexpected(const Script& script, std::string_view status) const {
    client_.fail(fmt::format("script {} replied '{}'", script.name, status));
  }

  const MatrixTable& matrix_;
  Script acquire_, release_, renew_, list_, force_release_, leave_;
  RedisClient client_;
};

}  // namespace

}  // namespace pathlock::redis

namespace pathlock {

std::unique_ptr<LockEngine> make_redis_engine(const RedisOptions& options) {
  return std::make_unique<redis::RedisEngine>(options.matrix ? *options.matrix : default_matrix(), options);
}

}  // namespace pathlock
