--[[
  lua/convert.lua: the function convert: a held lock's new operation and
  targets, judged as acquire judges a request (with acquire's own steps), in
  one atomic call, or nothing changed. Keys, arguments and replies:
  docs/lua-protocol.md#convert.

  Cost: acquire's, plus one HMGET, HSET and ZREM to set the lock's targets
  aside, the lock's record read first, and a wake-up of its old paths.

  Uses:      Values (num), Call (begin), Commands (writable, chunked, readable), Meta (check_meta,
             tag_count, expire, evicting_policy, gcode), Paths (entry_member, list_member, within),
             Index (batch, fetch, want_target, bump_target, flush), Records (pack_lock, head_of,
             key_field, read_back, wake), Removal (load_waiters, remove_waiters, CONVERTS),
             Conflicts (refusal), Request (read_request), Acquire (open_line, live_lock, grant_again,
             same_request, held_refusal, older_refusal, refusal_reply, refuse, next_fence)
  Provides:  Convert.convert
]]
local Convert
do
  local num = Values.num
  local begin = Call.begin
  local writable, chunked, readable = Commands.writable, Commands.chunked, Commands.readable
  local check_meta, tag_count, expire, evicting_policy, gcode = Meta.check_meta, Meta.tag_count, Meta.expire,
    Meta.evicting_policy, Meta.gcode
  local entry_member, list_member, within = Paths.entry_member, Paths.list_member, Paths.within
  local batch, fetch, want_target, bump_target, flush = Index.batch, Index.fetch, Index.want_target,
    Index.bump_target, Index.flush
  local pack_lock, head_of, key_field, read_back, wake = Records.pack_lock, Records.head_of, Records.key_field,
    Records.read_back, Records.wake
  local load_waiters, remove_waiters, CONVERTS = Removal.load_waiters, Removal.remove_waiters, Removal.CONVERTS
  local refusal = Conflicts.refusal
  local read_request = Request.read_request
  local open_line, live_lock, grant_again, same_request = Acquire.open_line, Acquire.live_lock, Acquire.grant_again,
    Acquire.same_request
  local held_refusal, older_refusal, refusal_reply, refuse = Acquire.held_refusal, Acquire.older_refusal,
    Acquire.refusal_reply, Acquire.refuse
  local next_fence = Acquire.next_fence

  -- ---- convert, step by step ----------------------------------------------
  -- pl_convert (docs/lua-protocol.md#convert) takes acquire's arguments:
  -- reenter_id and reenter_token are the proof of the lock to convert; it
  -- reads the lock, opens the line, answers a retry (idempotent_convert), sets
  -- the lock's targets aside (counts and entries), judges the request as an
  -- acquire, and then either puts them back exactly (refused) or writes the
  -- lock's new operation and targets (convert_grant).

  -- Takes lock l's index counts, entries and list member out (d = -1) or
  -- puts them back exactly as they were (d = 1): one HMGET, one HSET (and
  -- HDEL) and one ZREM or ZADD.
  local function set_aside(c, l, d)
    local b, members = batch(), { "0", list_member(l.f16, l.id) }
    for i = 1, #l.paths do want_target(c, b, l.paths[i], "h", "b") end
    fetch(c, b)
    for i = 1, #l.paths do
      local g = gcode(l.tag, l.info.first + i - 1)
      bump_target(c, b, g, l.paths[i], "h", "b", d)
      members[#members + 1] = "0"
      members[#members + 1] = entry_member(g, l.paths[i], l.f16, l.id)
    end
    flush(c, b)
    if d > 0 then
      rcall("ZADD", c.ent, tunpack(members))
    else
      for k = 1, #members / 2 do members[k] = members[2 * k] end -- (the members without their scores)
      rcall("ZREM", c.ent, tunpack(members, 1, #members / 2))
    end
  end

  -- Does a target of lock l (of this library's matrix) refuse a target of
  -- place w as if w held its lock? Another matrix's place: any overlap.
  local function lock_refuses(c, l, w)
    for i = 1, #l.paths do
      local held = gcode(l.tag, l.info.first + i - 1)
      for j = 1, #w.paths do
        if w.tag ~= c.tag then
          local a, b = l.paths[i], w.paths[j]
          if a == b or within(a, b) or within(b, a) then return true end
        elseif refusal(c, held, l.paths[i], w.info.first + j - 1, w.paths[j]) then
          return true
        end
      end
    end
    return false
  end

  -- The live place in line of lock `id`'s waiting conversion, or nil: one
  -- ZRANGE and one HMGET of the line's CONVERTS fields (only when a
  -- conversion is refused by a held lock).
  local function waiting_conversion(c, id)
    local ids = rcall("ZRANGE", c.wq, "0", "-1")
    if #ids == 0 then return nil end
    local fields = {}
    for i = 1, #ids do fields[i] = CONVERTS .. ids[i] end
    local v = chunked("HMGET", c.wrec, fields)
    for i = 1, #ids do
      if v[i] == id then
        local w = load_waiters(c, { ids[i] })[1]
        if not w.stale and w.exp > c.now then return w end
      end
    end
    return nil
  end

  -- No live lock with the caller's proof: not_holder, and a place in line the
  -- caller took in an earlier attempt is gone at once (its lock went while
  -- it waited), not when its reservation ends.
  local function lock_gone(c, r)
    if r.waiter_id ~= "" and rcall("HGET", c.wrec, r.waiter_id) then
      local bad = writable(c, false, true)
      if bad then return bad end
      remove_waiters(c, load_waiters(c, { r.waiter_id }))
    end
    return { "not_holder" }
  end

  -- A retry of the conversion that made lock l what it is (its key, operation
  -- and targets): l back unchanged, its lease extended. nil otherwise.
  local function idempotent_convert(c, r, l)
    if l.key ~= r.key or not same_request(c, l, r) then return nil end
    return grant_again(c, r, l, false)
  end

  -- Why lock l cannot be converted by this library, or nil.
  local function unconvertible(c, r, l)
    if l.holds > 1 then
      return { "invalid", "lock " .. l.id .. " has " .. l.holds .. " holds: a lock is converted only with one hold "
                          .. "(its other holders re-entered it for what it is); release the others first" }
    end
    if l.tag ~= c.tag then
      return { "invalid", "lock " .. l.id .. " was taken under another matrix; convert it with that matrix's library" }
    end
    if r.key ~= "" and r.key ~= l.key then
      local other = rcall("HGET", c.locks, key_field(r.key))
      if other and other ~= l.id then return { "invalid", "idempotency_key is in use by another lock" } end
    end
    return nil
  end

  -- Granted: lock l (its targets set aside) takes request r's operation and
  -- targets, a new fence and the lease now + ttl; b is the index batch of the
  -- check, which the new counts are written through.
  local function convert_grant(c, r, l, b)
    local fence, f16 = next_fence(c)
    if not fence then
      set_aside(c, l, 1)
      return redis.error_reply("PATHLOCK fence space exhausted (2^53)")
    end
    local old_paths, members = l.paths, { "0", list_member(f16, l.id) }
    for i = 1, r.n do
      local g = gcode(l.tag, r.op.first + i - 1)
      bump_target(c, b, g, r.paths[i], "h", "b", 1)
      members[#members + 1] = "0"
      members[#members + 1] = entry_member(g, r.paths[i], f16, l.id)
    end
    tag_count(c, l.tag, 0, 0, f16)
    flush(c, b)
    local old_key = l.key
    if r.key ~= "" then l.key = r.key end
    l.op, l.head, l.paths, l.f16, l.ttl_s, l.exp_s = r.op_name, head_of(l.tag, r.op_name), r.paths, f16, r.ttl_s,
      num(c.now + r.ttl)
    l.exp = tonum(l.exp_s)
    rcall("ZADD", c.exp, l.exp_s, l.id)
    local rec = pack_lock(l)
    if l.key ~= old_key then
      if old_key ~= "" then rcall("HDEL", c.locks, key_field(old_key)) end
      rcall("HSET", c.locks, l.id, rec, key_field(l.key), l.id)
    else
      rcall("HSET", c.locks, l.id, rec)
    end
    read_back(l, rec) -- (its next conversion or release reads the record without parsing it)
    rcall("ZADD", c.ent, tunpack(members))
    expire(c, mmax(c.now + r.ttl, mfloor(fence / 1000) + 1))
    if r.me then remove_waiters(c, { r.me }) end
    wake(c, old_paths) -- what the lock no longer covers may let waiters in
    -- the layout of src/redis/replies.hpp (reply::granted)
    return { "granted", l.id, l.token, fence, r.ttl, l.holds }
  end

  -- Refused: l's targets go back; `w` refused the request. A held lock whose
  -- own waiting conversion l refuses would wait for l while l waits for it:
  -- would_deadlock (l unchanged, the caller's place gone).
  local function convert_refused(c, r, l, w)
    set_aside(c, l, 1)
    if w.lock then
      local other = waiting_conversion(c, w.lock.id)
      if other and lock_refuses(c, l, other) then
        if r.me then remove_waiters(c, { r.me }) end
        return refusal_reply(c, r, w, "would_deadlock")
      end
    end
    return refuse(c, r, w)
  end

  local function pl_convert(keys, argv)
    local c, bad = begin(keys)
    if not c then return bad end
    local r
    r, bad = read_request(argv, true)
    if not r then return bad end
    if r.deadline and c.now >= r.deadline then return { "late", c.now } end
    bad = check_meta(c) or evicting_policy(c)
    if bad then return bad end
    local l
    l, bad = live_lock(c, r.reenter_id)
    if bad then return bad end
    if not l or l.token ~= r.reenter_token then return lock_gone(c, r) end
    r.owner, r.converts, c.owner_field = l.owner, l.id, "o:" .. l.owner
    bad = open_line(c, r) or (r.key ~= "" and idempotent_convert(c, r, l)) or unconvertible(c, r, l)
          or writable(c, true, true) or readable(c)
    if bad then return bad end
    set_aside(c, l, -1)
    local w, b, flagged
    w, b, flagged, bad = held_refusal(c, r)
    if not bad and not w and r.fair then
      w, bad = older_refusal(c, r, flagged, function(p) return lock_refuses(c, l, p) end)
    end
    if bad then
      set_aside(c, l, 1)
      return bad
    end
    if w then return convert_refused(c, r, l, w) end
    return convert_grant(c, r, l, b)
  end

  Convert = { convert = pl_convert }
end
