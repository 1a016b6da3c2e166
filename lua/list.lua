--[[
  lua/list.lua: the functions list and list_ro: one page of the live locks
  with a target at or inside a prefix, in fence order (list reaps what has
  ended first; list_ro writes nothing and skips it). Keys, arguments and replies:
  docs/lua-protocol.md#list. Cost: at most PL_LIST_SCAN locks are looked at
  per call (one ZRANGEBYLEX of the fence-ordered members of ent and one HMGET
  of their records), so a page costs O(PL_LIST_SCAN + log n) however many
  locks the namespace holds.

  Uses:      Values (dec), Call (begin), Commands (chunked), Meta (check_meta),
             Paths (path_problem, within, fence16), Records (unpack_lock, remaining),
             Removal (expired_locks, ended_waiters, remove_ended); PL_MAX_LIST,
             PL_LIST_SCAN, PL_FENCE_DIGITS
  Provides:  List.list, List.list_ro
]]
local List
do
  local dec = Values.dec
  local begin = Call.begin
  local chunked = Commands.chunked
  local check_meta = Meta.check_meta
  local path_problem, within, fence16 = Paths.path_problem, Paths.within, Paths.fence16
  local unpack_lock, remaining = Records.unpack_lock, Records.remaining
  local expired_locks, ended_waiters, remove_ended = Removal.expired_locks, Removal.ended_waiters,
    Removal.remove_ended

  -- The cursor after list member m ("F" .. fence .. id, the fence in
  -- PL_FENCE_DIGITS digits): the fence in decimal, without leading zeros.
  local function cursor(m)
    return (sgsub(ssub(m, 2, PL_FENCE_DIGITS + 1), "^0+(%d)", "%1"))
  end

  -- The page of list members `members` (fence order): {"locks", "", row_1,
  -- ...} with the live locks inside `prefix`, at most `limit`, and the cursor
  -- of the next page when the page is full before the members end.
  local function page(c, members, prefix, limit)
    local ids = {}
    for i = 1, #members do ids[i] = ssub(members[i], PL_FENCE_DIGITS + 2) end
    local recs = #ids > 0 and chunked("HMGET", c.locks, ids) or {}
    local reply = { "locks", "" }
    for i = 1, #members do
      local l = recs[i] and unpack_lock(ids[i], recs[i])
      if l and l.exp > c.now then
        local inside = false
        for _, p in ipairs(l.paths) do inside = inside or within(p, prefix) end
        if inside then
          local targets = {}
          for r, role in ipairs(l.info.roles) do
            targets[#targets + 1] = role
            targets[#targets + 1] = l.paths[r]
          end
          -- the layout of src/redis/replies.hpp (reply::lock_row)
          reply[#reply + 1] = { l.id, l.owner, l.op, tonum(l.f16), l.holds, remaining(l.exp, c.now), targets }
        end
      end
      if #reply - 2 >= limit and i < #members then return reply, cursor(members[i]) end
    end
    return reply, ""
  end

  -- The call context and the checked arguments of list and list_ro:
  -- c, prefix, limit, after; or nil and the "invalid" or "layout" reply.
  local function arguments(keys, argv)
    local c, bad = begin(keys)
    if not c then return nil, bad end
    if #argv ~= 3 then return nil, { "invalid", "list takes prefix, limit, after" } end
    local prefix, limit, after = argv[1], dec(argv[2]), argv[3]
    local problem = path_problem(prefix)
    if problem then return nil, { "invalid", "prefix '" .. tostring(prefix) .. "' " .. problem } end
    if not limit or limit < 1 or limit > PL_MAX_LIST then
      return nil, { "invalid", "limit must be decimal digits, 1.." .. PL_MAX_LIST }
    end
    if after ~= "" and (not sfind(after, "^%d+$") or #after > PL_FENCE_DIGITS) then
      return nil, { "invalid", "after must be empty or a fence (decimal)" }
    end
    bad = check_meta(c)
    if bad then return nil, bad end
    return c, prefix, limit, after
  end

  -- The page from the cursor `after` on (what has ended is skipped, reaped or not).
  local function listing(c, prefix, limit, after)
    local from = after == "" and "[F" or "[F" .. fence16(tonum(after) + 1)
    local members = rcall("ZRANGEBYLEX", c.ent, from, "(G", "LIMIT", "0", tostring(PL_LIST_SCAN))
    local reply, next = page(c, members, prefix, limit)
    if next == "" and #members == PL_LIST_SCAN then next = cursor(members[#members]) end
    reply[2] = next
    return reply
  end

  -- list: reaps what has ended first (a write), then lists.
  local function pl_list(keys, argv)
    local c, prefix, limit, after = arguments(keys, argv)
    if not c then return prefix end
    local reaped, stale = expired_locks(c)
    local ended = ended_waiters(c)
    local bad = remove_ended(c, reaped, stale, ended)
    if bad then return bad end
    return listing(c, prefix, limit, after)
  end

  -- list_ro: the same page, writing nothing (registered no-writes: a user
  -- with read rights only may call it, and a replica may serve it).
  local function pl_list_ro(keys, argv)
    local c, prefix, limit, after = arguments(keys, argv)
    if not c then return prefix end
    return listing(c, prefix, limit, after)
  end

  List = { list = pl_list, list_ro = pl_list_ro }
end
