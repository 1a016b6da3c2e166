-- check_matrix: binds a namespace to the matrix this script was compiled from.
-- KEYS[1] = the namespace's meta hash ("pl:{NS}:meta")
-- Reply: { "ok", fingerprint } when the namespace is new or has the same
-- fingerprint; { "mismatch", stored fingerprint, stored matrix name, stored
-- version } when another matrix owns it. Nothing is written on mismatch.
-- @PATHLOCK_MATRIX@
local stored = redis.call("HMGET", KEYS[1], "fingerprint", "matrix", "version")
if stored[1] and stored[1] ~= PL_FINGERPRINT then
  return { "mismatch", stored[1], stored[2] or "", stored[3] or "" }
end
if not stored[1] then
  redis.call("HSET", KEYS[1], "fingerprint", PL_FINGERPRINT, "matrix", PL_MATRIX_NAME, "version", PL_MATRIX_VERSION)
end
return { "ok", PL_FINGERPRINT }
