--[[
  lua/info.lua: the function info: which library is this? Read-only, no keys,
  no Redis command: a client in any language finds the library that serves
  its matrix with FUNCTION LIST LIBRARYNAME pathlock_v then FCALL_RO
  <prefix>info 0. Reply: { "info", library name, matrix name, matrix version,
  matrix fingerprint, layout (integer), pathlock version }
  (docs/lua-protocol.md#info).

  Uses:      PL_LIBRARY_NAME, PL_MATRIX_NAME, PL_MATRIX_VERSION, PL_FINGERPRINT,
             PL_LAYOUT, PL_PATHLOCK_VERSION
  Provides:  Info.info
]]
local Info
do
  -- (Built at the first call: while the library loads, only `redis` is visible.)
  local INFO_REPLY

  local function pl_info(keys, argv)
    if #keys ~= 0 or #argv ~= 0 then return { "invalid", "info takes no keys and no arguments" } end
    INFO_REPLY = INFO_REPLY or { "info", PL_LIBRARY_NAME, PL_MATRIX_NAME, PL_MATRIX_VERSION, PL_FINGERPRINT,
                                       tonumber(PL_LAYOUT), PL_PATHLOCK_VERSION }
    return INFO_REPLY
  end

  Info = { info = pl_info }
end
