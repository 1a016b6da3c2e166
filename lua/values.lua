--[[
  lua/values.lua: the library's caches, numbers as Redis arguments and back,
  and the checks of number, id and key arguments.

  Uses:      PL_MAX_DIGITS, PL_MAX_ID, PL_MAX_KEY
  Provides:  Values.cache, Values.keep, Values.per_key, Values.num, Values.int, Values.dec,
             Values.valid_id, Values.valid_key
]]
local Values
do
  -- The library's caches: what calls derive again and again, kept as long as
  -- the library, each emptied when it holds `max` entries (a large Lua heap
  -- slows every call). Read with c.t[key]; keep() adds and returns the value.
  local function cache(max) return { t = {}, n = 0, max = max } end
  local function keep(c, key, value)
    if c.n >= c.max then c.t, c.n = {}, 0 end
    c.t[key], c.n = value, c.n + 1
    return value
  end

  -- A conversion that keeps its results in a cache of its own: the kept
  -- value of x, else convert(x), kept when recurs(x, value) says x comes back.
  -- convert calls the library's aliases of Lua functions when it runs, never
  -- when it is made (they are set by init() at every call).
  local function kept(convert, recurs)
    local c = cache(4096)
    return function(x)
      local v = c.t[x]
      if v then return v end
      v = convert(x)
      if recurs(x, v) then keep(c, x, v) end
      return v
    end
  end

  -- Numbers as Redis arguments: exact decimal strings (never "1e+15").
  -- Converting a number to text is one of the costliest steps of a call, so
  -- small integers (codes, small counts, lengths) are converted once and kept
  -- for as long as the library lives. Counts (up to a million) are kept too.
  -- Numbers that never recur (times, fences) are not kept.
  local num = kept(function(x) return sformat("%.0f", x) end, function(x) return x >= 0 and x < 1000000 end)
  -- The other way: short numeric texts (record fields, codes, counts, ttls)
  -- are kept once converted (tonumber parses with strtod, one of the costliest
  -- steps of a call); longer texts (times, fences) never recur and are not
  -- kept.
  local int = kept(function(s) return tonum(s) end, function(s, n) return n and #s <= 9 end)
  -- A number argument: plain decimal digits only (no sign, exponent, hex
  -- prefix or blank; docs/lua-protocol.md#conventions), at most PL_MAX_DIGITS of
  -- them (exact in a double). nil for anything else.
  -- (Recurring arguments, a ttl or a reserve_ms, are checked once: DEC
  -- keeps the verdicts, a number or false.)
  local DEC = cache(256)
  local function dec(s)
    local v = DEC.t[s]
    if v ~= nil then return v or nil end
    if type(s) ~= "string" then return nil end
    v = #s > 0 and #s <= PL_MAX_DIGITS and not sfind(s, "%D") and int(s)
    if #s <= 9 then keep(DEC, s, v or false) end
    return v or nil
  end

  local function valid_id(id) return type(id) == "string" and #id <= PL_MAX_ID and sfind(id, "^[%w-]+$") ~= nil end
  local function valid_key(k)
    return type(k) == "string" and #k <= PL_MAX_KEY and sfind(k, "^[%w._:-]+$") ~= nil
  end

  -- f(key, n, ...) once per distinct items[k][field] (nil ones skipped),
  -- n the items with it; one item, the usual case, makes no table.
  local function per_key(items, field, f, ...)
    if #items == 1 then
      local key = items[1][field]
      if key then f(key, 1, ...) end
      return
    end
    local per = {}
    for k = 1, #items do
      local key = items[k][field]
      if key then per[key] = (per[key] or 0) + 1 end
    end
    for key, n in pairs(per) do f(key, n, ...) end
  end

  Values = { cache = cache, keep = keep, per_key = per_key, num = num, int = int, dec = dec, valid_id = valid_id,
             valid_key = valid_key }
end
