// pathlock::admin::why (pathlock/admin.hpp).
#include <pathlock/admin.hpp>
#include <pathlock/path.hpp>

#include "core/request.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace pathlock::admin {

namespace {

// A path under no other: the other role of a two-path operation asked about
// one path (blockers that refuse only at this path are dropped).
constexpr std::string_view kNowhere = "/.pathlock-why-nowhere/x";

struct Question {
  const OpInfo* op;
  std::vector<Target> targets;
  std::string asked;  // canonical: blockers of the request's other paths are left out ("" keeps all)
};

// The waiting request `b` is the request asked about: same operation and
// the same paths in the same roles.
bool is_the_request(LockEngine& engine, std::string_view ns, const Blocker& b, const Question& q) {
  if (!b.queued || b.op != q.op->name) return false;
  for (const WaiterInfo& w : engine.waiters(ns, b.path, kMaxWaiters)) {
    if (w.id != b.id || w.targets.size() != q.targets.size()) continue;
    return std::equal(w.targets.begin(), w.targets.end(), q.targets.begin(), [](const Target& a, const Target& c) {
      return a.role == c.role && a.path == normalize_path(c.path);
    });
  }
  return false;
}

// Adds the blockers of `q` to `out`, each (lock, its path, the asked path)
// once, noting the operation it refuses.
void ask(LockEngine& engine, std::string_view ns, const Question& q, std::size_t limit, WhyAnswer& out) {
  const BlockersPage page = engine.blockers(ns, q.op->name, q.targets, limit);
  out.truncated = out.truncated || page.truncated;
  for (const Blocker& b : page.blockers) {
    if (!q.asked.empty() && b.requested_path != q.asked) continue;
    if (is_the_request(engine, ns, b, q)) continue;
    auto same = [&](const WhyBlocker& w) {
      return w.blocker.id == b.id && w.blocker.path == b.path && w.blocker.requested_path == b.requested_path;
    };
    auto it = std::find_if(out.blockers.begin(), out.blockers.end(), same);
    if (it == out.blockers.end()) {
      if (out.blockers.size() == limit) {
        out.truncated = true;
        continue;
      }
      it = out.blockers.insert(out.blockers.end(), WhyBlocker{b, {}});
    }
    if (std::find(it->refuses.begin(), it->refuses.end(), q.op->name) == it->refuses.end())
      it->refuses.emplace_back(q.op->name);
  }
}

// The questions that "what refuses `op` (or anything) on `paths`" asks.
std::vector<Question> questions(const MatrixTable& m, std::string_view op, const std::vector<std::string>& paths) {
  std::vector<Question> out;
  for (std::size_t o = 0; o < m.op_count; ++o) {
    const OpInfo& info = m.ops[o];
    if (!op.empty() && info.name != op) continue;
    if (info.role_count == paths.size()) {
      Question q{&info, {}, ""};
      for (std::size_t r = 0; r < info.role_count; ++r) q.targets.push_back({std::string(info.roles[r]), paths[r]});
      out.push_back(std::move(q));
    } else if (op.empty() && paths.size() == 1) {  // the path in each role, the others nowhere
      for (std::size_t at = 0; at < info.role_count; ++at) {
        Question q{&info, {}, normalize_path(paths[0])};
        for (std::size_t r = 0; r < info.role_count; ++r)
          q.targets.push_back({std::string(info.roles[r]), r == at ? paths[0] : std::string(kNowhere)});
        out.push_back(std::move(q));
      }
    }
  }
  return out;
}

}  // namespace

WhyAnswer why(LockEngine& engine, std::string_view ns, std::string_view op, const std::vector<std::string>& paths,
              std::size_t limit) {
  core::check_limit(limit, kMaxBlockers);
  const MatrixTable& m = engine.matrix();
  const int index = op.empty() ? 0 : m.op_index(op);
  if (index < 0) throw InvalidRequest(fmt::format("unknown operation '{}'", op));
  const std::vector<Question> asked = questions(m, op, paths);
  if (asked.empty())
    throw InvalidRequest(op.empty() ? fmt::format("no operation takes {} path(s)", paths.size())
                                    : fmt::format("operation '{}' takes {} path(s), got {}", op,
                                                  m.ops[static_cast<std::size_t>(index)].role_count, paths.size()));
  WhyAnswer out;
  for (const Question& q : asked) ask(engine, ns, q, limit, out);
  return out;
}

WhyAnswer why_conversion(LockEngine& engine, std::string_view ns, std::string_view id, std::string_view op,
                         const std::vector<std::string>& paths, std::size_t limit) {
  const MatrixTable& m = engine.matrix();
  const int index = m.op_index(op);
  if (index < 0) throw InvalidRequest(fmt::format("unknown operation '{}'", op));
  const OpInfo& info = m.ops[static_cast<std::size_t>(index)];
  if (info.role_count != paths.size())
    throw InvalidRequest(fmt::format("operation '{}' takes {} path(s), got {}", op, info.role_count, paths.size()));
  ConvertRequest request;
  request.ns = std::string(ns);
  request.id = std::string(id);
  request.op = std::string(op);
  for (std::size_t r = 0; r < info.role_count; ++r) request.targets.push_back({std::string(info.roles[r]), paths[r]});
  const BlockersPage page = engine.blockers(request, limit);
  WhyAnswer out;
  out.truncated = page.truncated;
  for (const Blocker& b : page.blockers) out.blockers.push_back(WhyBlocker{b, {std::string(op)}});
  return out;
}

}  // namespace pathlock::admin
