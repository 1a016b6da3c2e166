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

json conflict(const Conflict& c) {
  return json{{"id", c.id},
              {"owner", c.owner},
              {"op", c.op},
              {"role", c.role},
              {"path", c.path},
              {"requested_role", c.requested_role},
              {"requested_path", c.requested_path},
              {"relation", relation_name(c.relation)},
              {"queued", c.queued},
              {"expires_in_ms", c.expires_in.count()}};
}

json acquire_result(const AcquireResult& r) {
  if (r.cancelled) return json{{"granted", false}, {"cancelled", true}};
  if (r.not_holder) return json{{"granted", false}, {"not_holder", true}};
  if (!r.granted) return json{{"granted", false}, {"conflict", conflict(r.conflict)}};
  return grant(r.grant);
}

json blocker(const Blocker& b) {
  return json{{"kind", b.queued ? "waiter" : "lock"},
              {"id", b.id},
              {"owner", b.owner},
              {"op", b.op},
              {"role", b.role},
              {"path", b.path},
              {"requested_role", b.requested_role},
              {"requested_path", b.requested_path},
              {"relation", relation_name(b.relation)},
              {"queued", b.queued},
              {"expires_in_ms", b.expires_in.count()},
              {"fence", b.fence},
              {"holds", b.holds},
              {"waited_ms", b.waited.count()}};
}

json why_blocker(const admin::WhyBlocker& b, bool with_refuses) {
  json j = blocker(b.blocker);
  if (with_refuses) j["refuses"] = b.refuses;
  return j;
}

json waiter(const WaiterInfo& w) {
  return json{{"id", w.id},
              {"owner", w.owner},
              {"op", w.op},
              {"targets", targets(w.targets)},
              {"waited_ms", w.waited.count()},
              {"expires_in_ms", w.expires_in.count()}};
}

}  // namespace pathlock::json_codec
