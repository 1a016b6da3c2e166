#include "json_codec.hpp"

namespace pathlock::json_codec {

json targets(const std::vector<Target>& targets) {
  json t = json::object();
  for (const Target& x : targets) t[x.role] = x.path;
  return t;
}

json lock(const LockInfo& l) {
  return json{{"id", l.id},     {"owner", l.owner}, {"op", l.op},
              {"targets", targets(l.targets)}, {"fence", l.fence}, {"holds", l.holds},
              {"expires_in_ms", l.expires_in.count()}};
}

json grant(const Grant& g) {
  return json{{"granted", true}, {"id", g.id},       {"token", g.token},
              {"fence", g.fence}, {"holds", g.holds}, {"expires_in_ms", g.expires_in.count()}};
}

namespace {

// What refused (or would refuse) a request: the fields a Conflict and a
// Blocker share, under the same names.
template <class Refusal>
json refusal(const Refusal& x) {
  return json{{"id", x.id},
              {"owner", x.owner},
              {"op", x.op},
              {"role", x.role},
              {"path", x.path},
              {"requested_role", x.requested_role},
              {"requested_path", x.requested_path},
              {"relation", relation_name(x.relation)},
              {"queued", x.queued},
              {"expires_in_ms", x.expires_in.count()}};
}

}  // namespace

json conflict(const Conflict& c) { return refusal(c); }

json acquire_result(const AcquireResult& r) {
  if (r.cancelled()) return json{{"granted", false}, {"cancelled", true}};
  if (r.not_holder()) return json{{"granted", false}, {"not_holder", true}};
  if (r.over_limit())
    return json{{"granted", false},
                {"over_limit", {{"limit", limit_name(r.limit.limit)}, {"max", r.limit.max}, {"count", r.limit.count}}}};
  if (r.would_deadlock())
    return json{{"granted", false}, {"would_deadlock", true}, {"conflict", conflict(r.conflict)}};
  if (!r.granted()) return json{{"granted", false}, {"conflict", conflict(r.conflict)}};
  return grant(r.grant);
}

json blocker(const Blocker& b) {
  json j = refusal(b);
  j["kind"] = b.queued ? "waiter" : "lock";
  j["fence"] = b.fence;
  j["holds"] = b.holds;
  j["waited_ms"] = b.waited.count();
  return j;
}

json why_blocker(const admin::WhyBlocker& b, bool with_refuses) {
  json j = blocker(b.blocker);
  if (with_refuses) j["refuses"] = b.refuses;
  return j;
}

json waiter(const WaiterInfo& w) {
  json j{{"id", w.id},
         {"owner", w.owner},
         {"op", w.op},
         {"targets", targets(w.targets)},
         {"waited_ms", w.waited.count()},
         {"expires_in_ms", w.expires_in.count()}};
  if (!w.converts.empty()) j["converts"] = w.converts;
  return j;
}

json namespace_status(const admin::NamespaceStatus& s) {
  json out{{"namespace", s.ns}};
  if (!s.exists) {
    out["exists"] = false;
    return out;
  }
  out["layout"] = s.layout;
  if (s.fence) out["fence"] = *s.fence;
  json matrices = json::array();
  for (const admin::MatrixInUse& m : s.matrices) {
    json j{{"fingerprint", m.fingerprint}, {"name", m.name}, {"version", m.version}};
    if (m.tag > 0) j["tag"] = m.tag;
    if (m.locks) j["locks"] = *m.locks;
    if (m.waiters) j["waiters"] = *m.waiters;
    matrices.push_back(std::move(j));
  }
  out["matrices"] = std::move(matrices);
  return out;
}

json limits(const Limits& l) {
  const auto one = [](const std::optional<std::uint64_t>& v) { return v ? json(*v) : json(nullptr); };
  return json{{"locks", one(l.locks)}, {"places", one(l.places)}, {"owner_locks", one(l.owner_locks)}};
}

json limits_status(std::string_view ns, const LimitsStatus& s) {
  return json{{"namespace", ns},
              {"defaults", limits(s.defaults)},
              {"own", s.overrides ? limits(*s.overrides) : json(nullptr)},
              {"effective", limits(s.effective)},
              {"use", {{"locks", s.locks}, {"places", s.places}, {"owner_locks", s.owner_locks}, {"owner", s.owner}}}};
}

}  // namespace pathlock::json_codec
