-- leave: takes a waiting request out of the line. A waiting client calls it
-- when it stops waiting without a last acquire attempt doing so (an error, or
-- the caller gave up); it is harmless when the place is already gone.
--
-- KEYS[1] = "pl:{NS}:", the key prefix of namespace NS
-- ARGV    = waiter_id
-- Replies:
--   { "left", 1 }                -- the place in line was removed
--   { "left", 0 }                -- there was none (granted, reaped, never taken)
--   { "mismatch", fingerprint, matrix, version }
-- Cost: O(targets x depth). Its first write is a deletion, which Redis never
-- refuses at maxmemory, so leaving the line always works.
-- @PATHLOCK_MATRIX@
-- @PATHLOCK_INCLUDE namespace@

local mismatch = matrix_mismatch()
if mismatch then return mismatch end
local id = ARGV[1]
if type(id) ~= "string" or not string.find(id, "^[%w-]+$") or #id > 64 then return { "left", 0 } end
local w = load_waiter(id)
if w then remove_waiter(w) end
reap()
return { "left", w and 1 or 0 }
