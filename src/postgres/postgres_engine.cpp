// The PostgreSQL backend: each public call is ONE statement running one
// server-side function in one transaction. Design, matrices, time, fences
// and waiting: src/postgres/README.md (and docs/postgres.md).
#include <pathlock/postgres.hpp>

#include "core/backend_engine.hpp"
#include "core/limits.hpp"
#include "core/observe.hpp"
#include "core/process.hpp"
#include "core/request.hpp"
#include "core/waiting.hpp"
#include "postgres/connection.hpp"
#include "postgres/limits.hpp"
#include "postgres/listener.hpp"
#include "postgres/schema.hpp"
#include "postgres/values.hpp"

#include <pathlock/path.hpp>

#include <fmt/format.h>

#include <atomic>
#include <iterator>
#include <mutex>

namespace pathlock::postgres {
namespace {

constexpr std::size_t kIdBytes = 12;     // 24 hex characters
constexpr std::size_t kTokenBytes = 16;  // 32 hex characters
constexpr std::size_t kListLook = 512;   // locks one list_page call looks at

// The columns of an attempt's reply (attempt() reads them), acquire's and
// convert's alike.
#define PATHLOCK_ATTEMPT_COLUMNS                                                                               \
  "SELECT status, id, token, fence, expires_in, holds, c_id, c_op, c_role, c_path, c_owner, c_expires_in, " \
  "c_index, c_relation, c_queued, l_limit, l_max, l_count FROM "
const char* const kAcquire = PATHLOCK_ATTEMPT_COLUMNS
    "pathlock.acquire($1, $2, $3, $4, $5::text[], $6::int[], $7::bigint[], $8::text[], $9::bigint, $10, $11, $12, "
    "$13, $14, $15::boolean, $16, $17::bigint, $18::bigint)";
constexpr int kReserveParam = 16;  // index of $17 in the acquire parameters
// pathlock.convert (functions version 10): the same reply as acquire's.
const char* const kConvert = PATHLOCK_ATTEMPT_COLUMNS
    "pathlock.convert($1, $2, $3, $4, $5, $6::text[], $7::int[], $8::bigint[], $9::text[], $10::bigint, $11, "
    "$12::boolean, $13, $14::bigint, $15::bigint, $16::bigint[])";
#undef PATHLOCK_ATTEMPT_COLUMNS
constexpr int kConvertReserveParam = 13;  // index of $14 in the convert parameters
constexpr int kLimitColumn = 15;   // l_limit, then l_max and l_count

// The server's budget for one acquire (p_budget): three quarters of the
// client's command timeout, so the server gives up (lock_timeout, and
// pathlock.in_time before a grant writes) before the client stops waiting
// (docs/postgres.md#timeouts).
std::string server_budget(Millis command_timeout) {
  return std::to_string(std::max<long long>(1, command_timeout.count() * 3 / 4));
}

}  // namespace

namespace {

class PostgresEngine final : public core::BackendEngine {
 public:
  explicit PostgresEngine(const PostgresOptions& options)
      : BackendEngine(options.matrix ? *options.matrix : default_matrix(), options.observe),
        options_(checked(options)) {
    make_connections();
    install_schema();
  }

  // In a child forked after the engine was made, the parent's connections
  // are left alone, never closed: closing would end the parent's sessions.
  ~PostgresEngine() override {
    if (!process_.forked()) return;
    pool_->abandon();
    holds_.forget_after_fork();
    (void)listener_.release();  // its thread is not in this process
  }

 private:
  AcquireResult do_acquire(const LockRequest& request, core::ResolvedRequest& req, std::stop_token stop) override {
    const MatrixArgs m = matrix_args(matrix_, req);
    const bool in_line = request.fair && request.wait > Millis{0} && !req.reentry;
    std::vector<Param> params{request.ns,
                              std::string(matrix_.fingerprint),
                              request.owner,
                              std::string(matrix_.ops[static_cast<std::size_t>(req.op)].name),
                              m.roles,
                              m.codes,
                              m.masks,
                              paths_literal(req),
                              std::to_string(request.ttl.count()),
                              core::random_hex(kIdBytes),
                              core::random_hex(kTokenBytes),
                              request.reenter_id,
                              request.reenter_token,
                              request.idempotency_key,
                              request.fair ? "true" : "false",
                              in_line ? "w" + core::random_hex(kIdBytes) : std::string(),
                              "0",
                              server_budget(options_.command_timeout)};
    Attempts attempts(*this, request.ns, req, std::move(params));
    AcquireResult out =
        core::wait_for_grant(request, *steady_clock(), attempts, &instruments_, req.op, std::move(stop));
    holds_.granted(request, req, out, steady_clock()->now());
    return out;
  }

  // One call of pathlock.convert per attempt, waiting as an acquire does.
  AcquireResult do_convert(const ConvertRequest& request, core::ResolvedRequest& req, std::stop_token stop) override {
    const MatrixArgs m = matrix_args(matrix_, req);
    const bool in_line = request.fair && request.wait > Millis{0};
    std::vector<Param> params{request.ns,
                              std::string(matrix_.fingerprint),
                              request.id,
                              request.token,
                              request.op,
                              m.roles,
                              m.codes,
                              m.masks,
                              paths_literal(req),
                              std::to_string(request.ttl.count()),
                              request.idempotency_key,
                              request.fair ? "true" : "false",
                              in_line ? "w" + core::random_hex(kIdBytes) : std::string(),
                              "0",
                              server_budget(options_.command_timeout),
                              all_masks(matrix_)};
    const LockRequest as = core::as_lock_request(request);
    Attempts attempts(*this, request.ns, req, std::move(params), kConvert, kConvertReserveParam);
    return core::wait_for_grant(as, *steady_clock(), attempts, nullptr, req.op, std::move(stop));
  }

  bool do_release(std::string_view ns, std::string_view id, std::string_view token) override {
    const Result r = call("SELECT pathlock.release($1, $2, $3)", {std::string(ns), std::string(id), std::string(token)});
    const bool ok = !is_null(r.get(), 0, 0);
    if (ok) lock_gone(ns, id, static_cast<std::uint32_t>(number(r.get(), 0, 0)));
    return ok;
  }

  bool do_force_release(std::string_view ns, std::string_view id) override {
    const Result r = call("SELECT pathlock.release($1, $2, NULL)", {std::string(ns), std::string(id)});
    const bool ok = !is_null(r.get(), 0, 0);
    if (ok) lock_gone(ns, id, 0);
    return ok;
  }

  bool do_renew(std::string_view ns, std::string_view id, std::string_view token, std::optional<Millis> ttl) override {
    const Result r = call("SELECT pathlock.renew($1, $2, $3, $4::bigint)",
                          {std::string(ns), std::string(id), std::string(token),
                           ttl ? Param(std::to_string(ttl->count())) : Param()});
    const bool ok = !is_null(r.get(), 0, 0);
    if (ok) core::hold_renewed(holds_, instruments_, ns, id, ttl);
    return ok;
  }

  bool do_is_held(std::string_view ns, std::string_view id, std::string_view token) override {
    const Result r = call(
        "SELECT EXISTS (SELECT 1 FROM pathlock.locks l WHERE l.ns = $1 AND l.id = $2 AND l.token = $3 "
        "AND l.expires > pathlock.now_ms())",
        {std::string(ns), std::string(id), std::string(token)});
    return text(r.get(), 0, 0) == "t";
  }

  // One call looks at up to kListLook locks in fence order from the cursor
  // (one index range), so a page may hold fewer than `limit` locks and still
  // have a `next`: the fence of the last lock looked at.
  ListPage do_list_page(std::string_view ns, const core::PageQuery& query, std::size_t limit,
                        std::string_view) override {
    const auto& [canonical, from] = query;
    const Result r = call(
        "WITH looked AS (SELECT * FROM pathlock.locks l WHERE l.ns = $1 AND l.fence > $2::bigint "
        "ORDER BY l.fence LIMIT $3::int) "
        "SELECT id, owner, op, fence, holds, expires - pathlock.now_ms(), array_to_string(roles, chr(1)), "
        "array_to_string(paths, chr(1)), expires > pathlock.now_ms() AND EXISTS (SELECT 1 FROM unnest(paths) p "
        "WHERE pathlock.within(p, $4)) FROM looked ORDER BY fence",
        {std::string(ns), std::to_string(from), std::to_string(kListLook), canonical});
    ListPage page;
    const int rows = PQntuples(r.get());
    for (int i = 0; i < rows; ++i) {
      if (page.locks.size() == limit) {
        page.next = std::to_string(page.locks.back().fence);
        return page;
      }
      if (text(r.get(), i, 8) != "t") continue;
      page.locks.push_back(LockInfo{text(r.get(), i, 0), text(r.get(), i, 1), text(r.get(), i, 2),
                                    targets_of(text(r.get(), i, 6), text(r.get(), i, 7)),
                                    static_cast<std::uint64_t>(number(r.get(), i, 3)),
                                    static_cast<std::uint32_t>(number(r.get(), i, 4)), Millis{number(r.get(), i, 5)}});
    }
    if (static_cast<std::size_t>(rows) == kListLook) page.next = text(r.get(), rows - 1, 3);
    return page;
  }

  BlockersPage do_blockers(std::string_view ns, const core::ResolvedRequest& req, std::size_t limit) override {
    const MatrixArgs m = matrix_args(matrix_, req);
    return blockers_page(call("SELECT " + std::string(kBlockerColumns) +
                                  " FROM pathlock.blockers($1, $2, $3::text[], $4::text[], $5::bigint[], true, $6::int)",
                              {std::string(ns), std::string(matrix_.fingerprint), m.roles, paths_literal(req), m.masks,
                               std::to_string(limit)})
                             .get(),
                         limit);
  }

  // A conversion's dry run: blockers' rows without the lock's own and
  // without the places its conversion passes over (pathlock.refused_places,
  // while the lock is live), in blockers' order.
  BlockersPage do_conversion_blockers(const ConvertRequest& rq, const core::ResolvedRequest& req,
                                      std::size_t limit) override {
    const MatrixArgs m = matrix_args(matrix_, req);
    return blockers_page(
        call("SELECT " + std::string(kBlockerColumns) +
                 " FROM ROWS FROM (pathlock.blockers($1, $2, $3::text[], $4::text[], $5::bigint[], $6, 2147483646)) "
                 "WITH ORDINALITY b, (SELECT CASE WHEN EXISTS (SELECT 1 FROM pathlock.locks l WHERE l.ns = $1 "
                 "AND l.id = $7 AND l.expires > pathlock.now_ms()) THEN pathlock.refused_places($1, $7, '', "
                 "$8::bigint[]) ELSE '{}' END AS ids) s WHERE CASE WHEN b.queued THEN NOT b.id = ANY (s.ids) "
                 "ELSE b.id <> $7 END ORDER BY b.ordinality LIMIT $9::int + 1",
             {rq.ns, std::string(matrix_.fingerprint), m.roles, paths_literal(req), m.masks, rq.fair ? "t" : "f",
              rq.id, all_masks(matrix_), std::to_string(limit)})
            .get(),
        limit);
  }


  // Limits live in pathlock.limits (the default in its row '*'), read by
  // every engine's acquires from the commit on.
  void do_set_default_limits(const Limits& limits) override {
    call(kSetLimits, set_limits_params(std::nullopt, limits));
  }

  void do_set_limits(std::string_view ns, const std::optional<Limits>& limits) override {
    call(kSetLimits, set_limits_params(ns, limits));
  }

  LimitsStatus do_limits(std::string_view ns) override {
    return status_of(call(kLimitsStatus, {std::string(ns)}).get());
  }

  std::vector<WaiterInfo> do_waiters(std::string_view ns, const std::string& canonical, std::size_t limit) override {
    const Result r = call(
        "SELECT w.id, w.owner, w.op, pathlock.now_ms() - w.since, w.expires - pathlock.now_ms(), "
        "array_to_string(w.roles, chr(1)), array_to_string(w.paths, chr(1)), coalesce(w.converts, '') "
        "FROM pathlock.waiters w "
        "WHERE w.ns = $1 AND w.expires > pathlock.now_ms() AND EXISTS (SELECT 1 FROM unnest(w.paths) p "
        "WHERE pathlock.within(p, $2)) ORDER BY w.place LIMIT $3::int",
        {std::string(ns), canonical, std::to_string(limit)});
    std::vector<WaiterInfo> out;
    for (int i = 0; i < PQntuples(r.get()); ++i)
      out.push_back(WaiterInfo{text(r.get(), i, 0), text(r.get(), i, 1), text(r.get(), i, 2),
                               targets_of(text(r.get(), i, 5), text(r.get(), i, 6)), Millis{number(r.get(), i, 3)},
                               Millis{number(r.get(), i, 4)}, text(r.get(), i, 7)});
    return out;
  }

 private:
  // The PostgreSQL side of the waiting policy (core/waiting.hpp).
  class Attempts final : public core::WaitingAttempts {
   public:
    // `sql` and `reserve`: the call and the index of its reserve_ms (the
    // waiter id just before); a conversion's (kConvert) grant is never given back.
    Attempts(PostgresEngine& engine, std::string_view ns, const core::ResolvedRequest& req, std::vector<Param> params,
             const char* sql = kAcquire, int reserve = kReserveParam)
        : engine_(engine), ns_(ns), req_(req), params_(std::move(params)), sql_(sql), reserve_(reserve),
          subscription_(std::make_shared<Subscription>(std::string(ns))) {}
    ~Attempts() override {
      if (listener_) listener_->unsubscribe(subscription_);
    }
    Attempts(const Attempts&) = delete;
    Attempts& operator=(const Attempts&) = delete;

    AcquireResult attempt(Millis reserve) override {
      params_[static_cast<std::size_t>(reserve_)] = std::to_string(reserve.count());
      return engine_.attempt(sql_, params_, req_);
    }
    // Subscribe to the engine's listener (LISTEN in force when it returns),
    // then look again at once: a removal between the first attempt and the
    // LISTEN would otherwise be missed.
    bool listen() override {
      listener_ = &engine_.listener();
      listener_->subscribe(subscription_);
      return true;
    }
    void sleep_until(Clock::time_point until) override {
      std::vector<std::string> payloads;
      do {
        payloads.clear();
        if (!subscription_->wait(until, payloads)) return;
      } while (!core::wake_concerns(payloads, req_));
    }
    void leave() noexcept override {
      const std::optional<std::string>& waiter = params_[static_cast<std::size_t>(reserve_ - 1)];
      if (!waiter || waiter->empty()) return;
      try {
        engine_.call("SELECT pathlock.leave($1, $2)", {std::string(ns_), *waiter});
      } catch (...) {
      }
    }
    void interrupt() noexcept override { subscription_->interrupt(); }
    // (Never called for a conversion: keeps_grant_on_stop.)
    void give_back(const Grant& grant) noexcept override { core::release_quietly(engine_, ns_, grant); }
    bool keeps_grant_on_stop() const noexcept override { return sql_ != kAcquire; }

   private:
    PostgresEngine& engine_;
    std::string_view ns_;
    const core::ResolvedRequest& req_;
    std::vector<Param> params_;  // the call's parameters (reserve_ms at reserve_)
    const char* sql_;
    int reserve_;
    std::shared_ptr<Subscription> subscription_;  // interrupted by a stop (another thread)
    Listener* listener_ = nullptr;                // once subscribed
  };

  AcquireResult attempt(const char* sql, const std::vector<Param>& params, const core::ResolvedRequest& req) {
    const Result r = call(sql, params);
    const PGresult* x = r.get();
    const std::string status = text(x, 0, 0);
    AcquireResult out;
    if (status == "granted") {
      out.outcome = AcquireOutcome::granted;
      out.grant = Grant{text(x, 0, 1), text(x, 0, 2), static_cast<std::uint64_t>(number(x, 0, 3)),
                        Millis{number(x, 0, 4)}, static_cast<std::uint32_t>(number(x, 0, 5))};
    } else if (status == "refused" || status == "would_deadlock") {
      if (status == "would_deadlock") out.outcome = AcquireOutcome::would_deadlock;
      const auto at = static_cast<std::size_t>(number(x, 0, 12) - 1);
      const core::ResolvedTarget& hit = req.targets.at(at);
      out.conflict = Conflict{text(x, 0, 6), text(x, 0, 7), text(x, 0, 8), text(x, 0, 9), text(x, 0, 10),
                              Millis{number(x, 0, 11)}, std::string(matrix_.role_name_of_code(hit.code)), hit.path,
                              relation_of(number(x, 0, 13)), text(x, 0, 14) == "t"};
    } else if (status == "not_holder") {
      out.outcome = AcquireOutcome::not_holder;
    } else if (status == "over_limit") {
      out = over_limit_of(x, kLimitColumn);
    } else {
      throw BackendError(fmt::format("postgres: pathlock.acquire replied '{}'", status));
    }
    return out;
  }

  // Runs one statement on a pooled connection; counts it (and a backend
  // error) in the metrics.
  Result call(const std::string& sql, const std::vector<Param>& params) {
    const auto begun = std::chrono::steady_clock::now();
    try {
      Pool::Lease c = pool().take(options_.command_timeout);
      Result r = c->exec(sql, params, options_.command_timeout);
      if (Metrics* m = instruments_.metrics()) m->observe_call(Backend::postgres, std::chrono::steady_clock::now() - begun);
      return r;
    } catch (const BackendError& e) {
      if (Metrics* m = instruments_.metrics()) m->count_backend_error();
      instruments_.log(LogLevel::warning, e.what(), {{"event", "backend_error"}, {"backend", "postgres"}});
      throw;
    }
  }

  // The version of the functions installed, 0 when there is no schema.
  int installed_functions(Connection& c) {
    const Result found = c.exec(
        "SELECT to_regclass('pathlock.meta') IS NOT NULL AND to_regproc('pathlock.functions_version') IS NOT NULL",
        {}, options_.command_timeout);
    if (text(found.get(), 0, 0) != "t") return 0;
    const Result version = c.exec("SELECT pathlock.functions_version()", {}, options_.command_timeout);
    return static_cast<int>(number(version.get(), 0, 0));
  }

  // Creates the schema when the database has none, or updates its
  // functions when they are older than this library's; checks its layout.
  void install_schema() {
    Pool::Lease c = pool_->take();
    if (installed_functions(*c) < kFunctionsVersion) try {
        c->exec_script(std::string("BEGIN; SET LOCAL client_min_messages = warning; "  // no "already exists" notices
                                   "SELECT pg_advisory_xact_lock(hashtextextended('pathlock:schema', 0));\n") +
                           kSchemaSql + "\nCOMMIT;",
                       std::max(options_.command_timeout, Millis{30000}));
      } catch (const BackendError& e) {
        throw BackendError(fmt::format("{}; the schema pathlock needs functions version {}: run "
                                       "src/postgres/schema.sql and functions.sql as its owner "
                                       "(docs/postgres.md#schema-roles-and-grants)",
                                       e.what(), kFunctionsVersion));
      }
    const Result layout = c->exec("SELECT max(layout) FROM pathlock.meta", {}, options_.command_timeout);
    if (is_null(layout.get(), 0, 0) || number(layout.get(), 0, 0) != kSchemaLayout)
      throw BackendError(fmt::format("postgres: schema pathlock has layout {}, this pathlock needs {} "
                                     "(docs/postgres.md#upgrades)",
                                     is_null(layout.get(), 0, 0) ? "none" : text(layout.get(), 0, 0), kSchemaLayout));
  }

  void lock_gone(std::string_view ns, std::string_view id, std::uint32_t holds_left) {
    core::hold_released(holds_, instruments_, ns, id, holds_left);
  }

  // The pool and the listener of this process: a child forked after the
  // engine was made opens connections of its own and leaves the parent's
  // untouched (docs/design.md#fork).
  Pool& pool() {
    adopt_if_forked();
    return *pool_;
  }
  Listener& listener() {
    adopt_if_forked();
    return *listener_;
  }
  void adopt_if_forked() {
    if (!process_.forked()) return;
    const core::NoForkSection no_fork;  // a fork in the middle would leave fork_mutex_ held in its child
    std::lock_guard guard(fork_mutex_);
    if (!process_.forked()) return;
    pool_->abandon();
    holds_.forget_after_fork();
    (void)pool_.release();      // the parent's: never closed here
    (void)listener_.release();  // its thread is not in this process
    make_connections();
    process_.adopt();
  }
  void make_connections() {
    pool_ = std::make_unique<Pool>(options_.url, options_.connect_timeout, options_.pool_size,
                                   options_.max_connections);
    const std::string url = options_.listen_url.empty() ? options_.url : options_.listen_url;
    listener_ = std::make_unique<Listener>(
        [url, timeout = options_.connect_timeout] {
          return std::make_unique<Connection>(url, timeout, "pathlock-listener");
        },
        options_.command_timeout);
  }
  Millis timeout() const { return options_.command_timeout; }

  static const PostgresOptions& checked(const PostgresOptions& options) {
    if (options.url.empty()) throw InvalidRequest("postgres url must not be empty");
    if (options.connect_timeout <= Millis{0} || options.command_timeout <= Millis{0})
      throw InvalidRequest("postgres connect_timeout and command_timeout must be positive");
    if (options.max_connections == 0) throw InvalidRequest("postgres max_connections must be positive");
    return options;
  }

  core::HoldTable holds_;  // grant times of this process's locks
  const PostgresOptions options_;
  std::unique_ptr<Pool> pool_;
  std::unique_ptr<Listener> listener_;  // the one LISTEN connection of the waiting calls
  core::ProcessStamp process_;
  std::mutex fork_mutex_;
};

}  // namespace

}  // namespace pathlock::postgres

std::unique_ptr<pathlock::LockEngine> pathlock::make_postgres_engine(const PostgresOptions& options) {
  return std::make_unique<postgres::PostgresEngine>(options);
}
