// The Redis backend: each public call is ONE atomic call of the pathlock
// Functions library. Data layout, invariants, the permission probe, waiting
// and fairness: src/redis/README.md (and docs/lua-protocol.md).
#include <pathlock/redis.hpp>

#include "core/observe.hpp"
#include "core/process.hpp"
#include "core/backend_engine.hpp"
#include "core/request.hpp"
#include "core/waiting.hpp"
#include "redis/library.hpp"
#include "redis/limits.hpp"
#include "redis/redis_client.hpp"
#include <pathlock/redis_url.hpp>
#include "redis/replies.hpp"
#include "redis/request_layout.hpp"
#include "redis/warnings.hpp"

#include <pathlock/path.hpp>
#include <pathlock/version.hpp>

#include <fmt/format.h>

#include <chrono>
#include <atomic>
#include <mutex>

namespace pathlock::redis {
namespace {

constexpr std::size_t kIdBytes = 12;     // 24 hex characters
constexpr std::size_t kTokenBytes = 16;  // 32 hex characters

ClientOptions client_options(const RedisOptions& options, const core::Instruments& instruments) {
  if (options.replicas < 0 || options.replicas > 64)
    throw InvalidRequest(fmt::format("replicas must be 0..64, not {}", options.replicas));
  return ClientOptions{parse_redis_url(options.url, options.password), options.connect_timeout, options.command_timeout,
                       options.pool_size, options.replicas, options.tls, instruments.metrics(), instruments.sink()};
}

class RedisEngine final : public core::BackendEngine {
 public:
  explicit RedisEngine(const RedisOptions& options)
      : BackendEngine(options.matrix ? *options.matrix : default_matrix(), options.observe),
        library_(library_for(matrix_)),
        options_(options),
        client_(std::make_unique<RedisClient>(client_options(options, instruments_))),
        replicas_(options.replicas) {
    client_->load_library(library_.name, library_.code);
    // The default limits, read now: an acquire right after need not wait for them.
    defaults_.text(*client_, true, [this](std::string_view e) { default_unread(e); });
  }

  // In a child forked after the engine was made, the parent's client (its
  // sockets, TLS sessions, Sentinel thread) is left alone, never closed:
  // closing would end the parent's TLS sessions.
  ~RedisEngine() override {
    if (!process_.forked()) return;
    (void)client_.release();
    holds_.forget_after_fork();  // the inherited table may be mid-change: not destroyed
  }

 private:

  AcquireResult do_acquire(const LockRequest& request, core::ResolvedRequest& req, std::stop_token stop) override {
    // The arguments by name (request_layout.hpp). The new id and token
    // serve every attempt of this call (only a grant uses them, and a grant
    // ends the call); the client sets the deadline at each send.
    acquire_args::Values v;
    v.owner = request.owner;
    v.op = std::string(matrix_.ops[static_cast<std::size_t>(req.op)].name);
    v.ttl_ms = std::to_string(request.ttl.count());
    v.new_id = core::random_hex(kIdBytes);
    v.new_token = core::random_hex(kTokenBytes);
    v.reenter_id = request.reenter_id;
    v.reenter_token = request.reenter_token;
    v.idempotency_key = request.idempotency_key;
    const std::string waiter = line_arguments(v, req, request.fair, request.wait > Millis{0} && !req.reentry);
    Attempts attempts(*this, request.ns, req, acquire_args::Call(std::move(v)), waiter);
    AcquireResult out =
        core::wait_for_grant(request, *steady_clock(), attempts, &instruments_, req.op, std::move(stop));
    holds_.granted(request, req, out, steady_clock()->now());
    return out;
  }

  // What acquire and convert send alike: the paths, fair, the place in line
  // (a fair request that waits takes one: its id is returned, else "") and
  // the default limits.
  std::string line_arguments(acquire_args::Values& v, const core::ResolvedRequest& req, bool fair, bool waits) {
    for (const core::ResolvedTarget& t : req.targets) v.paths.push_back(t.path);
    v.fair = fair;
    v.waiter_id = fair && waits ? "w" + core::random_hex(kIdBytes) : std::string();
    v.default_limits = defaults_.text(client(), false, [this](std::string_view e) { default_unread(e); });
    return v.waiter_id;
  }

  // One call of the library's convert per attempt: acquire's arguments,
  // with the lock's proof in reenter_id and reenter_token and no owner, id
  // or token of its own (docs/lua-protocol.md#convert).
  AcquireResult do_convert(const ConvertRequest& request, core::ResolvedRequest& req, std::stop_token stop) override {
    acquire_args::Values v;
    v.op = request.op;
    v.ttl_ms = std::to_string(request.ttl.count());
    v.reenter_id = request.id;
    v.reenter_token = request.token;
    v.idempotency_key = request.idempotency_key;
    const std::string waiter = line_arguments(v, req, request.fair, request.wait > Millis{0});
    Attempts attempts(*this, request.ns, req, acquire_args::Call(std::move(v)), waiter, "convert");
    return core::wait_for_grant(core::as_lock_request(request), *steady_clock(), attempts, nullptr, req.op,
                                std::move(stop));
  }

  bool do_release(std::string_view ns, std::string_view id, std::string_view token) override {
    const Reply r = run("release", ns, {std::string(id), std::string(token)});
    const bool ok = released("release", r);
    if (ok) lock_gone(ns, id, static_cast<std::uint32_t>(r.at(1).number()));
    return ok;
  }

  bool do_renew(std::string_view ns, std::string_view id, std::string_view token, std::optional<Millis> ttl) override {
    int acked = 0;
    const Reply r = run("renew", ns,
                        {std::string(id), std::string(token), ttl ? std::to_string(ttl->count()) : std::string()},
                        nullptr, replicas_ > 0 ? &acked : nullptr);
    const std::string& status = r.at(0).text();
    if (status != "renewed" && status != "missing") unexpected("renew", status);
    const bool ok = status == "renewed";
    // A renewal a failover could lose may not count: the lease may end at
    // its old end on a promoted replica (a master cut off from its replicas
    // would renew alone). The caller (a LeaseKeeper) sees a failure.
    if (ok && acked < replicas_)
      client_->fail(fmt::format("not replicated: {} of {} replicas acknowledged the renewal of lock {} in time; the "
                                "lease may end at its previous end",
                                acked, replicas_, id));
    if (ok) core::hold_renewed(holds_, instruments_, ns, id, ttl);
    return ok;
  }

  // The list function looks at a bounded number of locks per call (fence
  // order, from the cursor on), so a page may hold fewer than `limit` locks
  // and still have a `next`; the cursor is the decimal fence of the last
  // lock looked at. Reading writes nothing: list_ro skips what has ended
  // without reaping it (the next writing call reaps), so a user with read
  // rights only may list.
  ListPage do_list_page(std::string_view ns, const core::PageQuery& query, std::size_t limit,
                        std::string_view after) override {
    const Reply r = run("list_ro", ns, {query.prefix, std::to_string(limit), std::string(after)});
    if (r.at(reply::list::status).text() != "locks") unexpected("list", r.at(reply::list::status).text());
    ListPage page;
    page.next = r.at(reply::list::next).text();
    page.locks.reserve(r.elements.size() - reply::list::first_row);
    for (std::size_t i = reply::list::first_row; i < r.elements.size(); ++i)
      page.locks.push_back(reply::read_lock(r.elements[i]));
    return page;
  }

  void do_set_default_limits(const Limits& limits) override { defaults_.set(client(), limits); }
  void do_set_limits(std::string_view ns, const std::optional<Limits>& limits) override {
    run("set_limits", ns, {limits ? core::limits_text(*limits) : std::string()});
  }
  LimitsStatus do_limits(std::string_view ns) override {
    return read_limits_status(run("limits_ro", ns, {}),
                              defaults_.text(client(), true, [this](std::string_view e) { default_unread(e); }));
  }

  bool do_is_held(std::string_view ns, std::string_view id, std::string_view token) override {
    const Reply r = run("held", ns, {std::string(id), std::string(token)});
    if (r.at(0).text() != "held") unexpected("held", r.at(0).text());
    return r.at(1).number() != 0;
  }

  BlockersPage do_blockers(std::string_view ns, const core::ResolvedRequest& req, std::size_t limit) override {
    return blockers_call(ns, req, limit, {});
  }
  // A conversion's dry run: blockers' optional converts and fair (protocol 4.6).
  BlockersPage do_conversion_blockers(const ConvertRequest& rq, const core::ResolvedRequest& req,
                                      std::size_t limit) override {
    return blockers_call(rq.ns, req, limit, {rq.id, rq.fair ? "1" : "0"});
  }
  BlockersPage blockers_call(std::string_view ns, const core::ResolvedRequest& req, std::size_t limit,
                             std::vector<std::string> optional) {
    std::vector<std::string> args{std::string(matrix_.ops[static_cast<std::size_t>(req.op)].name)};
    for (const core::ResolvedTarget& t : req.targets) args.push_back(t.path);
    args.push_back(std::to_string(limit));
    for (std::string& a : optional) args.push_back(std::move(a));
    const Reply r = run("blockers", ns, args);
    if (r.at(reply::blockers::status).text() != "blockers")
      unexpected("blockers", r.at(reply::blockers::status).text());
    BlockersPage out;
    out.truncated = r.at(reply::blockers::truncated).number() != 0;
    for (std::size_t i = reply::blockers::first_row; i < r.elements.size(); ++i)
      out.blockers.push_back(reply::read_blocker(r.elements[i], *client_));
    reply::order_rows(out.blockers);
    return out;
  }

  std::vector<WaiterInfo> do_waiters(std::string_view ns, const std::string& prefix, std::size_t limit) override {
    const Reply r = run("waiters", ns, {prefix, std::to_string(limit)});
    if (r.at(reply::waiters::status).text() != "waiters") unexpected("waiters", r.at(reply::waiters::status).text());
    std::vector<WaiterInfo> out;
    for (std::size_t i = reply::waiters::first_row; i < r.elements.size(); ++i)
      out.push_back(reply::read_waiter(r.elements[i]));
    return out;
  }

  bool do_force_release(std::string_view ns, std::string_view id) override {
    const bool ok = released("force_release", run("force_release", ns, {std::string(id)}));
    if (ok) lock_gone(ns, id, 0);
    return ok;
  }

 private:
  // The Redis backend's side of the waiting policy (core/waiting.hpp): an
  // attempt is one acquire script call; wake-ups come from a subscription
  // to the namespace's wake channel, opened after the first refusal.
  class Attempts final : public core::WaitingAttempts {
   public:
    // `function`: acquire, or convert (which keeps its lock when stopped).
    Attempts(RedisEngine& engine, std::string_view ns, const core::ResolvedRequest& req,
             acquire_args::Call args, std::string waiter, std::string_view function = "acquire")
        : engine_(engine),
          ns_(ns),
          req_(req),
          keys_(namespace_keys(ns)),
          args_(std::move(args)),
          waiter_(std::move(waiter)),
          function_(function) {}

    AcquireResult attempt(Millis reserve) override {
      args_.set_reserve(reserve.count());
      return engine_.attempt(ns_, keys_, args_, function_);
    }
    // Subscribe, then look again at once: a removal between the first
    // attempt and the subscription would otherwise be missed.
    bool listen() override {
      listener_ = engine_.client().subscribe(keys_.back());  // pl:{NS}:wake
      return true;
    }
    void sleep_until(Clock::time_point until) override { sleep_until_woken(*listener_, until, req_, &interrupt_); }
    void leave() noexcept override {
      if (!waiter_.empty()) engine_.leave(ns_, waiter_);
    }
    void interrupt() noexcept override { interrupt_.raise(); }
    void give_back(const Grant& grant) noexcept override { core::release_quietly(engine_, ns_, grant); }
    bool keeps_grant_on_stop() const noexcept override { return function_ == "convert"; }

   private:
    RedisEngine& engine_;
    std::string_view ns_;
    const core::ResolvedRequest& req_;
    std::vector<std::string> keys_;  // the namespace's keys (docs/lua-protocol.md)
    acquire_args::Call args_;        // the acquire arguments, by name
    std::string waiter_;             // place-in-line id ("" when not in line)
    std::string_view function_;      // acquire or convert
    std::unique_ptr<Subscription> listener_;
    core::Interrupt interrupt_;  // raised by a stop (another thread)
  };

  // The acquire function's reply. A keyed acquire (an idempotency_key) whose reply was
  // lost goes again, at most twice more: its key answers a run that did
  // happen with the same lock (docs/clients.md#fault-behaviour, as the Go,
  // Node and PHP clients do). Nothing else is sent again after a lost reply.
  Reply acquire_reply(std::string_view ns, const std::vector<std::string>& keys, const acquire_args::Call& args,
                      int* acked, std::string_view function) {
    for (int resent = 0;; ++resent) {
      try {
        return run(function, ns, args.argv(), &keys, acked, args.deadline_index());
      } catch (const ReplyLost&) {
        if (args.at("idempotency_key").empty() || resent == 2) throw;
      }
    }
  }

  // One acquire (or convert) call with `args` (see acquire()).
  AcquireResult attempt(std::string_view ns, const std::vector<std::string>& keys, const acquire_args::Call& args,
                        std::string_view function) {
    int acked = 0;
    const Reply r = acquire_reply(ns, keys, args, replicas_ > 0 ? &acked : nullptr, function);
    const std::optional<AcquireResult> out = reply::read_attempt(r, *client_);
    if (!out) {
      const std::string& status = r.at(reply::granted::status).text();
      if (status != "late") unexpected(function, status);
      client_->fail(fmt::format("{} reached the server after this client's deadline twice (its clock runs ahead of "
                                "this host's estimate); nothing was changed (docs/lua-protocol.md#deadlines)",
                                function));
    }
    if (out->granted() && acked < replicas_) not_replicated(ns, out->grant, acked, function);
    return *out;
  }

  // A grant that fewer than `replicas_` replicas acknowledged in time: a
  // failover now could lose it, so it is given back (the hold this call
  // added) and the call fails. If giving it back fails too, the lock ends
  // with its lease.
  // A conversion cannot be given back (the old operation may no longer fit
  // beside what was granted since): the call fails, the lock as converted.
  [[noreturn]] void not_replicated(std::string_view ns, const Grant& grant, int acked, std::string_view function) {
    if (function == "convert")
      client_->fail(fmt::format("not replicated: {} of {} replicas acknowledged the conversion of lock {} in time; it "
                                "holds as converted on the primary, and a failover now could undo it",
                                acked, replicas_, grant.id));
    bool given_back = false;
    try {
      given_back = released("release", run("release", ns, {grant.id, grant.token}));
    } catch (const std::exception&) {
    }
    client_->fail(fmt::format("not replicated: {} of {} replicas acknowledged the grant of lock {} in time; {}", acked,
                             replicas_, grant.id,
                             given_back ? "the grant was released" : "it could not be released and ends with its lease"));
  }

  // Takes waiter `id` out of the line after an error. Best effort: when it
  // fails too (the server is gone), the reservation lease ends the place.
  void leave(std::string_view ns, const std::string& id) noexcept {
    try {
      client().fcall(library_.function_prefix + "leave", namespace_keys(ns), {id});
    } catch (...) {
    }
  }

  // Runs library function `function` on namespace `ns` (already
  // validated). Handles the replies every function may give: "layout" and
  // "invalid". (Layout 3 has no "mismatch": several matrices share a
  // namespace, docs/operations.md#changing-the-matrix-rolling-deploys.) The
  // engine's first call probes the user's permissions first.
  // With `acked`, the client runs WAIT after the call (RedisOptions::replicas)
  // and stores how many replicas acknowledged it; with `deadline_at`, that
  // argument is the call's deadline (RedisClient::fcall).
  Reply run(std::string_view function, std::string_view ns, const std::vector<std::string>& args,
            const std::vector<std::string>* keys = nullptr, int* acked = nullptr,
            std::optional<std::size_t> deadline_at = std::nullopt) {
    std::vector<std::string> own;
    if (!keys) keys = &(own = namespace_keys(ns));
    // Read-only functions need no write permission: a user with read
    // rights only may call them, so they skip the probe.
    if (function != "held" && function != "blockers" && function != "waiters" && function != "list_ro" &&
        function != "limits_ro")
      probe(ns, *keys);
    Reply r = client().fcall(library_.function_prefix + std::string(function), *keys, args, acked, deadline_at);
    const std::string& status = r.at(0).text();
    if (status == "layout")
      client_->fail(fmt::format(
          "namespace '{}' was written with data layout {} ({}); this is pathlock {}, layout {} "
          "(docs/lua-protocol.md#versions). Drain the namespace or use another one, or run a pathlock of "
          "layout {}",
          ns, r.at(1).text(), layout_release(r.at(1).text()), kVersionString, r.at(2).text(), r.at(1).text()));
    if (status == "invalid") throw InvalidRequest(fmt::format("{}: {}", function, r.at(1).text()));
    return r;
  }

  // Until one probe passed: may this user run every command of the library
  // on the keys of namespace `ns`? A missing permission is a BackendError
  // naming the commands (and the next call probes again); a refused SPUBLISH
  // only costs quick wake-ups (a warning).
  void probe(std::string_view ns, const std::vector<std::string>& keys) {
    if (probed_.load(std::memory_order_acquire)) return;
    const Reply r = client().fcall(library_.function_prefix + "probe", keys, {});
    if (r.at(0).text() == "denied") {
      std::string missing;
      for (std::size_t i = 1; i < r.elements.size(); ++i) {
        const std::string& command = r.at(i).text();
        if (command == "SPUBLISH" || command == "PEXPIREAT" || command == "INFO")
          optional_denied(ns, command);
        else
          missing += (missing.empty() ? "" : ", ") + command;
      }
      if (!missing.empty())
        client_->fail(fmt::format("the Redis user may not run {} on the keys of namespace '{}' (pl:{{{}}}:*); the "
                                 "lock library needs them (docs/operations.md)",
                                 missing, ns, ns));
    } else if (r.at(0).text() != "ok") {
      unexpected("probe", r.at(0).text());
    }
    probed_.store(true, std::memory_order_release);
  }

  // A command the library can do without (SPUBLISH, PEXPIREAT, INFO), or
  // the default limits' GET, refused: a warning (redis/warnings.hpp).
  void optional_denied(std::string_view ns, std::string_view command) {
    warn(optional_denied_warning(client_->server(), ns, command), ns);
  }
  void default_unread(std::string_view error) { warn(default_unread_warning(client_->server(), error), {}); }
  void warn(const Warning& w, std::string_view ns) {
    std::vector<LogField> fields{{"event", w.event}, {"server", client_->server()}};
    if (!ns.empty()) fields.push_back({"ns", std::string(ns)});
    instruments_.log(LogLevel::warning, w.message, fields);
  }

  // Lock `id` released with `holds_left`: when it is gone and this process
  // granted it, its hold time (and a long hold) is counted.
  void lock_gone(std::string_view ns, std::string_view id, std::uint32_t holds_left) {
    core::hold_released(holds_, instruments_, ns, id, holds_left);
  }

  bool released(std::string_view function, const Reply& r) const {
    const std::string& status = r.at(0).text();
    if (status == "released") return true;
    if (status == "missing") return false;
    unexpected(function, status);
  }

  [[noreturn]] void unexpected(std::string_view function, std::string_view status) const {
    client_->fail(fmt::format("function {} replied '{}'", function, status));
  }

  // The client of this process. A child forked after the engine was made
  // (gunicorn --preload, multiprocessing, Celery prefork) shares the
  // parent's sockets: its first call makes a client of its own (new
  // connections; the library loaded if missing) and leaves the parent's
  // untouched, as redis-py's pool does (docs/design.md#fork).
  RedisClient& client() {
    if (process_.forked()) reconnect_after_fork();
    return *client_;
  }
  void reconnect_after_fork() {
    // A fork that lands while a thread of this child reconnects would leave
    // fork_mutex_ held in the grandchild: it waits instead.
    const core::NoForkSection no_fork;
    std::lock_guard guard(fork_mutex_);
    if (!process_.forked()) return;           // another thread of the child did it
    (void)client_.release();                  // the parent's: never closed here
    holds_.forget_after_fork();
    client_ = std::make_unique<RedisClient>(client_options(options_, instruments_));
    client_->load_library(library_.name, library_.code);
    probed_ = false;
    process_.adopt();  // after client_ is set: a thread that sees this process as the owner sees the new client
  }

  core::HoldTable holds_;                // grant times of this process's locks
  Library library_;
  const RedisOptions options_;
  std::unique_ptr<RedisClient> client_;
  core::ProcessStamp process_;
  std::mutex fork_mutex_;
  const int replicas_;  // RedisOptions::replicas
  std::atomic<bool> probed_{false};  // a probe found every permission
  DefaultLimitsCache defaults_;      // pl:limits, as last read
};

}  // namespace

}  // namespace pathlock::redis

namespace pathlock {

std::unique_ptr<LockEngine> make_redis_engine(const RedisOptions& options) {
  return std::make_unique<redis::RedisEngine>(options);
}

}  // namespace pathlock
