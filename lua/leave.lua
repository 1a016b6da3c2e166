--[[
  lua/leave.lua: the function leave: takes a waiting request out of the line
  (an error, or the caller gave up); harmless when the place is already gone.
  Keys, arguments and replies: docs/lua-protocol.md#leave.

  Uses:      Values (valid_id), Meta (begin_with), Removal (ended_waiters,
             load_waiters, expired_locks, add_once, remove_ended)
  Provides:  Leave.leave
]]
local Leave
do
  local valid_id = Values.valid_id
  local begin_with = Meta.begin_with
  local ended_waiters, load_waiters, expired_locks = Removal.ended_waiters, Removal.load_waiters,
    Removal.expired_locks
  local add_once, remove_ended = Removal.add_once, Removal.remove_ended

  local function pl_leave(keys, argv)
    local c, bad = begin_with(keys, argv, 1, "leave takes waiter_id")
    if not c then return bad end
    local ended = ended_waiters(c)
    local mine = valid_id(argv[1]) and rcall("HGET", c.wrec, argv[1]) and load_waiters(c, { argv[1] })[1]
    local reaped, stale = expired_locks(c)
    if mine then add_once(ended, mine) end
    bad = remove_ended(c, reaped, stale, ended)
    if bad then return bad end
    return { "left", mine and 1 or 0 }
  end

  Leave = { leave = pl_leave }
end
