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

-- reenter_id, reenter_token and the idempotency key of request r.
local function read_proofs(r)
  if r.reenter_id ~= "" or r.reenter_token ~= "" then
    if not valid_id(r.reenter_id) then return { "invalid", "reenter_id must be 1.." .. PL_MAX_ID .. " of [A-Za-z0-9-]" } end
    if #r.reenter_token > PL_MAX_TOKEN or r.reenter_token == "" then
      return { "invalid", "reenter_token must be 1.." .. PL_MAX_TOKEN .. " bytes" }
    end
    if r.key ~= "" then return { "invalid", "a reentry takes no idempotency_key" } end
  end
  if r.key ~= "" and not valid_key(r.key) then
    return { "invalid", "idempotency_key must be 1.." .. PL_MAX_KEY .. " of [A-Za-z0-9._:-]" }
  end
  return nil
end

-- The paths of request r (one per role, canonical, and not inside each
-- other where the operation forbids it).
local function read_paths(r, argv)
  local op, paths = r.op, r.paths
  for i = 1, r.n do
    paths[i] = argv[8 + i]
    local problem = path_problem(paths[i])
    if problem then return { "invalid", op.roles[i] .. " path '" .. paths[i] .. "' " .. problem } end
  end
  for k = 1, #op.not_inside do
    local pair = op.not_inside[k]
    if within(paths[pair[1]], paths[pair[2]]) then
      return { "invalid", r.op_name .. ": " .. op.roles[pair[1]] .. " may not be " .. op.roles[pair[2]] .. " or inside it" }
    end
  end
  return nil
end

-- The optional fair, waiter_id and reserve_ms of request r.
local function read_line_args(r, fair, waiter_id, reserve)
  if fair ~= "1" and fair ~= "0" then return { "invalid", "fair must be 1 or 0" } end
  r.fair, r.waiter_id, r.reserve = fair == "1", waiter_id, dec(reserve)
  if waiter_id ~= "" and not valid_id(waiter_id) then
    return { "invalid", "waiter_id must be empty or 1.." .. PL_MAX_ID .. " of [A-Za-z0-9-]" }
  end
  if waiter_id ~= "" and not r.fair then return { "invalid", "only a fair request takes a place in line" } end
  if not r.reserve or r.reserve > PL_MAX_TTL then
    return { "invalid", "reserve_ms must be decimal digits, 0.." .. PL_MAX_TTL }
  end
  r.reserve = mmin(r.reserve, PL_MAX_RESERVE) -- a dead waiter blocks fair requests no longer than this
  return nil
end

-- ---- acquire, step by step ------------------------------------------------
-- pl_acquire runs: read_request (argument checks, before anything is read),
-- check_meta, open_line (the caller's place, reaping), the proof steps
-- (reenter, idempotent), find_refusal (held locks, then older waiters), and
-- then refuse or grant. Each step returns a reply when the call ends there.

-- The request in argv, checked (docs/lua-protocol.md#acquire): a table, or
-- nil and an "invalid" reply.
local function read_request(argv)
  local owner, op_name, ttl = argv[1], argv[2], dec(argv[3])
  local op = PL_OPS[op_name or ""]
  if not op then return nil, { "invalid", "unknown operation '" .. tostring(op_name) .. "'" } end
  local n = #op.roles
  if #argv ~= 8 + n and #argv ~= 11 + n then
    return nil, { "invalid", "operation '" .. op_name .. "' takes " .. n .. " path(s) after 8 arguments, then"
                             .. " optionally fair, waiter_id, reserve_ms" }
  end
  if owner == "" or #owner > PL_MAX_OWNER then return nil, { "invalid", "owner must be 1.." .. PL_MAX_OWNER .. " bytes" } end
  if not ttl or ttl < 1 or ttl > PL_MAX_TTL then
    return nil, { "invalid", "ttl must be decimal digits, 1.." .. PL_MAX_TTL .. " ms" }
  end
  local r = { owner = owner, op_name = op_name, op = op, n = n, ttl = ttl, ttl_s = argv[3], new_id = argv[4],
              new_token = argv[5], reenter_id = argv[6], reenter_token = argv[7], key = argv[8], paths = {},
              fair = true, waiter_id = "", reserve = 0 }
  if not valid_id(r.new_id) then return nil, { "invalid", "new_id must be 1.." .. PL_MAX_ID .. " of [A-Za-z0-9-]" } end
  if r.new_token == "" or #r.new_token > PL_MAX_TOKEN then
    return nil, { "invalid", "new_token must be 1.." .. PL_MAX_TOKEN .. " bytes" }
  end
  local bad = read_proofs(r) or read_paths(r, argv)
  if bad then return nil, bad end
  if #argv == 11 + n then
    bad = read_line_args(r, argv[9 + n], argv[10 + n], argv[11 + n])
    if bad then return nil, bad end
  end
  return r
end

-- The caller's place in line (r.me, nil when it has none or it ended), after
-- reaping expired locks and ended places. Returns a reply when the call ends.
local function open_line(c, r)
  if r.waiter_id ~= "" and rcall("HGET", c.wrec, r.waiter_id) then
    local me = load_waiters(c, { r.waiter_id })[1]
    if me.stale or me.tag ~= c.tag or me.owner ~= r.owner or me.op ~= r.op_name
       or tconcat(me.paths, "\0") ~= tconcat(r.paths, "\0") then
      return { "invalid", "waiter_id " .. r.waiter_id .. " is in use by another request" }
    end
    r.me = me
  end
  local reaped, stale = expired_locks(c)
  local ended, line_empty = ended_waiters(c)
  r.line_empty = line_empty
  if r.me and r.me.exp <= c.now then
    -- Its reservation ran out (the caller stalled): the place is lost; a
    -- refusal below puts the caller at the back again.
    add_once(ended, r.me)
    r.me = nil
  end
  return remove_ended(c, reaped, stale, ended)
end

-- The live lock `id` of this matrix, or nil (an expired one is removed).
-- Returns the lock, or nil and a reply when the call ends.
local function live_lock(c, id)
  local rec = rcall("HGET", c.locks, id)
  local l = rec and unpack_lock(id, rec)
  if l and l.exp <= c.now then
    local bad = writable(c, false, true)
    if bad then return nil, bad end
    remove_locks(c, { l })
    return nil
  end
  return l
end

-- Gives lock l (live, of this request) back to its caller: `hold` adds a
-- hold (reentry); the lease becomes at least now + ttl either way.
local function grant_again(c, r, l, hold)
  local bad = writable(c, true, r.me ~= nil)
  if bad then return bad end
  if hold then
    l.holds = l.holds + 1
    l.ttl_s = r.ttl_s
  end
  if c.now + r.ttl > l.exp then
    l.exp = c.now + r.ttl
    l.exp_s = num(l.exp)
  end
  rcall("ZADD", c.exp, l.exp_s, l.id)
  rcall("HSET", c.locks, l.id, pack_lock(l))
  if r.me then remove_waiters(c, { r.me }) end
  -- the layout of src/redis/replies.hpp (reply::granted)
  return { "granted", l.id, l.token, tonum(l.f16), remaining(l.exp, c.now), l.holds }
end

-- Does lock l have the operation and the paths of request r?
local function same_request(c, l, r)
  return l.tag == c.tag and l.op == r.op_name and tconcat(l.paths, "\0") == tconcat(r.paths, "\0")
end

-- Reentry by proof: the lock r.reenter_id with token r.reenter_token gets
-- one more hold. Without one: { "not_holder" }, which tells nothing about
-- any lock.
local function reenter(c, r)
  local l, bad = live_lock(c, r.reenter_id)
  if bad then return bad end
  if not l or l.token ~= r.reenter_token then return { "not_holder" } end
  if not same_request(c, l, r) then
    return { "invalid", "reentry of lock " .. l.id .. ": the request must repeat its operation '" .. l.op
                        .. "' and its targets" }
  end
  return grant_again(c, r, l, true)
end

-- Idempotent retry: the live lock of r.key, if any, comes back unchanged
-- (its lease extended). Returns a reply when the call ends here.
local function idempotent(c, r)
  local id = rcall("HGET", c.locks, key_field(r.key))
  local l, bad = nil, nil
  if id then l, bad = live_lock(c, id) end
  if bad then return bad end
  if not l then return nil end
  if l.owner ~= r.owner or not same_request(c, l, r) then
    return { "invalid", "idempotency_key is in use by another request (another owner, operation or targets)" }
  end
  return grant_again(c, r, l, false)
end

-- The held lock that refuses request r (held locks first, every request, in
-- role order), with the index batch the check read (a grant writes through
-- it), and which targets the waiter counts flag for a newcomer. Expired or
-- stale witnesses are removed and the check runs again. Returns w, b,
-- flagged; or nil, nil, nil and a reply.
local function held_refusal(c, r)
  local paths, n = r.paths, r.n
  local newcomer_line = r.fair and not r.me and not r.line_empty
  while true do
    local b, flagged, w = batch(check_set(paths[1])), {}, nil
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
    for i = 1, n do
      local code = r.op.first + i - 1
      local found = held_conflict(c, b, code, paths[i])
      if found and found.broken then
        return nil, nil, nil, redis.error_reply("PATHLOCK index out of step " .. found.broken .. " (code " .. code .. ")")
      elseif found and (found.expired or found.stale) then
        local bad = writable(c, false, true)
        if bad then return nil, nil, nil, bad end
        if found.expired then remove_locks(c, { found.expired }) else rcall("ZREM", c.ent, found.stale) end
        again = true
        break
      elseif found then
        found.at = i
        return found, b, flagged
      end
      flagged[i] = newcomer_line and waiter_flag(c, b, code, paths[i])
    end
    if not again then return nil, b, flagged end
  end
end

-- Fair requests only: the older waiter that refuses request r. A newcomer
-- scans the line only for targets the waiter counts flag; a waiter in line
-- scans the waiters older than itself (strict order, so waiters never wait
-- in a cycle). Returns w (or nil), or nil and a reply.
local function older_refusal(c, r, flagged)
  local gone, w = {}, nil
  for i = 1, r.n do
    if r.me or flagged[i] then
      w = older_waiter(c, r.op.first + i - 1, r.paths[i], r.me and r.me.seq, gone)
      if w then
        w.at = i
        break
      end
    end
  end
  if #gone > 0 then
    local bad = writable(c, false, true)
    if bad then return nil, bad end
    remove_waiters(c, gone)
  end
  return w
end

-- Takes a new place at the back of the line for request r, refused now.
local function take_place(c, r, exp)
  local paths = r.paths
  local last = rcall("ZREVRANGE", c.wq, "0", "0", "WITHSCORES")
  local seq = (last[2] and tonum(last[2]) or 0) + 1 -- behind everyone in line now
  local wb = batch() -- reads first: the counts to update
  for j = 1, r.n do want_target(c, wb, paths[j], "wh", "wb") end
  fetch(c, wb)
  local bad = writable(c, true, true)
  if bad then return bad end
  if not tag_available(c) then return redis.error_reply(TAGS_FULL) end
  local tag = own_tag(c)
  for j = 1, r.n do bump_target(c, wb, gcode(tag, r.op.first + j - 1), paths[j], "wh", "wb", 1) end
  rcall("ZADD", c.wexp, exp, r.waiter_id)
  tag_count(c, tag, 0, 1)
  flush(c, wb)
  rcall("HSET", c.wrec, r.waiter_id, pack_waiter({ head = head_of(tag, r.op_name), op = r.op_name, since = c.now_s,
                                                   owner = r.owner, paths = paths }))
  rcall("ZADD", c.wq, num(seq), r.waiter_id)
  return nil
end

-- Refused by w: keeps, takes or (last attempt) gives up the caller's place,
-- and names the lock or place found by its own record (its matrix may be
-- another one).
local function refuse(c, r, w)
  local bad
  if r.waiter_id ~= "" and r.reserve > 0 then
    local exp = num(c.now + r.reserve)
    if r.me then
      bad = writable(c, true, true)
      if bad then return bad end
      rcall("ZADD", c.wexp, exp, r.waiter_id)
    else
      bad = take_place(c, r, exp)
      if bad then return bad end
    end
  elseif r.me then
    bad = writable(c, false, true)
    if bad then return bad end
    remove_waiters(c, { r.me })
  end
  local item = w.lock or w.waiter
  local role = item.info.roles[w.code % 100 - item.info.first + 1] or ""
  -- the layout of src/redis/replies.hpp (reply::refused)
  return { "refused", item.id, item.op, role, w.path, item.owner, remaining(item.exp, c.now),
           r.op.roles[w.at], r.paths[w.at], w.relation, w.waiter and 1 or 0 }
end

-- The fence of a new lock: one more than the last, and at least the server
-- clock in microseconds, so it never goes back even when Redis lost the
-- namespace's data (restart without persistence, failover to a lagging
-- replica). Returns the fence and its 16-digit text, or nil.
local function next_fence(c)
  local now_us = tonum(c.now_us_s)
  local fence = (tonum(c.fence_s) or 0) + 1
  if now_us >= fence and #c.now_us_s == 16 then return now_us, c.now_us_s end
  fence = mmax(fence, now_us)
  if fence > 9007199254740991 then return nil end
  return fence, fence16(fence)
end

-- Granted: a new lock. Every write below is known to be allowed; the expiry
-- first (so an interrupted call is reaped), the record last but one.
local function grant(c, r, b)
  local bad = writable(c, true, r.me ~= nil)
  if bad then return bad end
  if not tag_available(c) then return redis.error_reply(TAGS_FULL) end
  local fence, f16 = next_fence(c)
  if not fence then return redis.error_reply("PATHLOCK fence space exhausted (2^53)") end
  local paths, id = r.paths, r.new_id
  local l = { id = id, token = r.new_token, owner = r.owner, op = r.op_name, f16 = f16, holds = 1,
              ttl_s = r.ttl_s, exp_s = num(c.now + r.ttl), key = r.key, paths = paths }
  rcall("ZADD", c.exp, l.exp_s, id)
  local tag = own_tag(c)
  l.head = head_of(tag, r.op_name)
  local members = { nil, nil, nil, nil }
  for i = 1, r.n do
    local g = gcode(tag, r.op.first + i - 1)
    bump_target(c, b, g, paths[i], "h", "b", 1)
    members[#members + 1] = "0"
    members[#members + 1] = entry_member(g, paths[i], f16, id)
  end
  members[#members + 1] = "0"
  members[#members + 1] = list_member(f16, id)
  tag_count(c, tag, 1, 0, f16) -- and the fence, in the same HSET
  flush(c, b)
  if r.key ~= "" then
    rcall("HSET", c.locks, id, pack_lock(l), key_field(r.key), id)
  else
    rcall("HSET", c.locks, id, pack_lock(l))
  end
  rcall("ZADD", c.ent, tunpack(members))
  if r.me then remove_waiters(c, { r.me }) end
  -- the layout of src/redis/replies.hpp (reply::granted)
  return { "granted", id, r.new_token, fence, r.ttl, 1 }
end

local function pl_acquire(keys, argv)
  local c, bad = begin(keys)
  if not c then return bad end
  local r
  r, bad = read_request(argv)
  if not r then return bad end
  bad = check_meta(c) or open_line(c, r)
  if bad then return bad end
  if r.reenter_id ~= "" then return reenter(c, r) end
  if r.key ~= "" then
    bad = idempotent(c, r)
    if bad then return bad end
  end
  if rcall("HGET", c.locks, r.new_id) then return { "invalid", "new_id " .. r.new_id .. " is in use" } end
  local w, b, flagged
  w, b, flagged, bad = held_refusal(c, r)
  if bad then return bad end
  if not w and r.fair then
    w, bad = older_refusal(c, r, flagged)
    if bad then return bad end
  end
  if w then return refuse(c, r, w) end
  return grant(c, r, b)
end
