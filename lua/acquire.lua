-- acquire: takes every target of one lock request, or none, in one atomic
-- call; for a request that waits, also keeps its place in line (fairness).
-- Keys, arguments and replies: docs/lua-protocol.md#acquire.
--
-- Cost: one HMGET of the index for all nodes of all targets (the check and
-- the counts to update), and on a grant one HSET of the index, one ZADD of
-- the entries and one write per other key, whatever the path depth and the
-- number of locks. A refusal names its witness with one ZREVRANGEBYLEX
-- (held at or above the path) or one ZRANGEBYLEX per blocking code present
-- below the path plus one ZREVRANGEBYLEX: O(log n) each, however wide the
-- folders are. Only fair requests meeting a possibly conflicting waiter, and
-- re-checks of a waiter in line, scan the line: O(waiters x targets).

local RELATION = { [0] = "same", [1] = "held_ancestor", [2] = "held_descendant" }

-- Does a target with global code `held` at `hp` refuse `code` at `rp`? The
-- relation index (0 same, 1 held_ancestor, 2 held_descendant) when it does,
-- else nil. Another matrix's target refuses whatever it overlaps.
local function refusal(c, held, hp, code, rp)
  local rel
  if hp == rp then rel = 0
  elseif within(rp, hp) then rel = 1
  elseif within(hp, rp) then rel = 2
  else return nil end
  if blocks(c, rel, code, held) then return rel end
  return nil
end

-- The newest entry with global code `g` exactly at `path` (highest fence):
-- the lock (nil when its record is gone) and the member (nil when none).
local function entry_at(c, path, g)
  local s = code4(g) .. spell(path)
  local m = rcall("ZREVRANGEBYLEX", c.ent, "(" .. s .. "\1", "[" .. s .. "\0", "LIMIT", "0", "1")[1]
  if not m then return nil, nil end
  local id = ssub(m, #s + 18)
  local rec = rcall("HGET", c.locks, id)
  return rec and unpack_lock(id, rec), m
end

-- Of the entries strictly below `path` with one of `codes` (ascending), the
-- one with the smallest path (component-wise), then the lowest code: one
-- ZRANGEBYLEX per code. Returns its path and code, or nil.
local function smallest_below(c, path, codes)
  local base = spell(path)
  local best, best_code
  for i = 1, #codes do
    local cc = code4(codes[i])
    local m = rcall("ZRANGEBYLEX", c.ent, "[" .. cc .. base .. "\1", "(" .. cc .. base .. "\2", "LIMIT", "0", "1")[1]
    if m then
      local s = ssub(m, 5, sfind(m, "\0", 5, true) - 1)
      if not best or s < best then best, best_code = s, codes[i] end
    end
  end
  if not best then return nil end
  return unspell(best), best_code
end

-- The held lock that refuses `code` at `path`, by the canonical rule
-- (docs/lua-protocol.md#the-conflicting-lock): strict ancestors from the
-- root down, then the path, then below it. Returns nil (no conflict), or a
-- table: { lock, code, path, relation }, or { expired = lock } / { stale =
-- member } (to remove before looking again), or { broken = where }.
local function held_conflict(c, b, code, path)
  local at, held, rel
  local p = path_info(path)
  local nodes, hf = p.nodes, kind_fields(p, "h")
  for j = 1, #nodes - 1 do
    held = lowest(c, val(b, hf[j]), 1, code)
    if held then
      at, rel = nodes[j], "held_ancestor"
      break
    end
  end
  if not at then
    held = lowest(c, val(b, hf[#nodes]), 0, code)
    if held then at, rel = path, "same" end
  end
  if not at then
    local below = val(b, kind_fields(p, "b")[#nodes])
    if below == EMPTY then return nil end
    local present = {}
    for k, n in pairs(below) do
      if n > 0 and blocks(c, 2, code, k) then present[#present + 1] = k end
    end
    if #present == 0 then return nil end
    tsort(present)
    at, held = smallest_below(c, path, present)
    if not at then return { broken = "below " .. path } end
    rel = "held_descendant"
  end
  local l, m = entry_at(c, at, held)
  if not m then return { broken = "at " .. at } end
  if not l then return { stale = m } end
  if l.exp <= c.now then return { expired = l } end
  return { lock = l, code = held, path = at, relation = rel }
end

-- Could a waiting target refuse `code` at `path`? From the waiter counts.
local function waiter_flag(c, b, code, path)
  local p = path_info(path)
  local n, whf = #p.nodes, kind_fields(p, "wh")
  for j = 1, n - 1 do
    if lowest(c, val(b, whf[j]), 1, code) then return true end
  end
  if lowest(c, val(b, whf[n]), 0, code) then return true end
  return lowest(c, val(b, kind_fields(p, "wb")[n]), 2, code) ~= nil
end

-- Fairness, the slow path: the oldest waiter in line (older than place
-- `before`, or any) that refuses `code` at `path` as if it held its lock.
-- Places whose reservation ended are collected in `ended`.
local function older_waiter(c, code, path, before, ended)
  local ids = before and rcall("ZRANGEBYSCORE", c.wq, "-inf", "(" .. num(before))
              or rcall("ZRANGE", c.wq, "0", "-1")
  for _, w in ipairs(load_waiters(c, ids)) do
    if w.stale or w.exp <= c.now then
      ended[#ended + 1] = w
    else
      for j = 1, #w.paths do
        local wcode = gcode(w.tag, w.info.first + j - 1)
        local rel = refusal(c, wcode, w.paths[j], code, path)
        if rel then return { waiter = w, code = wcode, path = w.paths[j], relation = RELATION[rel] } end
      end
    end
  end
  return nil
end

local function pl_acquire(keys, argv)
  local c, bad = begin(keys)
  if not c then return bad end
  -- Input checks, before anything is read or written.
  local owner, op_name, ttl, new_id, new_token = argv[1], argv[2], int(argv[3]), argv[4], argv[5]
  local op = PL_OPS[op_name or ""]
  if not op then return { "invalid", "unknown operation '" .. tostring(op_name) .. "'" } end
  local n = #op.roles
  if #argv ~= 5 + n and #argv ~= 8 + n then
    return { "invalid", "operation '" .. op_name .. "' takes " .. n
                        .. " path(s) after 5 arguments, then optionally fair, waiter_id, reserve_ms" }
  end
  if owner == "" or #owner > 256 then return { "invalid", "owner must be 1..256 bytes" } end
  if not ttl or ttl ~= mfloor(ttl) or ttl < 1 or ttl > PL_MAX_TTL then
    return { "invalid", "ttl must be an integer 1.." .. PL_MAX_TTL .. " ms" }
  end
  local ttl_s = sfind(argv[3], "^[1-9]%d*$") and argv[3] or num(ttl)
  if not valid_id(new_id) then return { "invalid", "new_id must be 1..64 of [A-Za-z0-9-]" } end
  if new_token == "" or #new_token > 256 then return { "invalid", "new_token must be 1..256 bytes" } end
  local paths = {}
  for i = 1, n do
    paths[i] = argv[5 + i]
    local problem = path_problem(paths[i])
    if problem then return { "invalid", op.roles[i] .. " path '" .. paths[i] .. "' " .. problem } end
  end
  for k = 1, #op.not_inside do
    local pair = op.not_inside[k]
    if within(paths[pair[1]], paths[pair[2]]) then
      return { "invalid", op_name .. ": " .. op.roles[pair[1]] .. " may not be " .. op.roles[pair[2]] .. " or inside it" }
    end
  end
  local fair, waiter_id, reserve = true, "", 0
  if #argv == 8 + n then
    fair, waiter_id, reserve = argv[6 + n], argv[7 + n], int(argv[8 + n])
    if fair ~= "1" and fair ~= "0" then return { "invalid", "fair must be 1 or 0" } end
    fair = fair == "1"
    if waiter_id ~= "" and not valid_id(waiter_id) then
      return { "invalid", "waiter_id must be empty or 1..64 of [A-Za-z0-9-]" }
    end
    if waiter_id ~= "" and not fair then return { "invalid", "only a fair request takes a place in line" } end
    if not reserve or reserve ~= mfloor(reserve) or reserve < 0 or reserve > PL_MAX_TTL then
      return { "invalid", "reserve_ms must be an integer 0.." .. PL_MAX_TTL }
    end
    reserve = mmin(reserve, PL_MAX_RESERVE) -- a dead waiter blocks fair requests no longer than this
  end
  local reply = check_meta(c)
  if reply then return reply end

  -- Reads: the caller's place in line, what expired, the reentry lock.
  local me
  if waiter_id ~= "" then
    local rec = rcall("HGET", c.wrec, waiter_id)
    if rec then
      me = load_waiters(c, { waiter_id })[1]
      if me.stale or me.tag ~= c.tag or me.owner ~= owner or me.op ~= op_name or tconcat(me.paths, "\0") ~= tconcat(paths, "\0") then
        return { "invalid", "waiter_id " .. waiter_id .. " is in use by another request" }
      end
    end
  end
  local reaped, stale = expired_locks(c)
  local ended, line_empty = ended_waiters(c)
  if me and me.exp <= c.now then
    -- Its reservation ran out (the caller stalled): the place is lost; a
    -- refusal below puts the caller at the back again.
    add_once(ended, me)
    me = nil
  end
  bad = remove_ended(c, reaped, stale, ended)
  if bad then return bad end

  -- (Only a matrix in use here can hold a lock to re-enter.)
  local reentry_tag = c.tag
  local reentry = reentry_tag and reentry_field(reentry_tag, owner, op_name, paths)
  local lr = reentry and rcall("HMGET", c.locks, reentry, new_id) or { false, rcall("HGET", c.locks, new_id) }
  if lr[1] then
    local rec = rcall("HGET", c.locks, lr[1])
    local l = rec and unpack_lock(lr[1], rec)
    if l and l.exp > c.now and l.tag == c.tag and l.owner == owner and l.op == op_name
       and tconcat(l.paths, "\0") == tconcat(paths, "\0") then
      bad = writable(c, true, me ~= nil)
      if bad then return bad end
      l.holds = l.holds + 1
      if c.now + ttl > l.exp then
        l.exp = c.now + ttl
        l.exp_s = num(l.exp)
      end
      l.ttl, l.ttl_s = ttl, ttl_s
      rcall("ZADD", c.exp, l.exp_s, l.id)
      rcall("HSET", c.locks, l.id, pack_lock(l))
      if me then remove_waiters(c, { me }) end
      return { "granted", l.id, l.token, tonum(l.f16), remaining(l.exp, c.now), l.holds }
    end
    if l and l.exp <= c.now then
      bad = writable(c, false, true)
      if bad then return bad end
      remove_locks(c, { l })
    end
  end
  if lr[2] then return { "invalid", "new_id " .. new_id .. " is in use" } end

  -- The check: held locks first (every request), in role order.
  local newcomer_line = fair and not me and not line_empty
  local b, w, flagged
  while true do
    b, flagged = batch(check_set(paths[1])), {}
    for i = 1, n do
      if i > 1 then
        local fields = check_set(paths[i]).fields
        for k = 1, #fields do want(b, fields[k]) end
      end
      if newcomer_line then
        local whf = fields_of(paths[i], "wh")
        for j = 1, #whf do want(b, whf[j]) end
        want(b, fields_of(paths[i], "wb")[#whf])
      end
    end
    fetch(c, b)
    local again = false
    w = nil
    for i = 1, n do
      local code = op.first + i - 1
      local found = held_conflict(c, b, code, paths[i])
      if found and found.broken then
        return redis.error_reply("PATHLOCK index out of step " .. found.broken .. " (code " .. code .. ")")
      elseif found and (found.expired or found.stale) then
        bad = writable(c, false, true)
        if bad then return bad end
        if found.expired then remove_locks(c, { found.expired }) else rcall("ZREM", c.ent, found.stale) end
        again = true
        break
      elseif found then
        w = found
        w.at = i
        break
      end
      flagged[i] = newcomer_line and waiter_flag(c, b, code, paths[i])
    end
    if not again then break end
  end

  -- Then older waiters (fair requests only): a newcomer scans the line only
  -- for targets the waiter counts flag; a waiter in line scans the waiters
  -- older than itself (strict order, so waiters never wait in a cycle).
  if not w and fair then
    local gone = {}
    for i = 1, n do
      if me or flagged[i] then
        w = older_waiter(c, op.first + i - 1, paths[i], me and me.seq, gone)
        if w then
          w.at = i
          break
        end
      end
    end
    if #gone > 0 then
      bad = writable(c, false, true)
      if bad then return bad end
      remove_waiters(c, gone)
    end
  end

  if w then
    -- Refused: keep, take or (last attempt) give up the caller's place.
    if waiter_id ~= "" and reserve > 0 then
      local exp = num(c.now + reserve)
      if me then
        bad = writable(c, true, true)
        if bad then return bad end
        rcall("ZADD", c.wexp, exp, waiter_id)
      else
        -- Reads first: the back of the line and the counts to update.
        local last = rcall("ZREVRANGE", c.wq, "0", "0", "WITHSCORES")
        local seq = (last[2] and tonum(last[2]) or 0) + 1 -- behind everyone in line now
        local wb = batch()
        for j = 1, n do want_target(c, wb, paths[j], "wh", "wb") end
        fetch(c, wb)
        bad = writable(c, true, true)
        if bad then return bad end
        if not tag_available(c) then return redis.error_reply(TAGS_FULL) end
        local tag = own_tag(c)
        for j = 1, n do bump_target(c, wb, gcode(tag, op.first + j - 1), paths[j], "wh", "wb", 1) end
        rcall("ZADD", c.wexp, exp, waiter_id)
        tag_count(c, tag, 0, 1)
        flush(c, wb)
        rcall("HSET", c.wrec, waiter_id, pack_waiter({ head = head_of(tag, op_name), op = op_name, owner = owner,
                                                            paths = paths }))
        rcall("ZADD", c.wq, num(seq), waiter_id)
      end
    elseif me then
      bad = writable(c, false, true)
      if bad then return bad end
      remove_waiters(c, { me })
    end
    -- The lock or place found, named by its own record (its matrix may be
    -- another one).
    local item = w.lock or w.waiter
    local role = item.info.roles[w.code % 100 - item.info.first + 1] or ""
    return { "refused", item.id, item.op, role, w.path, item.owner, remaining(item.exp, c.now),
             op.roles[w.at], paths[w.at], w.relation, w.waiter and 1 or 0 }
  end

  -- Granted: a new lock. Every write below is known to be allowed; the
  -- expiry first (so an interrupted call is reaped), the record last but one.
  bad = writable(c, true, me ~= nil)
  if bad then return bad end
  if not tag_available(c) then return redis.error_reply(TAGS_FULL) end
  -- The fence: one more than the last, and at least the server clock in
  -- microseconds, so it never goes back even when Redis lost the namespace's
  -- data (restart without persistence, failover to a lagging replica).
  local now_us = tonum(c.now_us_s)
  local fence, f16 = (tonum(c.fence_s) or 0) + 1, nil
  if now_us >= fence and #c.now_us_s == 16 then
    fence, f16 = now_us, c.now_us_s
  else
    fence = mmax(fence, now_us)
    f16 = fence16(fence)
  end
  if fence > 9007199254740991 then return redis.error_reply("PATHLOCK fence space exhausted (2^53)") end
  local tag = c.tag or 0 -- assigned below, after the expiry (the first write)
  local l = { id = new_id, token = new_token, owner = owner, op = op_name, f16 = f16, holds = 1, ttl_s = ttl_s,
              exp_s = num(c.now + ttl), paths = paths }
  rcall("ZADD", c.exp, l.exp_s, new_id)
  tag = own_tag(c)
  l.head = head_of(tag, op_name)
  local members = { nil, nil, nil, nil }
  for i = 1, n do
    bump_target(c, b, gcode(tag, op.first + i - 1), paths[i], "h", "b", 1)
    members[#members + 1] = "0"
    members[#members + 1] = entry_member(gcode(tag, op.first + i - 1), paths[i], f16, new_id)
  end
  members[#members + 1] = "0"
  members[#members + 1] = list_member(f16, new_id)
  tag_count(c, tag, 1, 0, f16) -- and the fence, in the same HSET
  flush(c, b)
  if tag ~= reentry_tag then reentry = reentry_field(tag, owner, op_name, paths) end
  rcall("HSET", c.locks, new_id, pack_lock(l), reentry, new_id)
  rcall("ZADD", c.ent, tunpack(members))
  if me then remove_waiters(c, { me }) end
  return { "granted", new_id, new_token, fence, ttl, 1 }
end
