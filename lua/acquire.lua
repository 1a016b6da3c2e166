-- acquire: takes every target of one lock request, or none, in one atomic call;
-- for a request that waits, also keeps its place in line (fairness).
--
-- KEYS[1] = "pl:{NS}:", the key prefix of namespace NS (every key used is
--           derived from it; see lua/namespace.luainc)
-- ARGV    = owner, op, ttl_ms, new_id, new_token, path_1 .. path_n
--           [, fair, waiter_id, reserve_ms]
--           one canonical path per role of `op`, in the matrix's role order;
--           new_id ([A-Za-z0-9-]{1,64}) and new_token are used only when a
--           new lock is created. The three optional arguments (all or none):
--           fair       "1" (default when absent) or "0": a fair request is
--                      also refused by an older waiter that would refuse it
--                      if it held its lock; "0" ignores the line.
--           waiter_id  "" (default): the caller does not wait, or waits
--                      without a place in line. Otherwise ([A-Za-z0-9-]
--                      {1,64}, fair = "1" only) the caller's place in line:
--                      created on its first refusal (at the back), refreshed
--                      by each later refusal, removed when granted.
--           reserve_ms integer 0..604800000: the reservation lease a refusal
--                      gives the place in line (now + reserve_ms); 0 means
--                      "last attempt": a refusal leaves the line instead.
-- Replies:
--   { "granted", id, token, fence, expires_in_ms, holds }
--   { "refused", id, op, role, path, owner, expires_in_ms,
--     requested_role, requested_path, relation, queued }
--       queued = 0: the held lock that refused the request;
--       queued = 1: an older waiter: id is its waiter id, expires_in_ms what
--       is left of its reservation
--   { "mismatch", fingerprint, matrix, version }    -- NS has another matrix
--   { "invalid", message }                          -- nothing was changed
--
-- Cost: the conflict check reads O(depth) node hashes per target, each with
-- one HMGET of the blocking codes, whatever the number of locks held; a fair
-- request reads the waiter counters wh/wb in the same HMGETs when the line is
-- not empty. Only a refusal does more: it picks the conflicting lock from a
-- node's entry set (O(log n)), or for a lock held below the requested path
-- descends through children whose counters say one lies there; naming an
-- older waiter (and every re-check of a waiter in line) scans the line,
-- O(waiters x targets), a path only waiting requests and refusals take.
-- @PATHLOCK_MATRIX@
-- @PATHLOCK_INCLUDE namespace@

local RETRY = {} -- a conflict witness had expired and was removed: look again
local RELATION_NAMES = { [0] = "same", [1] = "held_ancestor", [2] = "held_descendant" }

local function path_problem(p)
  if string.sub(p, 1, 1) ~= "/" then return "is not absolute" end
  if #p > 4096 then return "is longer than 4096 bytes" end
  if string.find(p, "%c") then return "has a control character" end
  if p == "/" then return nil end
  if string.sub(p, -1) == "/" or string.find(p, "//", 1, true) then return "is not canonical (empty component)" end
  for name in string.gmatch(p, "[^/]+") do
    if name == "." or name == ".." then return "has a '.' or '..' component" end
    if #name > 255 then return "has a component longer than 255 bytes" end
  end
  return nil
end

local function within(inner, outer)
  return outer == "/" or inner == outer or string.sub(inner, 1, #outer + 1) == outer .. "/"
end

-- The field names kind<code> for the code list `codes` (kind "h", "b", "wh"
-- or "wb"), built once per call and list: they are reused at every node.
local field_lists = { h = {}, b = {}, wh = {}, wb = {} }
local function fields_of(kind, codes)
  local f = field_lists[kind][codes]
  if not f then
    f = {}
    for i = 1, #codes do f[i] = kind .. codes[i] end
    field_lists[kind][codes] = f
  end
  return f
end

-- The concatenation of field lists (each a cached list from fields_of).
local function joined(...)
  local out, n = {}, 0
  for _, list in ipairs({ ... }) do
    for i = 1, #list do
      n = n + 1
      out[n] = list[i]
    end
  end
  return out
end

-- The lowest code of `codes` (ascending) whose counter in the HMGET reply
-- `v` (its fields from position `at` + 1 on) is positive, or nil.
local function first_positive(v, at, codes)
  for i = 1, #codes do
    local c = v[at + i]
    if c and tonumber(c) > 0 then return codes[i] end
  end
  return nil
end

-- With one HMGET of node_key(path): the lowest code of `codes` held exactly
-- there ("h") and the lowest held below it ("b").
local function first_code(path, codes)
  if #codes == 0 then return nil, nil end
  local v = redis.call("HMGET", node_key(path), unpack(joined(fields_of("h", codes), fields_of("b", codes))))
  return first_positive(v, 0, codes), first_positive(v, #codes, codes)
end

-- The most recently granted lock holding `code` exactly at `path` (the head
-- of the embedded backend's slot list), or RETRY after removing it if it
-- had expired.
local function witness_at(path, code, relation)
  local m = redis.call("ZREVRANGEBYLEX", entries_key(path), string.format("(%02d}", code),
                       string.format("(%02d|", code), "LIMIT", 0, 1)[1]
  local lock = m and load_lock(string.sub(m, 21))
  if not lock then error({ err = "PATHLOCK index out of step at " .. path .. " (code " .. code .. ")" }) end
  if lock.exp <= NOW then
    remove_lock(lock)
    return RETRY
  end
  return { lock = lock, code = code, path = path, relation = relation }
end

-- A target strictly below `path` with one of `codes`: at each level the first
-- child (byte order) holding one exactly there, else descend into the first
-- child with one below it.
local function witness_below(path, codes)
  local at = path
  while true do
    local deeper = nil
    for _, name in ipairs(redis.call("ZRANGE", children_key(at), 0, -1)) do
      local child = (at == "/" and "" or at) .. "/" .. name
      local here, below = first_code(child, codes)
      if here then return witness_at(child, here, "held_descendant") end
      if not deeper and below then deeper = child end
    end
    if not deeper then error({ err = "PATHLOCK index out of step below " .. path }) end
    at = deeper
  end
end

-- The held target that refuses `code` at `path`, in the embedded backend's
-- order: strict ancestors from the root down, then the path itself, then
-- below it; at one node the lowest conflicting code. With `line` true it
-- also reads the waiter counters in the same HMGETs and returns, second,
-- whether some waiting target may refuse the request (the O(depth) test that
-- spares a fair newcomer the scan of the line when nobody in it conflicts).
local function find_conflict(code, path, line)
  local nodes = path_nodes(path)
  local anc, same, below = PL_BLOCKERS[1][code], PL_BLOCKERS[0][code], PL_BLOCKERS[2][code]
  local waiting = false
  if #anc > 0 then
    local fields = line and joined(fields_of("h", anc), fields_of("wh", anc)) or fields_of("h", anc)
    for i = 1, #nodes - 1 do
      local v = redis.call("HMGET", node_key(nodes[i]), unpack(fields))
      local held = first_positive(v, 0, anc)
      if held then return witness_at(nodes[i], held, "held_ancestor"), waiting end
      waiting = waiting or (line and first_positive(v, #anc, anc) ~= nil)
    end
  end
  if #same + #below == 0 then return nil, waiting end
  local fields = line and joined(fields_of("h", same), fields_of("b", below), fields_of("wh", same), fields_of("wb", below))
                 or joined(fields_of("h", same), fields_of("b", below))
  local v = redis.call("HMGET", node_key(path), unpack(fields))
  local h_same, h_below = first_positive(v, 0, same), first_positive(v, #same, below)
  if line then
    waiting = waiting or first_positive(v, #same + #below, same) ~= nil
              or first_positive(v, #same + #below + #same, below) ~= nil
  end
  if h_same then return witness_at(path, h_same, "same"), waiting end
  if h_below then return witness_below(path, below), waiting end
  return nil, waiting
end

-- Does a target with code `held` at path `hp` refuse `code` at `rp`?
-- Returns the relation index (0 same, 1 held_ancestor, 2 held_descendant)
-- when it does, else nil.
local function refusal(held, hp, code, rp)
  local rel
  if hp == rp then rel = 0
  elseif within(rp, hp) then rel = 1
  elseif within(hp, rp) then rel = 2
  else return nil end
  for _, c in ipairs(PL_BLOCKERS[rel][code]) do
    if c == held then return rel end
  end
  return nil
end

-- Fairness, the slow path: the oldest waiter in line (older than place
-- `before`, or any when before is nil) that refuses `code` at `path` as if it
-- held its lock. Scans the line oldest first; a waiter whose reservation
-- ended is removed on the way and skipped.
local function older_waiter(code, path, before)
  local ids = before and redis.call("ZRANGEBYSCORE", K_LINE, "-inf", "(" .. before)
              or redis.call("ZRANGE", K_LINE, 0, -1)
  for _, id in ipairs(ids) do
    local w = load_waiter(id)
    if w and w.exp <= NOW then
      remove_waiter(w)
    elseif w then
      local wop = PL_OPS[w.op]
      for j = 1, #wop.roles do
        local wcode = wop.first + j - 1
        local rel = refusal(wcode, w.paths[j], code, path)
        if rel then return { waiter = w, code = wcode, path = w.paths[j], relation = RELATION_NAMES[rel] } end
      end
    end
  end
  return nil
end

-- Adds one target's counts, top-down. A node whose counter was already
-- positive existed before, so its name is already in its parent's children
-- set; only a counter that became 1 may mean a new node (ZADD is idempotent).
local function index(code, path, here, below)
  local nodes, names = path_nodes(path)
  local field = below .. code
  for i = 1, #nodes do
    if i == #nodes then field = here .. code end
    local c = redis.call("HINCRBY", node_key(nodes[i]), field, 1)
    if c == 1 and i > 1 then redis.call("ZADD", children_key(nodes[i - 1]), 0, names[i]) end
  end
end

local function link(code, path, fence, id)
  index(code, path, "h", "b")
  redis.call("ZADD", entries_key(path), 0, entry_member(code, fence, id))
end

local function granted(lock)
  return { "granted", lock.id, lock.token, lock.fence, remaining(lock), lock.holds }
end

-- Input checks, before anything is read or written.
local owner, op_name, ttl, new_id, new_token = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5]
local op = PL_OPS[op_name or ""]
if not op then return { "invalid", "unknown operation '" .. tostring(op_name) .. "'" } end
local n = #op.roles
if #ARGV ~= 5 + n and #ARGV ~= 8 + n then
  return { "invalid", "operation '" .. op_name .. "' takes " .. n
                      .. " path(s) after 5 arguments, then optionally fair, waiter_id, reserve_ms" }
end
if owner == "" or #owner > 256 then return { "invalid", "owner must be 1..256 bytes" } end
if not ttl or ttl ~= math.floor(ttl) or ttl < 1 or ttl > 604800000 then
  return { "invalid", "ttl must be an integer 1..604800000 ms" }
end
if not string.find(new_id, "^[%w-]+$") or #new_id > 64 then return { "invalid", "new_id must be 1..64 of [A-Za-z0-9-]" } end
if new_token == "" then return { "invalid", "new_token is empty" } end
local paths = {}
for i = 1, n do
  paths[i] = ARGV[5 + i]
  local problem = path_problem(paths[i])
  if problem then return { "invalid", op.roles[i] .. " path '" .. paths[i] .. "' " .. problem } end
end
for _, pair in ipairs(op.not_inside) do
  if within(paths[pair[1]], paths[pair[2]]) then
    return { "invalid", op_name .. ": " .. op.roles[pair[1]] .. " may not be " .. op.roles[pair[2]] .. " or inside it" }
  end
end
local fair, waiter_id, reserve = true, "", 0
if #ARGV == 8 + n then
  fair, waiter_id, reserve = ARGV[6 + n], ARGV[7 + n], tonumber(ARGV[8 + n])
  if fair ~= "1" and fair ~= "0" then return { "invalid", "fair must be 1 or 0" } end
  fair = fair == "1"
  if waiter_id ~= "" and (not string.find(waiter_id, "^[%w-]+$") or #waiter_id > 64) then
    return { "invalid", "waiter_id must be empty or 1..64 of [A-Za-z0-9-]" }
  end
  if waiter_id ~= "" and not fair then return { "invalid", "only a fair request takes a place in line" } end
  if not reserve or reserve ~= math.floor(reserve) or reserve < 0 or reserve > 604800000 then
    return { "invalid", "reserve_ms must be an integer 0..604800000" }
  end
end

local mismatch, fingerprint = matrix_mismatch()
if mismatch then return mismatch end
-- The caller's place in line, if it has one (checked before any write).
local me = nil
if waiter_id ~= "" then
  me = load_waiter(waiter_id)
  if me and (me.owner ~= owner or me.op ~= op_name or table.concat(me.paths, "\0") ~= table.concat(paths, "\0")) then
    return { "invalid", "waiter_id " .. waiter_id .. " is in use by another request" }
  end
end
if not fingerprint then
  redis.call("HSET", K_META, "fingerprint", PL_FINGERPRINT, "matrix", PL_MATRIX_NAME, "version", PL_MATRIX_VERSION)
end
if me and me.exp <= NOW then
  -- Its reservation ran out (the caller stalled for longer than its lease):
  -- the place is lost; a refusal below puts the caller at the back again.
  -- Removed before reap() so that it is removed exactly once.
  remove_waiter(me)
  me = nil
end
reap()

-- Leaves the line (granted, or last attempt refused).
local function leave()
  if me then remove_waiter(me) end
  me = nil
end

-- A refusal: keeps (or takes, or on the last attempt gives up) the caller's
-- place in line, then answers. `w` is the held lock or the older waiter.
local function refused(w, i)
  if waiter_id ~= "" and reserve > 0 then
    local exp = NOW + reserve
    if me then
      redis.call("HSET", waiter_key(me.id), "exp", exp)
    else
      local last = redis.call("ZREVRANGE", K_LINE, 0, 0, "WITHSCORES")
      local seq = (last[2] and tonumber(last[2]) or 0) + 1 -- behind everyone in line now
      local fields = { "own", owner, "op", op_name, "seq", seq, "exp", exp }
      for j = 1, n do
        fields[#fields + 1] = "p" .. j
        fields[#fields + 1] = paths[j]
        index(op.first + j - 1, paths[j], "wh", "wb")
      end
      redis.call("HSET", waiter_key(waiter_id), unpack(fields))
      redis.call("ZADD", K_LINE, seq, waiter_id)
    end
    redis.call("ZADD", K_LINE_EXPIRY, exp, waiter_id)
  else
    leave()
  end
  local names = PL_CODE_NAMES[w.code]
  local item = w.lock or w.waiter
  return { "refused", item.id, names[1], names[2], w.path, item.owner, remaining(item),
           op.roles[i], paths[i], w.relation, w.waiter and 1 or 0 }
end

-- Reentrant request: same owner, operation and targets as a live lock.
local reentry = reentry_field(owner, op_name, paths)
local held_id = redis.call("HGET", K_REENTRY, reentry)
local lock = held_id and live_lock(held_id)
if lock and lock.owner == owner and lock.op == op_name and table.concat(lock.paths, "\0") == table.concat(paths, "\0") then
  leave()
  lock.holds = lock.holds + 1
  lock.exp = math.max(lock.exp, NOW + ttl)
  redis.call("HSET", lock_key(lock.id), "hol", lock.holds, "ttl", ttl, "exp", lock.exp)
  redis.call("ZADD", K_EXPIRY, lock.exp, lock.id)
  return granted(lock)
end

-- Held locks first (every request), then older waiters (fair requests only):
-- a newcomer scans the line only for targets the waiter counters flag; a
-- waiter in line scans the waiters older than itself (strict order: no
-- waiter ever defers to a younger one, so waiters cannot wait in a cycle).
local newcomer_line = fair and not me and redis.call("EXISTS", K_LINE) == 1
local flagged = {}
for i = 1, n do
  local code = op.first + i - 1
  local w, waiting
  repeat w, waiting = find_conflict(code, paths[i], newcomer_line) until w ~= RETRY
  if w then return refused(w, i) end
  flagged[i] = waiting
end
if fair then
  for i = 1, n do
    if me or flagged[i] then
      local w = older_waiter(op.first + i - 1, paths[i], me and me.seq)
      if w then return refused(w, i) end
    end
  end
end

if redis.call("EXISTS", lock_key(new_id)) == 1 then return { "invalid", "new_id " .. new_id .. " is in use" } end
leave()
lock = { id = new_id, token = new_token, owner = owner, op = op_name, fence = redis.call("INCR", K_FENCE),
         holds = 1, ttl = ttl, exp = NOW + ttl, paths = paths }
local fields = { "tok", new_token, "own", owner, "op", op_name, "fen", lock.fence, "hol", 1, "ttl", ttl, "exp", lock.exp }
for i = 1, n do
  fields[#fields + 1] = "p" .. i
  fields[#fields + 1] = paths[i]
  link(op.first + i - 1, paths[i], lock.fence, new_id)
end
redis.call("HSET", lock_key(new_id), unpack(fields))
redis.call("ZADD", K_EXPIRY, lock.exp, new_id)
redis.call("HSET", K_REENTRY, reentry, new_id)
return granted(lock)
