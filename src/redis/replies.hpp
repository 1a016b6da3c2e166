// The layouts of the Functions library's replies: the one definition of
// the position of every field the C++ engine reads (0-based, as
// Reply::at(); in Lua, position + 1). docs/lua-protocol.md documents the
// same layouts for other clients; the Lua files build them (lua/*.lua, at
// the sites named below), and tests/redis_lua_test.cpp ("every reply has the
// layout of src/redis/replies.hpp") calls each function directly and
// checks each field by these names, so a reply that moves a field fails
// there.
#pragma once

#include <cstddef>

namespace pathlock::redis::reply {

// acquire, granted (lua/acquire.lua: grant_again, grant):
// {"granted", id, token, fence, expires_in_ms, holds}
namespace granted {
inline constexpr std::size_t status = 0, id = 1, token = 2, fence = 3, expires_in_ms = 4, holds = 5, size = 6;
}

// acquire, refused (lua/acquire.lua: refuse):
// {"refused", id, op, role, path, owner, expires_in_ms, requested_role,
//  requested_path, relation, queued}
namespace refused {
inline constexpr std::size_t status = 0, id = 1, op = 2, role = 3, path = 4, owner = 5, expires_in_ms = 6,
                             requested_role = 7, requested_path = 8, relation = 9, queued = 10, size = 11;
}

// list: {"locks", next, lock_1, ...}; each lock (lua/list.lua) =
// {id, owner, op, fence, holds, expires_in_ms, {role_1, path_1, ...}}
namespace list {
inline constexpr std::size_t status = 0, next = 1, first_row = 2;
}
namespace lock_row {
inline constexpr std::size_t id = 0, owner = 1, op = 2, fence = 3, holds = 4, expires_in_ms = 5, targets = 6, size = 7;
}

// blockers: {"blockers", truncated, row_1, ...}; each row (lua/blockers.lua)
// = {queued, id, owner, op, role, path, requested_role, requested_path,
//    relation, fence, holds, expires_in_ms, waited_ms}
namespace blockers {
inline constexpr std::size_t status = 0, truncated = 1, first_row = 2;
}
namespace blocker_row {
inline constexpr std::size_t queued = 0, id = 1, owner = 2, op = 3, role = 4, path = 5, requested_role = 6,
                             requested_path = 7, relation = 8, fence = 9, holds = 10, expires_in_ms = 11,
                             waited_ms = 12, size = 13;
}

// waiters: {"waiters", row_1, ...}; each row (lua/blockers.lua) =
// {waiter_id, owner, op, waited_ms, expires_in_ms, {role_1, path_1, ...}}
namespace waiters {
inline constexpr std::size_t status = 0, first_row = 1;
}
namespace waiter_row {
// converts (protocol 4.5): the lock a waiting conversion converts, "" for an
// acquire; a library of protocol 4.4 sends the first six fields only.
inline constexpr std::size_t id = 0, owner = 1, op = 2, waited_ms = 3, expires_in_ms = 4, targets = 5, converts = 6,
                             size = 7;
}

// Every row of list and waiters starts with id, owner, op.
static_assert(lock_row::id == waiter_row::id && lock_row::owner == waiter_row::owner && lock_row::op == waiter_row::op);

}  // namespace pathlock::redis::reply

// ---- reading the replies (replies.cpp) --------------------------------------

#include <pathlock/engine.hpp>

#include <optional>
#include <vector>

namespace pathlock::redis {
struct Reply;
class RedisClient;
}  // namespace pathlock::redis

namespace pathlock::redis::reply {

// Each reads one reply (or row) of the layout above; a relation the engine
// does not know is a BackendError through `client`.
Grant read_grant(const Reply& r);
Conflict read_conflict(const Reply& r, const RedisClient& client);
// An acquire's or a conversion's reply (granted, refused, would_deadlock,
// not_holder, over_limit) as its result; nullopt for any other status
// (late, or one the caller reports as unexpected).
std::optional<AcquireResult> read_attempt(const Reply& r, const RedisClient& client);
LockInfo read_lock(const Reply& row);
Blocker read_blocker(const Reply& row, const RedisClient& client);
WaiterInfo read_waiter(const Reply& row);
// Puts the rows of a blockers reply in the documented order: per kind and
// target as the function sent them, each group sorted as the embedded
// backend sorts it (core::order_blockers).
void order_rows(std::vector<Blocker>& rows);

}  // namespace pathlock::redis::reply
