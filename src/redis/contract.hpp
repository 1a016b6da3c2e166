// The library's contract: one JSON document that tells a client in any
// language what it needs to call the library (docs/lua-protocol.md#contract-read-only):
// the protocol version and layout, the keys, the operations of the matrix
// and their roles, the relation names, the limits, every function with its
// keys, arguments, flags and replies, the layout and RESP type of every
// reply, and the error replies with what each means for a retry.
//
// Built from the definitions the library itself is built from: the
// MatrixTable, the C++ limits, library.hpp's numbers of the layout and the
// reply positions of replies.hpp (a field placed twice or left out throws).
// library.cpp embeds the text in the data chunk (PL_CONTRACT) and
// lua/contract.lua returns it: FCALL_RO <prefix>contract 0.
// tests/redis_contract_test.cpp compares the library's answer with the
// document docs/lua-protocol.md shows, and its functions with FUNCTION LIST.
//
// Header-only: included by library.cpp alone (the library's object target
// has one source of its own).
#pragma once

#include "core/quoted.hpp"
#include "core/waiting.hpp"
#include "redis/library.hpp"
#include "redis/replies.hpp"
#include "redis/request_layout.hpp"

#include <pathlock/engine.hpp>
#include <pathlock/matrix_table.hpp>
#include <pathlock/path.hpp>

#include <fmt/format.h>

#include <array>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pathlock::redis::contract {

// The protocol version the library implements (docs/lua-protocol.md#versions).
inline constexpr std::string_view kProtocolVersion = "4.6";

inline std::string json_string(std::string_view s) {
  return core::quoted(s, [](unsigned char c) {
    return c >= 0x80 ? std::string(1, static_cast<char>(c)) : fmt::format("\\u{:04x}", c);
  });
}

inline std::string json_strings(const std::vector<std::string_view>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + json_string(items[i]);
  return out + "]";
}

// One field of a reply: its name and RESP type ("bulk", "int", "array").
struct Field {
  std::size_t at;
  std::string_view name, type;
};

// The fields of a reply as a JSON array of [name, type] in position order;
// every position below `size` must be named exactly once.
inline std::string layout(std::initializer_list<Field> fields, std::size_t size) {
  std::vector<const Field*> at(size, nullptr);
  for (const Field& f : fields) {
    if (f.at >= size || at[f.at]) throw std::logic_error(fmt::format("contract: reply field {} misplaced", f.name));
    at[f.at] = &f;
  }
  std::string out = "[";
  for (std::size_t i = 0; i < size; ++i) {
    if (!at[i]) throw std::logic_error(fmt::format("contract: reply position {} has no field", i));
    out += fmt::format("{}[{}, {}]", i ? ", " : "", json_string(at[i]->name), json_string(at[i]->type));
  }
  return out + "]";
}

// Replies whose positions replies.hpp defines (the C++ engine reads them).
inline std::string engine_replies() {
  namespace g = reply::granted;
  namespace r = reply::refused;
  // would_deadlock (convert, protocol 4.5) has refused's fields.
  return fmt::format(
      "\"granted\": {{\"fields\": {0}}},\n    \"refused\": {{\"fields\": {1}}},\n"
      "    \"would_deadlock\": {{\"fields\": {1}}},\n"
      "    \"locks\": {{\"fields\": {2}, \"rows\": \"lock\"}},\n"
      "    \"blockers\": {{\"fields\": {3}, \"rows\": \"blocker\"}},\n"
      "    \"waiters\": {{\"fields\": {4}, \"rows\": \"waiter\"}}",
      layout({{g::status, "status", "bulk"}, {g::id, "id", "bulk"}, {g::token, "token", "bulk"},
              {g::fence, "fence", "int"}, {g::expires_in_ms, "expires_in_ms", "int"}, {g::holds, "holds", "int"}},
             g::size),
      layout({{r::status, "status", "bulk"}, {r::id, "id", "bulk"}, {r::op, "op", "bulk"}, {r::role, "role", "bulk"},
              {r::path, "path", "bulk"}, {r::owner, "owner", "bulk"}, {r::expires_in_ms, "expires_in_ms", "int"},
              {r::requested_role, "requested_role", "bulk"}, {r::requested_path, "requested_path", "bulk"},
              {r::relation, "relation", "bulk"}, {r::queued, "queued", "int"}},
             r::size),
      layout({{reply::list::status, "status", "bulk"}, {reply::list::next, "next", "bulk"}}, reply::list::first_row),
      layout({{reply::blockers::status, "status", "bulk"}, {reply::blockers::truncated, "truncated", "int"}},
             reply::blockers::first_row),
      layout({{reply::waiters::status, "status", "bulk"}}, reply::waiters::first_row));
}

// The rows of list, blockers and waiters (replies.hpp).
inline std::string rows() {
  namespace l = reply::lock_row;
  namespace b = reply::blocker_row;
  namespace w = reply::waiter_row;
  return fmt::format(
      "\"lock\": {},\n    \"blocker\": {},\n    \"waiter\": {}",
      layout({{l::id, "id", "bulk"}, {l::owner, "owner", "bulk"}, {l::op, "op", "bulk"}, {l::fence, "fence", "int"},
              {l::holds, "holds", "int"}, {l::expires_in_ms, "expires_in_ms", "int"}, {l::targets, "targets", "array"}},
             l::size),
      layout({{b::queued, "queued", "int"}, {b::id, "id", "bulk"}, {b::owner, "owner", "bulk"}, {b::op, "op", "bulk"},
              {b::role, "role", "bulk"}, {b::path, "path", "bulk"}, {b::requested_role, "requested_role", "bulk"},
              {b::requested_path, "requested_path", "bulk"}, {b::relation, "relation", "bulk"},
              {b::fence, "fence", "int"}, {b::holds, "holds", "int"}, {b::expires_in_ms, "expires_in_ms", "int"},
              {b::waited_ms, "waited_ms", "int"}},
             b::size),
      layout({{w::id, "waiter_id", "bulk"}, {w::owner, "owner", "bulk"}, {w::op, "op", "bulk"},
              {w::waited_ms, "waited_ms", "int"}, {w::expires_in_ms, "expires_in_ms", "int"},
              {w::targets, "targets", "array"}, {w::converts, "converts", "bulk"}},
             w::size));
}

// Replies the library builds in one place each (docs/lua-protocol.md#reply-types).
inline std::string other_replies() {
  const auto plain = [](std::initializer_list<std::pair<std::string_view, std::string_view>> fields) {
    std::string out = "[";
    bool first = true;
    for (const auto& [name, type] : fields) {
      out += fmt::format("{}[{}, {}]", first ? "" : ", ", json_string(name), json_string(type));
      first = false;
    }
    return "{\"fields\": " + out + "]}";
  };
  const auto s = std::pair<std::string_view, std::string_view>{"status", "bulk"};
  return fmt::format(
      "\"not_holder\": {},\n    \"late\": {},\n    \"released\": {},\n    \"missing\": {},\n    \"renewed\": {},\n"
      "    \"left\": {},\n    \"held\": {},\n    \"ok\": {},\n    \"denied\": {{\"fields\": [[\"status\", \"bulk\"]], "
      "\"rest\": [\"command\", \"bulk\"]}},\n    \"info\": {},\n    \"contract\": {},\n    \"invalid\": {},\n"
      "    \"layout\": {},\n    \"over_limit\": {},\n    \"limits\": {}",
      plain({s}), plain({s, {"now_ms", "int"}}), plain({s, {"holds_left", "int"}}), plain({s}),
      plain({s, {"expires_in_ms", "int"}}), plain({s, {"removed", "int"}}), plain({s, {"held", "int"}}), plain({s}),
      plain({s, {"library", "bulk"}, {"matrix", "bulk"}, {"matrix_version", "bulk"}, {"fingerprint", "bulk"},
             {"layout", "int"}, {"pathlock_version", "bulk"}}),
      plain({s, {"json", "bulk"}}), plain({s, {"message", "bulk"}}),
      plain({s, {"stored", "bulk"}, {"mine", "bulk"}}),
      plain({s, {"limit", "bulk"}, {"max", "int"}, {"count", "int"}}),
      plain({s, {"own", "bulk"}, {"locks", "int"}, {"places", "int"}, {"owner_locks", "int"}, {"owner", "bulk"}}));
}

// One function: name, keys (9: the namespace's; 0: none), arguments
// ("path..." stands for one path per role of the operation, in role order),
// optional trailing groups, flags and the replies it gives besides
// "invalid" (and "layout" for functions with keys).
struct Function {
  std::string_view name;
  int keys;
  std::vector<std::string_view> args, optional, optional_more, flags, replies;
  std::vector<std::string_view> optional_last{};  // a third optional group, after optional_more
};

inline std::string function_json(const Function& f) {
  std::string optional = "[";
  if (!f.optional.empty()) optional += json_strings(f.optional);
  if (!f.optional_more.empty()) optional += ", " + json_strings(f.optional_more);
  if (!f.optional_last.empty()) optional += ", " + json_strings(f.optional_last);
  return fmt::format(
      "    {{\"name\": {}, \"keys\": {}, \"args\": {}, \"optional\": {}], \"flags\": {}, \"replies\": {}}}",
      json_string(f.name), f.keys, json_strings(f.args), optional, json_strings(f.flags), json_strings(f.replies));
}

// acquire's entry, from the layout the engine builds its calls with
// (request_layout.hpp); convert's has the same arguments (protocol 4.5).
inline Function acquire_function(std::string_view name = "acquire") {
  namespace a = acquire_args;
  Function f{name, 9, {a::kHead.begin(), a::kHead.end()}, {}, {}, {}, {"granted", "refused", "not_holder",
             "late", "over_limit"}};
  if (name == "convert") f.replies.insert(f.replies.begin() + 2, "would_deadlock");
  f.args.push_back(a::kPaths);
  std::vector<std::string_view>* groups[] = {&f.optional, &f.optional_more, &f.optional_last};
  std::size_t at = 0;
  for (std::size_t g = 0; g < a::kTailGroups.size(); ++g)
    for (std::size_t i = 0; i < a::kTailGroups[g]; ++i) groups[g]->push_back(a::kTail[at++]);
  return f;
}

// The functions as lua/register.lua registers them (the test compares).
inline std::string functions() {
  const std::vector<Function> all{
      acquire_function(),
      acquire_function("convert"),
      {"release", 9, {"id", "token"}, {}, {}, {"allow-oom"}, {"released", "missing"}},
      {"force_release", 9, {"id"}, {}, {}, {"allow-oom"}, {"released", "missing"}},
      {"renew", 9, {"id", "token", "ttl_ms"}, {}, {}, {"allow-oom"}, {"renewed", "missing"}},
      {"leave", 9, {"waiter_id"}, {}, {}, {"allow-oom"}, {"left"}},
      {"list", 9, {"prefix", "limit", "after"}, {}, {}, {"allow-oom"}, {"locks"}},
      {"list_ro", 9, {"prefix", "limit", "after"}, {}, {}, {"no-writes"}, {"locks"}},
      {"probe", 9, {}, {}, {}, {"no-writes"}, {"ok", "denied"}},
      {"held", 9, {"id", "token"}, {}, {}, {"no-writes"}, {"held"}},
      {"blockers", 9, {"op", "path...", "limit"}, {"converts", "fair"}, {}, {"no-writes"}, {"blockers"}},
      {"waiters", 9, {"prefix", "limit"}, {}, {}, {"no-writes"}, {"waiters"}},
      {"info", 0, {}, {}, {}, {"no-writes", "allow-stale"}, {"info"}},
      {"contract", 0, {}, {}, {}, {"no-writes", "allow-stale"}, {"contract"}},
      {"set_limits", 9, {"limits"}, {}, {}, {"allow-oom"}, {"limits"}},
      {"limits_ro", 9, {}, {}, {}, {"no-writes"}, {"limits"}},
  };
  std::string out;
  for (const Function& f : all) out += (out.empty() ? "" : ",\n") + function_json(f);
  return out;
}

// Error replies (RESP errors, by prefix; docs/lua-protocol.md#failures-and-partial-writes):
// what the call changed ("nothing", or "at most reaping": ended leases and
// places it removed first) and when it may be sent again.
inline std::string errors() {
  const std::string nothing = "nothing", reaping = "at most reaping";
  const std::vector<std::array<std::string, 3>> all{
      {"ERR Function not found", nothing, "load the library, then send the call again"},
      {"NOPERM", nothing, "never: grant the permission"},
      {"OOM", nothing, "later (acquire and convert only; the other functions run at maxmemory)"},
      {"PATHLOCK index out of step", reaping, "never: the namespace's data is damaged"},
      {"PATHLOCK fence space exhausted", reaping, "never: use another namespace"},
      {fmt::format("PATHLOCK {} matrices are in use", kMaxTags), reaping, "after the deploys in progress finish"},
      {"MOVED", nothing, "at once, on the node named"},
      {"ASK", nothing, "once, on the node named, after ASKING"},
      {"TRYAGAIN", nothing, "after a back-off"},
      {"CLUSTERDOWN", nothing, "after a back-off"},
      {"LOADING", nothing, "after a back-off"},
      {"MASTERDOWN", nothing, "after a back-off"},
      {"BUSY", nothing, "after a back-off"},
      {"READONLY", nothing, "on the primary"},
      {"ERR Error running script", "unknown", "never: a bug or a broken library; report it"},
  };
  std::string out;
  for (const auto& [prefix, changed, retry] : all)
    out += fmt::format("{}    {{\"prefix\": {}, \"changed\": {}, \"retry\": {}}}", out.empty() ? "" : ",\n",
                       json_string(prefix), json_string(changed), json_string(retry));
  return out;
}

// The waiting policy's numbers (core/waiting.hpp): every client's wait loop
// uses these (docs/lua-protocol.md#waiting-and-the-line).
inline std::string waiting() {
  return fmt::format("\"recheck_ms\": {}, \"max_reservation_ms\": {}, \"wake_margin_ms\": {}", core::kRecheck.count(),
                     core::kMaxReservation.count(), core::kWakeMargin.count());
}

// The limits the functions enforce (the C++ constants).
inline std::string limits() {
  return fmt::format(
      "\"ttl_ms\": {}, \"reserve_ms\": {}, \"path_bytes\": {}, \"component_bytes\": {}, \"owner_bytes\": {}, "
      "\"id_chars\": {}, \"token_bytes\": {}, \"idempotency_key_chars\": {}, \"namespace_bytes\": {}, "
      "\"list_limit\": {}, \"blockers_limit\": {}, \"waiters_limit\": {}, \"decimal_digits\": {}, \"max_fence\": {}, "
      "\"reap_per_call\": {}, \"list_scan\": {}, \"expiry_margin_ms\": {}, \"max_matrices\": {}, "
      "\"limit_max\": {}, \"default_limits_key\": {}, \"default_limits_refresh_ms\": {}",
      kMaxTtl.count(), core::kMaxReservation.count(), kMaxPathBytes, kMaxComponentBytes, kMaxOwnerBytes, kMaxIdBytes,
      kMaxTokenBytes, kMaxIdempotencyKeyBytes, kMaxNamespaceBytes, kMaxListLimit, kMaxBlockers, kMaxWaiters,
      kMaxDecimalDigits, kMaxFence, kReapLimit, kListScan, kExpiryMarginMs, kMaxTags, kMaxLimit,
      json_string("pl:limits"), kLimitsRefresh.count());
}

inline std::string operations(const MatrixTable& t) {
  std::string out;
  for (std::size_t o = 0; o < t.op_count; ++o) {
    const OpInfo& op = t.ops[o];
    std::vector<std::string_view> roles;
    for (std::size_t r = 0; r < op.role_count; ++r) roles.push_back(op.roles[r]);
    out += fmt::format("{}    {{\"name\": {}, \"roles\": {}}}", out.empty() ? "" : ",\n", json_string(op.name),
                       json_strings(roles));
  }
  return out;
}

// The whole document (stable: the same table gives the same text).
inline std::string contract_json(const MatrixTable& t) {
  std::vector<std::string_view> keys(std::begin(kKeySuffixes), std::end(kKeySuffixes));
  std::vector<std::string_view> relations;
  for (std::size_t r = 0; r < kRelationCount; ++r) relations.push_back(relation_name(static_cast<Relation>(r)));
  return fmt::format(
      "{{\n  \"protocol\": {},\n  \"layout\": {},\n  \"stored_layouts\": {{\"expiring\": {}, \"plain\": {}}},\n"
      "  \"matrix\": {{\"name\": {}, \"version\": {}, \"fingerprint\": {}}},\n"
      "  \"keys\": {{\"pattern\": \"pl:{{NS}}:<suffix>\", \"suffixes\": {}}},\n"
      "  \"operations\": [\n{}\n  ],\n  \"relations\": {},\n  \"limits\": {{{}}},\n  \"waiting\": {{{}}},\n"
      "  \"functions\": [\n{}\n  ],\n  \"replies\": {{\n    {},\n    {}\n  }},\n  \"rows\": {{\n    {}\n  }},\n"
      "  \"errors\": [\n{}\n  ]\n}}\n",
      json_string(kProtocolVersion), kLayoutVersion, json_string(kExpiringLayout),
      json_string(std::to_string(kLayoutVersion)), json_string(t.name), json_string(t.version),
      json_string(t.fingerprint), json_strings(keys), operations(t), json_strings(relations), limits(), waiting(), functions(),
      engine_replies(), other_replies(), rows(), errors());
}

}  // namespace pathlock::redis::contract
