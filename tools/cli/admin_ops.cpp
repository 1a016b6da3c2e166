// `pathlock admin why|locks|waiters|force-release|top` (admin.hpp): the
// operator's reads and the administrator's release, through an engine of
// the backend (--backend, default redis), so they answer exactly what the
// services' engines see. The reads write nothing (a user with read rights
// only may run them; locks pages with bounded work per call); force-release
// is the one command that writes. Output: one JSON object per line, or
// readable lines with --format text (why).
#include "admin.hpp"

#include <pathlock/admin.hpp>
#include "json_codec.hpp"
#include "matrix_cli.hpp"
#include "tls_flags.hpp"

#include "common/options.hpp"


#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <sstream>
#include <thread>
#include <map>
#include <ostream>

namespace pathlock::cli {
namespace {

using json = nlohmann::json;

// The options every command here takes, and its own (tools/common/options.hpp:
// an unknown, repeated or missing option, or a bad number, is a UsageError).
options::Options table(const std::string& cmd) {
  options::Options t = options::Options{}.command("admin " + cmd).required("namespace").value("matrix");
  return with_backend(t);
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
  std::unique_ptr<matrix::MatrixFile> compiled;
  std::unique_ptr<LockEngine> engine;
};

Engine engine_of(const options::Parsed& a) {
  Engine e;
  EngineOptions o = backend_from(a);
  if (a.has("matrix")) {
    e.compiled = load_matrix_option(a.get("matrix"));
    o.matrix = &e.compiled->table();
  }
  e.engine = make_engine(o);
  // An operator who mistypes a namespace must not read "nothing is locked":
  // a namespace that was never used does not exist (no lock call ever
  // deletes one).
  const std::string ns = a.get("namespace");
  admin::check_namespace(ns);
  if (!admin::make_inspector(o)->exists(ns))
    throw InvalidRequest(fmt::format("namespace '{}' does not exist on this server", ns));
  return e;
}

std::vector<std::string> rest(const std::vector<std::string>& args) { return {args.begin() + 1, args.end()}; }

// A wrong number of paths is bad usage (exit 2), as it always was; the
// question itself is pathlock::admin::why.
void check_path_count(const MatrixTable& m, const std::string& op, std::size_t paths) {
  const int index = m.op_index(op);
  if (!op.empty() && index < 0) throw InvalidRequest(fmt::format("unknown operation '{}'", op));
  if (!op.empty() && m.ops[static_cast<std::size_t>(index)].role_count != paths)
    throw options::UsageError(fmt::format("operation '{}' takes {} path(s), got {}", op,
                                          m.ops[static_cast<std::size_t>(index)].role_count, paths));
  if (op.empty() && paths > 1 &&
      std::none_of(m.ops.begin(), m.ops.begin() + m.op_count, [&](const OpInfo& o) { return o.role_count == paths; }))
    throw options::UsageError(fmt::format("no operation takes {} path(s)", paths));
}

int why(const std::vector<std::string>& args, std::ostream& out) {
  const auto format_check = [](const std::string& v) {
    if (v != "json" && v != "text") throw std::invalid_argument("--format takes json or text");
  };
  const options::Parsed a = table("why")
                                .value("op")
                                .value("converts")
                                .value("format", format_check)
                                .number("limit", 1, static_cast<long long>(kMaxBlockers))
                                .positional(1, kMaxRolesPerOp)
                                .parse(rest(args));
  Engine e = engine_of(a);
  check_path_count(e.engine->matrix(), a.get("op"), a.positional.size());
  const auto limit = static_cast<std::size_t>(a.number_or("limit", 100));
  if (a.has("converts") && !a.has("op")) throw options::UsageError("--converts takes --op (the operation converted to)");
  const admin::WhyAnswer w =
      a.has("converts")
          ? admin::why_conversion(*e.engine, a.get("namespace"), a.get("converts"), a.get("op"), a.positional, limit)
          : admin::why(*e.engine, a.get("namespace"), a.get("op"), a.positional, limit);
  if (a.get("format", "json") == "text") {
    if (w.blockers.empty()) out << "not blocked now\n";
    for (const admin::WhyBlocker& b : w.blockers)
      out << blocker_text(b.blocker) << (a.has("op") ? "" : fmt::format(" refuses {}", fmt::join(b.refuses, ",")))
          << "\n";
    if (w.truncated) out << "(more blockers: raise --limit)\n";
    return 0;
  }
  for (const admin::WhyBlocker& b : w.blockers) out << json_codec::why_blocker(b, !a.has("op")).dump() << "\n";
  out << json{{"blocked", !w.blockers.empty()}, {"blockers", w.blockers.size()}, {"truncated", w.truncated}}.dump()
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
      out << json_codec::lock(l).dump()
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
    out << json_codec::waiter(w).dump()
        << "\n";
  return 0;
}

int force_release(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const options::Parsed a = table("force-release").positional(1, 1).parse(rest(args));
  admin::check_lock_id(a.positional[0]);  // an id no engine makes: exit 1, nothing sent
  Engine e = engine_of(a);
  const bool released = e.engine->force_release(a.get("namespace"), a.positional[0]);
  // The one write of the admin commands: say it where an operator's log is
  // (the values escaped, though checked: a log line is never forged).
  err << fmt::format("pathlock admin: force-release of lock {} in namespace {}: {}\n",
                     admin::log_escape(a.positional[0]), admin::log_escape(a.get("namespace")),
                     released ? "released" : "no such live lock");
  out << json{{"released", released}, {"id", a.positional[0]}}.dump() << "\n";
  return 0;
}

// One screen of `admin top`: the namespace's live locks and waiters, the
// longest waits with what blocks each, and the paths most waited on (the
// server's state: a CLI process has no refusal counts of its own).
void top_screen(LockEngine& engine, const std::string& ns, std::size_t rows, std::ostream& out) {
  std::size_t locks = 0;
  std::string after;
  bool more = false;
  do {
    const ListPage page = engine.list_page(ns, "/", kMaxListLimit, after);
    locks += page.locks.size();
    after = page.next;
    more = !after.empty() && locks >= 100000;
  } while (!after.empty() && !more);
  std::vector<WaiterInfo> line = engine.waiters(ns, "/", kMaxWaiters);
  out << fmt::format("pathlock top: namespace {}: {}{} live locks, {}{} waiting\n", ns, locks, more ? "+" : "",
                     line.size(), line.size() == kMaxWaiters ? "+" : "");
  std::sort(line.begin(), line.end(), [](const WaiterInfo& x, const WaiterInfo& y) { return x.waited > y.waited; });
  out << "\nlongest waits:\n";
  if (line.empty()) out << "  (nobody waits)\n";
  for (std::size_t i = 0; i < std::min(rows, line.size()); ++i) {
    const WaiterInfo& w = line[i];
    std::vector<std::string> paths;
    for (const Target& t : w.targets) paths.push_back(t.path);
    out << fmt::format("  {:>8} ms  {} {} {}\n", w.waited.count(), w.owner, w.op, fmt::join(paths, " -> "));
    const BlockersPage why = engine.blockers(ns, w.op, w.targets, 3);
    for (const Blocker& b : why.blockers)
      if (!(b.queued && b.id == w.id)) out << "              blocked by " << blocker_text(b) << "\n";
  }
  std::map<std::string, std::size_t> waited_on;
  for (const WaiterInfo& w : line)
    for (const Target& t : w.targets) ++waited_on[t.path];
  std::vector<std::pair<std::string, std::size_t>> hot(waited_on.begin(), waited_on.end());
  std::sort(hot.begin(), hot.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
  out << "\npaths most waited on:\n";
  if (hot.empty()) out << "  (none)\n";
  for (std::size_t i = 0; i < std::min(rows, hot.size()); ++i)
    out << fmt::format("  {:>6}  {}\n", hot[i].second, hot[i].first);
}

int top(const std::vector<std::string>& args, std::ostream& out) {
  const options::Parsed a = table("top")
                                .number("interval-ms", 100, 3600000)
                                .number("iterations", 1, 1000000000)
                                .number("rows", 1, 1000)
                                .parse(rest(args));
  Engine e = engine_of(a);
  const auto interval = std::chrono::milliseconds(a.number_or("interval-ms", 2000));
  const long long iterations = a.number_or("iterations", 0);  // 0: until interrupted
  for (long long i = 0; iterations == 0 || i < iterations; ++i) {
    if (i > 0) std::this_thread::sleep_for(interval);
    std::ostringstream screen;
    top_screen(*e.engine, a.get("namespace"), static_cast<std::size_t>(a.number_or("rows", 10)), screen);
    if (iterations != 1) out << "\x1b[H\x1b[2J";  // home, clear: a refreshing view
    out << screen.str() << std::flush;
  }
  return 0;
}

}  // namespace

namespace {

using Args = std::vector<std::string>;

// The admin commands of this file: name and handler (their usage lines are
// kAdminUsage, admin.hpp).
struct AdminOp {
  const char* name;
  int (*run)(const Args& args, std::ostream& out, std::ostream& err);
};

const AdminOp kAdminOps[] = {
    {"why", [](const Args& a, std::ostream& out, std::ostream&) { return why(a, out); }},
    {"locks", [](const Args& a, std::ostream& out, std::ostream&) { return locks(a, out); }},
    {"waiters", [](const Args& a, std::ostream& out, std::ostream&) { return waiters(a, out); }},
    {"force-release", [](const Args& a, std::ostream& out, std::ostream& err) { return force_release(a, out, err); }},
    {"top", [](const Args& a, std::ostream& out, std::ostream&) { return top(a, out); }},
    {"limits", admin_limits},
};

const AdminOp* find_admin_op(const std::string& name) {
  for (const AdminOp& op : kAdminOps)
    if (name == op.name) return &op;
  return nullptr;
}

}  // namespace

bool is_admin_op(const std::string& name) { return find_admin_op(name) != nullptr; }

int run_admin_op(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const AdminOp* op = args.empty() ? nullptr : find_admin_op(args[0]);
  if (!op) throw options::UsageError(fmt::format("unknown admin command '{}'", args.empty() ? "" : args[0]));
  return op->run(args, out, err);
}

}  // namespace pathlock::cli
