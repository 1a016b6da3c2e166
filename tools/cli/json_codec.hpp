// The one JSON shape of each value the programs print: the shell's replies,
// `pathlock admin`'s lines and the console's API all write these values
// through these functions, so a lock, a grant, a conflict, a blocker or a
// waiter reads the same wherever it appears. The shapes: docs/json.md.
#pragma once

#include <pathlock/admin.hpp>
#include <pathlock/engine.hpp>

#include <nlohmann/json.hpp>

#include <vector>

namespace pathlock::json_codec {

using json = nlohmann::json;

// {"ROLE": "PATH", ...}: a request's or a lock's paths by role.
json targets(const std::vector<Target>& targets);
// {"id","owner","op","targets","fence","holds","expires_in_ms"}
json lock(const LockInfo& lock);
// {"granted":true,"id","token","fence","holds","expires_in_ms"}
json grant(const Grant& grant);
// {"id","owner","op","role","path","requested_role","requested_path",
//  "relation","queued","expires_in_ms"}: what refused an acquire.
json conflict(const Conflict& conflict);
// An acquire's answer: grant(), or {"granted":false} with "conflict",
// "not_holder":true or "cancelled":true.
json acquire_result(const AcquireResult& result);
// A conflict's fields, and "kind" ("lock" or "waiter"), "fence", "holds"
// and "waited_ms" (0 where they do not apply).
json blocker(const Blocker& blocker);
// blocker(), and "refuses" (the operations it refuses there) when the
// question named no operation.
json why_blocker(const admin::WhyBlocker& blocker, bool with_refuses);
// {"id","owner","op","targets","waited_ms","expires_in_ms"}
json waiter(const WaiterInfo& waiter);
// {"namespace","exists":false} or {"namespace","layout","fence","matrices":[{"tag",
// "fingerprint","name","version","locks","waiters"}]} (`admin status`).
json namespace_status(const admin::NamespaceStatus& status);
// {"locks":N|null,"places":N|null,"owner_locks":N|null} (null: no limit).
json limits(const Limits& limits);
// {"namespace","defaults","own" (null: none),"effective","use":{"locks","places","owner_locks","owner"}}.
json limits_status(std::string_view ns, const LimitsStatus& status);

}  // namespace pathlock::json_codec
