--[[
  lua/contract.lua: the function contract: the library's contract, one JSON
  document (docs/lua-protocol.md#contract-read-only): protocol version, layout,
  keys, operations and roles, relations, limits, functions, reply layouts and
  errors. Read-only, no keys, no Redis command; the text is the data chunk's
  (built by src/redis/contract.hpp from the definitions the library is built
  from). Reply: { "contract", json }.

  Uses:      PL_CONTRACT
  Provides:  Contract.contract
]]
local Contract
do
  local function pl_contract(keys, argv)
    if #keys ~= 0 or #argv ~= 0 then return { "invalid", "contract takes no keys and no arguments" } end
    return { "contract", PL_CONTRACT }
  end

  Contract = { contract = pl_contract }
end
