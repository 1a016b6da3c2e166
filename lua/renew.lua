--[[
  lua/renew.lua: the functions renew (the lease becomes now + ttl; the lock's
  own ttl when ttl is empty; a given ttl becomes the lock's ttl; the lease may
  get shorter) and held. Keys, arguments and replies:
  docs/lua-protocol.md#renew and #held. Cost: O(1) calls.

  Uses:      Values (num, dec, valid_id), Call (begin), Commands (writable),
             Meta (check_meta, begin_with, expire), Records (pack_lock, unpack_lock),
             Removal (expired_locks, remove_locks); PL_MAX_TTL
  Provides:  Renew.renew, Renew.held
]]
local Renew
do
  local num, dec, valid_id = Values.num, Values.dec, Values.valid_id
  local begin = Call.begin
  local writable = Commands.writable
  local check_meta, begin_with, expire = Meta.check_meta, Meta.begin_with, Meta.expire
  local pack_lock, unpack_lock = Records.pack_lock, Records.unpack_lock
  local expired_locks, remove_locks = Removal.expired_locks, Removal.remove_locks

  -- renew's arguments: the ttl (nil: the lock's own), or nil and a reply.
  local function renew_ttl(argv)
    if #argv ~= 3 then return nil, { "invalid", "renew takes id, token, ttl_ms or ''" } end
    if argv[3] == "" then return nil end
    local ttl = dec(argv[3])
    if not ttl or ttl < 1 or ttl > PL_MAX_TTL then
      return nil, { "invalid", "ttl must be decimal digits, 1.." .. PL_MAX_TTL .. " ms" }
    end
    return ttl
  end

  local function pl_renew(keys, argv)
    local c, bad = begin(keys)
    if not c then return bad end
    local ttl
    ttl, bad = renew_ttl(argv)
    if bad then return bad end
    bad = check_meta(c)
    if bad then return bad end
    local reaped, stale = expired_locks(c)
    local l = valid_id(argv[1]) and rcall("HGET", c.locks, argv[1])
    l = l and unpack_lock(argv[1], l)
    if not l or l.exp <= c.now or l.token ~= argv[2] then
      if l and l.exp <= c.now then
        local listed = false
        for _, r in ipairs(reaped) do listed = listed or r.id == l.id end
        if not listed then reaped[#reaped + 1] = l end
      end
      if #reaped + #stale > 0 then
        bad = writable(c, false, true)
        if bad then return bad end
        remove_locks(c, reaped, stale)
      end
      return { "missing" }
    end
    bad = writable(c, true, #reaped + #stale > 0)
    if bad then return bad end
    if ttl then l.ttl, l.ttl_s = ttl, argv[3] end
    l.ttl = l.ttl or tonum(l.ttl_s)
    l.exp = c.now + l.ttl
    l.exp_s = num(l.exp)
    rcall("ZADD", c.exp, l.exp_s, l.id)
    rcall("HSET", c.locks, l.id, pack_lock(l))
    expire(c, l.exp)
    remove_locks(c, reaped, stale)
    return { "renewed", l.ttl }
  end

  -- held: is lock `id` live with token `token`? Read-only (registered
  -- no-writes, so replicas may serve it): it reaps nothing and reads one
  -- record. Keys, arguments and replies: docs/lua-protocol.md#held.
  local function pl_held(keys, argv)
    local c, bad = begin_with(keys, argv, 2, "held takes id, token")
    if not c then return bad end
    local rec = valid_id(argv[1]) and rcall("HGET", c.locks, argv[1])
    local l = rec and unpack_lock(argv[1], rec)
    if l and l.exp > c.now and l.token == argv[2] then return { "held", 1 } end
    return { "held", 0 }
  end

  Renew = { renew = pl_renew, held = pl_held }
end
