-- force_release: the administrator's release; drops a lock whatever its holds
-- and without its token.
--
-- KEYS[1] = "pl:{NS}:", the key prefix of namespace NS
-- ARGV    = id
-- Replies:
--   { "released", 0 }
--   { "missing" }                -- no live lock has this id
--   { "mismatch", fingerprint, matrix, version }
-- Cost: O(targets x depth).
-- @PATHLOCK_MATRIX@
-- @PATHLOCK_INCLUDE namespace@

local mismatch = matrix_mismatch()
if mismatch then return mismatch end
reap()
local lock = live_lock(ARGV[1])
if not lock then return { "missing" } end
remove_lock(lock)
return { "released", 0 }
