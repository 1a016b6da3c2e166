-- release: drops one hold of a lock; the lock goes when no hold is left.
--
-- KEYS[1] = "pl:{NS}:", the key prefix of namespace NS
-- ARGV    = id, token
-- Replies:
--   { "released", holds_left }   -- 0: the lock is gone
--   { "missing" }                -- no live lock has this id and token
--   { "mismatch", fingerprint, matrix, version }
-- Cost: O(targets x depth) when the lock goes, O(1) otherwise.
-- @PATHLOCK_MATRIX@
-- @PATHLOCK_INCLUDE namespace@

local mismatch = matrix_mismatch()
if mismatch then return mismatch end
reap()
local lock = live_lock(ARGV[1])
if not lock or lock.token ~= ARGV[2] then return { "missing" } end
if lock.holds <= 1 then
  remove_lock(lock)
  return { "released", 0 }
end
-- PERSIST does nothing (lock keys never have a TTL) and is not refused at
-- maxmemory; as this script's first write it lets Redis run the in-place
-- update below even when memory is full: dropping a hold must always work.
redis.call("PERSIST", lock_key(lock.id))
redis.call("HSET", lock_key(lock.id), "hol", lock.holds - 1)
return { "released", lock.holds - 1 }
