-- leave: takes a waiting request out of the line (an error, or the caller
-- gave up); harmless when the place is already gone.
-- Keys, arguments and replies: docs/lua-protocol.md#leave.

local function pl_leave(keys, argv)
  local c, bad = begin(keys)
  if not c then return bad end
  if #argv ~= 1 then return { "invalid", "leave takes waiter_id" } end
  bad = check_meta(c)
  if bad then return bad end
  local ended = ended_waiters(c)
  local mine = valid_id(argv[1]) and redis.call("HGET", c.wrec, argv[1]) and load_waiters(c, { argv[1] })[1]
  local reaped, stale = expired_locks(c)
  if mine then
    local listed = false
    for _, w in ipairs(ended) do listed = listed or w.id == mine.id end
    if not listed then ended[#ended + 1] = mine end
  end
  if #ended + #reaped + #stale > 0 then
    bad = writable(c, false, true)
    if bad then return bad end
    remove_waiters(c, ended)
    remove_locks(c, reaped, stale)
  end
  return { "left", mine and 1 or 0 }
end
