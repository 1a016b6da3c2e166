--[[
  lua/std.lua: the standard functions every module calls, kept in upvalues.

  Uses:      string, table, math, unpack, tonumber, redis (at the first call)
  Provides:  sfind, ssub, smatch, sgmatch, sgsub, sformat, tconcat, tsort, tunpack,
             mfloor, mmax, mmin, tonum, rcall, rpcall, setmeta, getmeta; init()

  The only file with more than one top-level local: these are read by every
  module, and must be upvalues of the whole chunk (init() assigns them).
  Reading an upvalue is far cheaper than a global and then its field
  (string.find), and calls make hundreds of such reads. Only `redis` is
  visible while the library loads, so the first call of any function fills
  them: the entry step of every function (Call.begin, Probe.probe) starts with
  `if not sfind then init() end`, before anything else runs.
]]
local sfind, ssub, smatch, sgmatch, sgsub, sformat, tconcat, tsort, tunpack, mfloor, mmax, mmin, tonum, rcall, rpcall
local setmeta, getmeta
local function init()
  sfind, ssub, smatch, sgmatch = string.find, string.sub, string.match, string.gmatch
  sgsub, sformat, tconcat, tsort, tunpack = string.gsub, string.format, table.concat, table.sort, unpack
  mfloor, mmax, mmin, tonum, rcall, rpcall = math.floor, math.max, math.min, tonumber, redis.call, redis.pcall
  setmeta, getmeta = setmetatable, getmetatable
end
