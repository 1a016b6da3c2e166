-- acquire: takes every target of one lock request, or none, in one atomic call.
--
-- KEYS[1] = "pl:{NS}:", the key prefix of namespace NS (every key used is
--           derived from it; see lua/namespace.luainc)
-- ARGV    = owner, op, ttl_ms, new_id, new_token, path_1 .. path_n
--           one canonical path per role of `op`, in the matrix's role order;
--           new_id ([A-Za-z0-9-]{1,64}) and new_token are used only when a
--           new lock is created.
-- Replies:
--   { "granted", id, token, fence, expires_in_ms, holds }
--   { "refused", id, op, role, path, owner, expires_in_ms,
--     requested_role, requested_path, relation }   -- the conflicting lock
--   { "mismatch", fingerprint, matrix, version }    -- NS has another matrix
--   { "invalid", message }                          -- nothing was changed
--
-- Cost: the conflict check reads O(depth) node hashes per target, each with
-- one HMGET of the blocking codes, whatever the number of locks held. Only a
-- refusal does more: it picks the conflicting lock from a node's entry set
-- (O(log n)), or for a lock held below the requested path descends through
-- children whose counters say one lies there.
-- @PATHLOCK_MATRIX@
-- @PATHLOCK_INCLUDE namespace@

local RETRY = {} -- a conflict witness had expired and was removed: look again

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

-- With one HMGET of node_key(path): the lowest code of `codes` (ascending)
-- whose counter `kind`<code> is positive, and the same for `kind2`/`codes2`
-- when given; nil where there is none.
local function first_code(path, kind, codes, kind2, codes2)
  local n, fields = #codes, {}
  for i = 1, n do fields[i] = kind .. codes[i] end
  for i = 1, codes2 and #codes2 or 0 do fields[n + i] = kind2 .. codes2[i] end
  if #fields == 0 then return nil, nil end
  local v = redis.call("HMGET", node_key(path), unpack(fields))
  local first, second = nil, nil
  for i = 1, n do
    if v[i] and tonumber(v[i]) > 0 then first = codes[i] break end
  end
  for i = n + 1, #fields do
    if v[i] and tonumber(v[i]) > 0 then second = codes2[i - n] break end
  end
  return first, second
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
      local here, below = first_code(child, "h", codes, "b", codes)
      if here then return witness_at(child, here, "held_descendant") end
      if not deeper and below then deeper = child end
    end
    if not deeper then error({ err = "PATHLOCK index out of step below " .. path }) end
    at = deeper
  end
end

-- The held target that refuses `code` at `path`, in the embedded backend's
-- order: strict ancestors from the root down, then the path itself, then
-- below it; at one node the lowest conflicting code.
local function find_conflict(code, path)
  local nodes = path_nodes(path)
  for i = 1, #nodes - 1 do
    local held = first_code(nodes[i], "h", PL_BLOCKERS[1][code])
    if held then return witness_at(nodes[i], held, "held_ancestor") end
  end
  local same, below = first_code(path, "h", PL_BLOCKERS[0][code], "b", PL_BLOCKERS[2][code])
  if same then return witness_at(path, same, "same") end
  if below then return witness_below(path, PL_BLOCKERS[2][code]) end
  return nil
end

local function link(code, path, fence, id)
  local nodes, names = path_nodes(path)
  for i = 1, #nodes - 1 do
    redis.call("HINCRBY", node_key(nodes[i]), "b" .. code, 1)
    redis.call("ZADD", children_key(nodes[i]), 0, names[i + 1])
  end
  redis.call("HINCRBY", node_key(path), "h" .. code, 1)
  redis.call("ZADD", entries_key(path), 0, entry_member(code, fence, id))
end

local function granted(lock)
  return { "granted", lock.id, lock.token, lock.fence, remaining(lock), lock.holds }
end

-- Input checks, before anything is read or written.
local owner, op_name, ttl, new_id, new_token = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5]
local op = PL_OPS[op_name or ""]
if not op then return { "invalid", "unknown operation '" .. tostring(op_name) .. "'" } end
if #ARGV ~= 5 + #op.roles then
  return { "invalid", "operation '" .. op_name .. "' takes " .. #op.roles .. " path(s) after 5 arguments" }
end
if owner == "" or #owner > 256 then return { "invalid", "owner must be 1..256 bytes" } end
if not ttl or ttl ~= math.floor(ttl) or ttl < 1 or ttl > 604800000 then
  return { "invalid", "ttl must be an integer 1..604800000 ms" }
end
if not string.find(new_id, "^[%w-]+$") or #new_id > 64 then return { "invalid", "new_id must be 1..64 of [A-Za-z0-9-]" } end
if new_token == "" then return { "invalid", "new_token is empty" } end
local paths = {}
for i = 1, #op.roles do
  paths[i] = ARGV[5 + i]
  local problem = path_problem(paths[i])
  if problem then return { "invalid", op.roles[i] .. " path '" .. paths[i] .. "' " .. problem } end
end
for _, pair in ipairs(op.not_inside) do
  if within(paths[pair[1]], paths[pair[2]]) then
    return { "invalid", op_name .. ": " .. op.roles[pair[1]] .. " may not be " .. op.roles[pair[2]] .. " or inside it" }
  end
end

local mismatch, fingerprint = matrix_mismatch()
if mismatch then return mismatch end
if not fingerprint then
  redis.call("HSET", K_META, "fingerprint", PL_FINGERPRINT, "matrix", PL_MATRIX_NAME, "version", PL_MATRIX_VERSION)
end
reap()

-- Reentrant request: same owner, operation and targets as a live lock.
local reentry = reentry_field(owner, op_name, paths)
local held_id = redis.call("HGET", K_REENTRY, reentry)
local lock = held_id and live_lock(held_id)
if lock and lock.owner == owner and lock.op == op_name and table.concat(lock.paths, "\0") == table.concat(paths, "\0") then
  lock.holds = lock.holds + 1
  lock.exp = math.max(lock.exp, NOW + ttl)
  redis.call("HSET", lock_key(lock.id), "hol", lock.holds, "ttl", ttl, "exp", lock.exp)
  redis.call("ZADD", K_EXPIRY, lock.exp, lock.id)
  return granted(lock)
end

for i = 1, #op.roles do
  local code = op.first + i - 1
  local w
  repeat w = find_conflict(code, paths[i]) until w ~= RETRY
  if w then
    local names = PL_CODE_NAMES[w.code]
    return { "refused", w.lock.id, names[1], names[2], w.path, w.lock.owner, remaining(w.lock),
             op.roles[i], paths[i], w.relation }
  end
end

if redis.call("EXISTS", lock_key(new_id)) == 1 then return { "invalid", "new_id " .. new_id .. " is in use" } end
lock = { id = new_id, token = new_token, owner = owner, op = op_name, fence = redis.call("INCR", K_FENCE),
         holds = 1, ttl = ttl, exp = NOW + ttl, paths = paths }
local fields = { "tok", new_token, "own", owner, "op", op_name, "fen", lock.fence, "hol", 1, "ttl", ttl, "exp", lock.exp }
for i = 1, #paths do
  fields[#fields + 1] = "p" .. i
  fields[#fields + 1] = paths[i]
  link(op.first + i - 1, paths[i], lock.fence, new_id)
end
redis.call("HSET", lock_key(new_id), unpack(fields))
redis.call("ZADD", K_EXPIRY, lock.exp, new_id)
redis.call("HSET", K_REENTRY, reentry, new_id)
return granted(lock)
