-- renew: extends a lock's lease to now + ttl (the lock's own ttl when ttl is
-- empty; a given ttl becomes the lock's ttl). The lease may get shorter.
--
-- KEYS[1] = "pl:{NS}:", the key prefix of namespace NS
-- ARGV    = id, token, ttl_ms or ""
-- Replies:
--   { "renewed", expires_in_ms }
--   { "missing" }                -- no live lock has this id and token
--   { "mismatch", fingerprint, matrix, version }
--   { "invalid", message }
-- Cost: O(1) (plus bounded reaping).
-- @PATHLOCK_MATRIX@
-- @PATHLOCK_INCLUDE namespace@

local ttl = nil
if ARGV[3] and ARGV[3] ~= "" then
  ttl = tonumber(ARGV[3])
  if not ttl or ttl ~= math.floor(ttl) or ttl < 1 or ttl > 604800000 then
    return { "invalid", "ttl must be an integer 1..604800000 ms" }
  end
end
local mismatch = matrix_mismatch()
if mismatch then return mismatch end
reap()
local lock = live_lock(ARGV[1])
if not lock or lock.token ~= ARGV[2] then return { "missing" } end
lock.ttl = ttl or lock.ttl
lock.exp = NOW + lock.ttl
-- PERSIST does nothing (lock keys never have a TTL) and is not refused at
-- maxmemory; as this script's first write it lets Redis run the in-place
-- updates below even when memory is full: a holder must be able to renew.
redis.call("PERSIST", lock_key(lock.id))
redis.call("HSET", lock_key(lock.id), "ttl", lock.ttl, "exp", lock.exp)
redis.call("ZADD", K_EXPIRY, lock.exp, lock.id)
return { "renewed", remaining(lock) }
