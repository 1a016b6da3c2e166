-- list: one page of the live locks with a target at or inside a prefix, in
-- fence order. Keys, arguments and replies: docs/lua-protocol.md#list.
-- Cost: at most LIST_SCAN locks are looked at per call (one ZRANGEBYLEX of
-- the fence-ordered members of ent and one HMGET of their records), so a
-- page costs O(LIST_SCAN + log n) however many locks the namespace holds.

local LIST_SCAN = 512

-- The cursor after list member m ("F" .. 16-digit fence .. id): the fence
-- in decimal, without leading zeros.
local function cursor(m)
  return (sgsub(ssub(m, 2, 17), "^0+(%d)", "%1"))
end

-- The page of list members `members` (fence order): {"locks", "", row_1,
-- ...} with the live locks inside `prefix`, at most `limit`, and the cursor
-- of the next page when the page is full before the members end.
local function page(c, members, prefix, limit)
  local ids = {}
  for i = 1, #members do ids[i] = ssub(members[i], 18) end
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

local function pl_list(keys, argv)
  local c, bad = begin(keys)
  if not c then return bad end
  if #argv ~= 3 then return { "invalid", "list takes prefix, limit, after" } end
  local prefix, limit, after = argv[1], dec(argv[2]), argv[3]
  local problem = path_problem(prefix)
  if problem then return { "invalid", "prefix '" .. tostring(prefix) .. "' " .. problem } end
  if not limit or limit < 1 or limit > PL_MAX_LIST then
    return { "invalid", "limit must be decimal digits, 1.." .. PL_MAX_LIST }
  end
  if after ~= "" and (not sfind(after, "^%d+$") or #after > 16) then
    return { "invalid", "after must be empty or a fence (decimal)" }
  end
  bad = check_meta(c)
  if bad then return bad end
  local reaped, stale = expired_locks(c)
  local ended = ended_waiters(c)
  bad = remove_ended(c, reaped, stale, ended)
  if bad then return bad end
  local from = after == "" and "[F" or "[F" .. fence16(tonum(after) + 1)
  local members = rcall("ZRANGEBYLEX", c.ent, from, "(G", "LIMIT", "0", tostring(LIST_SCAN))
  local reply, next = page(c, members, prefix, limit)
  if next == "" and #members == LIST_SCAN then next = cursor(members[#members]) end
  reply[2] = next
  return reply
end
