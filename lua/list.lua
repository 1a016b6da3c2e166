-- list: the live locks with a target at or inside a prefix, ordered by fence.
--
-- KEYS[1] = "pl:{NS}:", the key prefix of namespace NS
-- ARGV    = prefix (a canonical path; "/" for every lock)
-- Replies:
--   { "locks", lock_1, lock_2, ... } where each lock is
--       { id, owner, op, fence, holds, expires_in_ms, { role_1, path_1, ... } }
--   { "mismatch", fingerprint, matrix, version }
-- Cost: O(nodes and targets in the prefix's subtree): it walks the children
-- sets from the prefix node down, never the whole namespace.
-- @PATHLOCK_MATRIX@
-- @PATHLOCK_INCLUDE namespace@

local prefix = ARGV[1]
if type(prefix) ~= "string" or string.sub(prefix, 1, 1) ~= "/" then
  return { "invalid", "prefix must be a canonical absolute path" }
end
local mismatch = matrix_mismatch()
if mismatch then return mismatch end
reap()

local found, seen = {}, {}
local stack = { prefix }
if redis.call("EXISTS", node_key(prefix)) == 0 then stack = {} end
while #stack > 0 do
  local at = table.remove(stack)
  for _, m in ipairs(redis.call("ZRANGE", entries_key(at), 0, -1)) do
    local id = string.sub(m, 21)
    if not seen[id] then
      seen[id] = true
      local lock = load_lock(id)
      if lock and lock.exp > NOW then found[#found + 1] = lock end
    end
  end
  for _, name in ipairs(redis.call("ZRANGE", children_key(at), 0, -1)) do
    stack[#stack + 1] = (at == "/" and "" or at) .. "/" .. name
  end
end
table.sort(found, function(a, b) return a.fence < b.fence end)

local reply = { "locks" }
for _, lock in ipairs(found) do
  local targets = {}
  for i, role in ipairs(PL_OPS[lock.op].roles) do
    targets[#targets + 1] = role
    targets[#targets + 1] = lock.paths[i]
  end
  reply[#reply + 1] = { lock.id, lock.owner, lock.op, lock.fence, lock.holds, remaining(lock), targets }
end
return reply
