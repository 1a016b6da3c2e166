// `pathlock admin why|locks|waiters|force-release` (admin.hpp): the
// operator's reads and the administrator's release, through the Redis
// engine, so they answer exactly what the services' engines see. why and
// waiters call read-only functions (a user with read rights only may run
// them); locks pages through `list` (bounded work per call); force-release
// is the one command that writes. Output: one JSON object per line, or
// readable lines with --format text (why).
#include "admin.hpp"
#include "matrix_cli.hpp"
#include "tls_flags.hpp"

#include "common/options.hpp"

#ifdef PATHLOCK_CLI_WITH_REDIS
#include <pathlock/redis.hpp>
#endif

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <charconv>
#include <map>
#include <ostream>

#ifdef PATHLOCK_CLI_WITH_REDIS
namespace pathlock::cli {
namespace {

using json = nlohmann::json;

// The options every command here takes, and its own (tools/common/options.hpp:
// an unknown, repeated or missing option, or a bad number, is a UsageError).
options::Options table(const std::string& cmd) {
  options::Options t = options::Options{}.command("admin " + cmd).required("redis").required("namespace").value("matrix");
  return with_tls(t);
}

json targets_json(const std::vector<Target>& targets) {
  json t = json::object();
  for (const Target& x : targets) t[x.role] = x.path;
  return t;
}

json blocker_json(const Blocker& b) {
  json j{{"kind", b.queued ? "waiter" : "lock"},
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

std::string blocker_text(const Blocker& b) {
  const char* rel = b.relation == Relation::same            ? "at"
                    : b.relation == Relation::held_ancestor ? "above"
                                                            : "below";
  if (b.queued)
    return fmt::format("{} {}: waiting {} of {} on {} ({} it), waited {} ms, place kept {} ms more [{}]",
                       b.requested_role, b.requested_path, b.owner, b.op, b.path, rel, b.waited.count(),
                       b.expires_in.count(), b.id);
  return fmt::format("{} {}: held by {}: {} {} {} ({} it), fence {}, holds {}, lease left {} ms [{}]",
                     b.requested_role, b.requested_path, b.owner, b.op, b.role, b.path, rel, b.fence, b.holds,
                     b.expires_in.count(), b.id);
}

struct Engine {
  std::unique_ptr<matrix::CompiledMatrix> compiled;
  std::unique_ptr<LockEngine> engine;
};

Engine engine_of(const options::Parsed& a) {
  Engine e;
  RedisOptions ro;
  ro.url = a.get("redis");
  ro.tls = tls_from_flags(a);
  ro.pool_size = 1;
  if (a.has("matrix")) {
    e.compiled = load_matrix_option(a.get("matrix"));
    ro.matrix = &e.compiled->table();
  }
  e.engine = make_redis_engine(ro);
  return e;
}

std::vector<std::string> rest(const std::vector<std::string>& args) { return {args.begin() + 1, args.end()}; }

int why(const std::vector<std::string>& args, std::ostream& out) {
  const auto format_check = [](const std::string& v) {
    if (v != "json" && v != "text") throw std::invalid_argument("--format takes json or text");
  };
  const options::Parsed a = table("why")
                                .required("op")
                                .value("format", format_check)
                                .number("limit", 1, static_cast<long long>(kMaxBlockers))
                                .positional(1, kMaxRolesPerOp)
                                .parse(rest(args));
  const std::string format = a.get("format", "json");
  Engine e = engine_of(a);
  const MatrixTable& m = e.engine->matrix();
  const std::string op = a.get("op");
  const int index = m.op_index(op);
  if (index < 0) throw InvalidRequest(fmt::format("unknown operation '{}'", op));
  const OpInfo& info = m.ops[static_cast<std::size_t>(index)];
  if (a.positional.size() != info.role_count)
    throw options::UsageError(
        fmt::format("operation '{}' takes {} path(s), got {}", op, info.role_count, a.positional.size()));
  std::vector<Target> targets;
  for (std::size_t r = 0; r < info.role_count; ++r) targets.push_back(Target{std::string(info.roles[r]), a.positional[r]});
  const BlockersPage page =
      e.engine->blockers(a.get("namespace"), op, targets, static_cast<std::size_t>(a.number_or("limit", 100)));
  if (format == "text") {
    if (page.blockers.empty()) out << op << " is not blocked now\n";
    for (const Blocker& b : page.blockers) out << blocker_text(b) << "\n";
    if (page.truncated) out << "(more blockers: raise --limit)\n";
    return 0;
  }
  for (const Blocker& b : page.blockers) out << blocker_json(b).dump() << "\n";
  out << json{{"blocked", !page.blockers.empty()}, {"blockers", page.blockers.size()}, {"truncated", page.truncated}}
             .dump()
      << "\n";
  return 0;
}

int locks(const std::vector<std::string>& args, std::ostream& out) {
  const options::Parsed a = table("locks").number("limit", 1, 1000000).positional(0, 1).parse(rest(args));
  const auto limit = static_cast<std::size_t>(a.number_or("limit", 1000));
  Engine e = engine_of(a);
  const std::string prefix = a.positional.empty() ? "/" : a.positional[0];
  std::size_t shown = 0;
  std::string after;
  do {
    const ListPage page =
        e.engine->list_page(a.get("namespace"), prefix, std::min(limit - shown, kMaxListLimit), after);
    for (const LockInfo& l : page.locks)
      out << json{{"id", l.id},         {"owner", l.owner}, {"op", l.op},
                  {"targets", targets_json(l.targets)}, {"fence", l.fence}, {"holds", l.holds},
                  {"expires_in_ms", l.expires_in.count()}}
                 .dump()
          << "\n";
    shown += page.locks.size();
    after = page.next;
  } while (!after.empty() && shown < limit);
  if (!after.empty()) out << json{{"truncated", true}, {"limit", limit}}.dump() << "\n";
  return 0;
}

int waiters(const std::vector<std::string>& args, std::ostream& out) {
  const options::Parsed a =
      table("waiters").number("limit", 1, static_cast<long long>(kMaxWaiters)).positional(0, 1).parse(rest(args));
  Engine e = engine_of(a);
  const auto limit = static_cast<std::size_t>(a.number_or("limit", kMaxWaiters));
  for (const WaiterInfo& w : e.engine->waiters(a.get("namespace"), a.positional.empty() ? "/" : a.positional[0], limit))
    out << json{{"id", w.id},
                {"owner", w.owner},
                {"op", w.op},
                {"targets", targets_json(w.targets)},
                {"waited_ms", w.waited.count()},
                {"expires_in_ms", w.expires_in.count()}}
               .dump()
        << "\n";
  return 0;
}

int force_release(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const options::Parsed a = table("force-release").positional(1, 1).parse(rest(args));
  Engine e = engine_of(a);
  const bool released = e.engine->force_release(a.get("namespace"), a.positional[0]);
  // The one write of the admin commands: say it where an operator's log is.
  err << fmt::format("pathlock admin: force-release of lock {} in namespace {}: {}\n", a.positional[0],
                     a.get("namespace"), released ? "released" : "no such live lock");
  out << json{{"released", released}, {"id", a.positional[0]}}.dump() << "\n";
  return 0;
}

}  // namespace

int run_admin_op(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const std::string& cmd = args.at(0);
  if (cmd == "why") return why(args, out);
  if (cmd == "locks") return locks(args, out);
  if (cmd == "waiters") return waiters(args, out);
  if (cmd == "force-release") return force_release(args, out, err);
  throw options::UsageError(fmt::format("unknown admin command '{}'", cmd));
}

}  // namespace pathlock::cli
#endif
