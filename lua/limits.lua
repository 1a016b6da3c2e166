--[[
  lua/limits.lua: limits per namespace (docs/lua-protocol.md#limits): the
  most live locks, places in line and locks per owner a namespace may have,
  checked by acquire in the same call as the grant; each owner's count of
  live locks (meta field o:OWNER); the functions set_limits and limits_ro.

  A namespace's own limits are meta's field `lim`, in the text form
  "LOCKS PLACES OWNER_LOCKS" (each decimal digits, or "-" for none); the
  default comes with each acquire (its argument default_limits, which the
  client reads from the key pl:limits). Cost where no limit applies: none
  but meta's one more field in check_meta's HMGET; a grant writes its owner's
  count (one HGET, one HSET), a removal lowers it.

  Uses:      Values (cache, keep, dec, num, per_key), Commands (writable), Meta
             (begin_with, persist, drained); PL_MAX_LIMIT
  Provides:  Limits.effective, Limits.grant_refusal, Limits.place_refusal,
             Limits.count_owners, Limits.owner_up, Limits.valid, Limits.set_limits, Limits.limits_ro
]]
local Limits
do
  local cache, keep, dec, num, per_key = Values.cache, Values.keep, Values.dec, Values.num, Values.per_key
  local writable = Commands.writable
  local begin_with, persist, drained = Meta.begin_with, Meta.persist, Meta.drained

  -- A limits text parsed: { locks, places, owner } (numbers or false), or
  -- nil when malformed. Kept: a service sends the same text call after call.
  local PARSED = cache(64)
  local function field(s)
    if s == "-" then return false end
    local v = dec(s)
    if not v or #s > 10 or v > PL_MAX_LIMIT then return nil end
    return v
  end
  local function parse(text)
    local v = PARSED.t[text]
    if v ~= nil then return v end
    local a, b, o = smatch(text, "^(%S+) (%S+) (%S+)$")
    local l = a and { field(a), field(b), field(o) }
    if l and (l[1] == nil or l[2] == nil or l[3] == nil) then l = nil end
    return keep(PARSED, text, l or false)
  end

  -- The limits in force for request r: the namespace's own (meta.lim), else
  -- the default the client sent. nil when none applies.
  local function effective(c, r)
    local text = c.lim_s or r.default_limits
    if not text or text == "" then return nil end
    local l = parse(text)
    if not l or (not l[1] and not l[2] and not l[3]) then return nil end
    return l
  end

  local function over(name, max, count) return { "over_limit", name, max, count } end

  -- The live locks (leases not ended) and places in line (reservations not
  -- ended) of the namespace.
  local function live_locks(c) return rcall("ZCOUNT", c.exp, "(" .. c.now_s, "+inf") end
  local function live_places(c) return rcall("ZCOUNT", c.wexp, "(" .. c.now_s, "+inf") end

  -- The count of the acquiring owner's locks: meta's field c.owner_field,
  -- which acquire's check_meta read (c.extra) and count_owners keeps up to
  -- date when the call removes locks of that owner.
  local function owner_count(c) return tonum(c.extra or "0") or 0 end

  -- Would a new lock of request r take the namespace over `l`? The reply,
  -- or nil.
  local function grant_refusal(c, r, l)
    if l[1] then
      local n = live_locks(c)
      if n >= l[1] then return over("locks", l[1], n) end
    end
    if l[3] then
      local n = owner_count(c)
      if n >= l[3] then return over("owner_locks", l[3], n) end
    end
    return nil
  end

  -- Would a new place in line take the namespace over `l`? The reply, or nil.
  local function place_refusal(c, l)
    if not l[2] then return nil end
    local n = live_places(c)
    if n >= l[2] then return over("places", l[2], n) end
    return nil
  end

  -- A grant of request r: its owner's field and count, one lock more (the
  -- grant writes them with its other counts: Meta.tag_count).
  local function owner_up(c) return c.owner_field, num(owner_count(c) + 1) end

  -- The locks `locks` went: each owner's count goes down by its locks there
  -- (a field that reaches 0 goes; a lock granted by a library without counts,
  -- pathlock 1.0, lowers no count below 0).
  -- (The caller's own count was read with meta, c.extra, and is kept
  -- current here: no HGET for it.)
  local function owner_down(o, d, c)
    local f = "o:" .. o
    local own, text = f == c.owner_field, nil
    if own then text = c.extra else text = rcall("HGET", c.meta, f) end
    local n = (tonum(text or "0") or 0) - d
    if n > 0 then rcall("HSET", c.meta, f, num(n)) else rcall("HDEL", c.meta, f) end
    if own then c.extra = n > 0 and num(n) or nil end
  end
  local function count_owners(c, locks) per_key(locks, "owner", owner_down, c) end

  -- set_limits(text): the namespace's own limits ("" takes them away).
  -- Its keys stop expiring while it has them (they are an operator's
  -- setting, which dormancy must not drop); taken away, a drained
  -- namespace expires again.
  local function pl_set_limits(keys, argv)
    local c, bad = begin_with(keys, argv, 1, "set_limits takes limits (\"LOCKS PLACES OWNER_LOCKS\", each digits or -; \"\": none)")
    if not c then return bad end
    local text = argv[1]
    if text ~= "" and not parse(text) then
      return { "invalid", "limits must be \"LOCKS PLACES OWNER_LOCKS\", each 0.." .. PL_MAX_LIMIT .. " or -" }
    end
    -- Setting them takes the TTLs off (PERSIST, HDEL); so checked first.
    if text ~= "" and (c.expiring or c.x) then c.persist = true end
    bad = writable(c, true, true)
    if bad then return bad end
    if text == "" then
      rcall("HDEL", c.meta, "lim")
      c.lim_s = nil
      drained(c)
      return { "limits", "" }
    end
    if c.expiring then persist(c) end
    if c.x then
      rcall("PERSIST", c.meta)
      rcall("HDEL", c.meta, "x")
      c.x = nil
    end
    rcall("HSET", c.meta, "lim", text)
    return { "limits", text }
  end

  -- limits_ro(): the namespace's own limits ("" when none), its live locks
  -- and places, and the owner with the most locks (ties: the smallest name)
  -- with that count. Read-only.
  local function pl_limits_ro(keys, argv)
    local c, bad = begin_with(keys, argv, 0, "limits_ro takes no arguments")
    if not c then return bad end
    local all = rcall("HGETALL", c.meta)
    local top, most = "", 0
    for i = 1, #all, 2 do
      if ssub(all[i], 1, 2) == "o:" then
        local n, o = tonum(all[i + 1]) or 0, ssub(all[i], 3)
        if n > most or (n == most and n > 0 and o < top) then top, most = o, n end
      end
    end
    return { "limits", c.lim_s or "", live_locks(c), live_places(c), most, top }
  end

  -- Is `text` a limits text acquire may be sent ("" included)?
  local function valid(text) return text == "" or parse(text) ~= false end

  Limits = { effective = effective, grant_refusal = grant_refusal, place_refusal = place_refusal,
             count_owners = count_owners, valid = valid, owner_up = owner_up, set_limits = pl_set_limits, limits_ro = pl_limits_ro }
end
