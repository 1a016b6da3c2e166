--[[
  lua/probe.lua: the function probe: which commands of this library may the
  caller not run on the namespace's keys? Read-only; the engine calls it
  before its first call, so a missing ACL permission is reported by name up
  front. Keys: as every function. Reply: { "ok" } or { "denied", command, ... };
  a refused SPUBLISH is reported as "SPUBLISH" too (wake-ups only), a refused
  INFO as "INFO" (the library then gives no key a TTL).

  Uses:      Call (keys_problem), Commands (COMMANDS, refused_command);
             PL_KEY_SUFFIXES, PL_KEY_COUNT
  Provides:  Probe.probe
]]
local Probe
do
  local keys_problem = Call.keys_problem
  local COMMANDS, refused_command = Commands.COMMANDS, Commands.refused_command

  local function pl_probe(keys, argv)
    if not sfind then init() end
    local bad = keys_problem(keys)
    if bad then return bad end
    local c = {}
    for i = 1, PL_KEY_COUNT do c[PL_KEY_SUFFIXES[i]] = keys[i] end
    local denied = { "denied" }
    for i = 1, #COMMANDS do
      -- (A command renamed away, such as INFO on some managed services,
      -- makes the ACL check raise: it may not be run either.)
      local known, refused = pcall(refused_command, c, COMMANDS[i])
      if not known or refused then denied[#denied + 1] = COMMANDS[i][1] end
    end
    if #denied == 1 then return { "ok" } end
    return denied
  end

  Probe = { probe = pl_probe }
end
