--[[
  lua/call.lua: the call context: the KEYS checked, the server clock, and the
  fields later steps fill in.

  Uses:      PL_KEY_SUFFIXES, PL_KEY_COUNT, PL_MAX_NAMESPACE, PL_MAX_KEY_OVERHEAD
  Provides:  Call.keys_problem, Call.begin
]]
local Call
do
  -- The keys (PL_KEY_SUFFIXES, PL_KEY_COUNT: from kKeySuffixes in
  -- src/redis/library.hpp) by name: the fields of the call context (begin).
  -- The data chunk's order is the only one; these names must be its entries.
  local K_META, K_IDX, K_LOCKS, K_EXP, K_ENT, K_WQ, K_WEXP, K_WREC, K_WAKE
  do
    local at = {}
    for i = 1, PL_KEY_COUNT do at[PL_KEY_SUFFIXES[i]] = i end
    K_META, K_IDX, K_LOCKS, K_EXP, K_ENT = at.meta, at.idx, at.locks, at.exp, at.ent
    K_WQ, K_WEXP, K_WREC, K_WAKE = at.wq, at.wexp, at.wrec, at.wake
  end
  local PAD = { [0] = "", "0", "00", "000", "0000", "00000", "000000" }

  -- nil when KEYS are the namespace's keys in the documented order, else an
  -- "invalid" reply. The last KEYS found valid are kept: a service sends the
  -- same keys call after call, and comparing interned strings is cheaper than
  -- checking them again (the verdict depends on the strings only).
  local KEYS_SEEN = {}
  local function keys_problem(keys)
    if #keys == PL_KEY_COUNT and keys[1] == KEYS_SEEN[1] then
      local same = true
      for i = 2, PL_KEY_COUNT do
        if keys[i] ~= KEYS_SEEN[i] then
          same = false
          break
        end
      end
      if same then return nil end
    end
    if #keys ~= PL_KEY_COUNT then
      return { "invalid", "expected " .. PL_KEY_COUNT .. " keys: pl:{NS}:" .. tconcat(PL_KEY_SUFFIXES, ", pl:{NS}:") }
    end
    local prefix, ns = smatch(keys[1], "^([^{}]*{([%w._:-]+)}:)" .. PL_KEY_SUFFIXES[1] .. "$")
    if not prefix or #ns > PL_MAX_NAMESPACE or #keys[1] > #ns + PL_MAX_KEY_OVERHEAD then
      return { "invalid", "KEYS[1] must be the namespace's meta key pl:{NS}:meta (NS: 1.." .. PL_MAX_NAMESPACE
               .. " of [A-Za-z0-9._:-])" }
    end
    for i = 2, PL_KEY_COUNT do
      if keys[i] ~= prefix .. PL_KEY_SUFFIXES[i] then
        return { "invalid", "KEYS[" .. i .. "] must be " .. prefix .. PL_KEY_SUFFIXES[i] }
      end
    end
    KEYS_SEEN = { tunpack(keys) }
    return nil
  end

  -- The call context: keys, server time, and what was checked so far.
  local function begin(keys)
    if not sfind then init() end
    local bad = keys_problem(keys)
    if bad then return nil, bad end
    -- The server clock, as text and numbers (text built by hand: cheaper).
    local t = rcall("TIME")
    local usec = PAD[6 - #t[2]] .. t[2]
    local now_s, now_us_s = t[1] .. ssub(usec, 1, 3), t[1] .. usec
    -- (now_us_s is made a number only by a grant, for its fence. The fields
    -- set later are named here with nil, which sizes the table once.)
    return { meta = keys[K_META], idx = keys[K_IDX], locks = keys[K_LOCKS], exp = keys[K_EXP], ent = keys[K_ENT],
             wq = keys[K_WQ], wexp = keys[K_WEXP], wrec = keys[K_WREC], wake = keys[K_WAKE], now = tonum(now_s), now_s = now_s,
             now_us_s = now_us_s, fence_s = nil, tag = nil, tag_l = nil, tag_w = nil, tag1_free = nil,
             next_tag = nil, hset = nil, zadd = nil, zrem = nil, expiring = nil, persist = nil, x = nil, lim_s = nil, extra = nil,
             owner_field = nil }
  end

  Call = { keys_problem = keys_problem, begin = begin }
end
