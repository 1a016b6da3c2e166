--[[
  lua/convert.lua: the function convert: a held lock's new operation and
  targets, judged as acquire judges a request (with acquire's own steps), in
  one atomic call, or nothing changed. Keys, arguments and replies:
  docs/lua-protocol.md#convert.

  Cost: acquire's, plus the lock's record read first, its old targets' fields
  in the check's HMGET, one ZREM of its old entries, and a wake-up of its old
  paths. Nothing is written before the check: a refusal writes only what an
  acquire's would (the place in line).

  Uses:      Values (num), Call (begin), Commands (writable), Meta (check_meta,
             tag_count, expire, evicting_policy, gcode), Paths (entry_member, list_member),
             Index (bump_target, flush), Records (pack_lock, head_of,
             key_field, read_back, wake), Removal (load_waiters, remove_waiters, conversions_of),
             Conflicts (lock_refuses), Request (read_request), Acquire (open_line, live_lock, grant_again,
             same_request, held_refusal, older_refusal, refusal_reply, refuse, next_fence)
  Provides:  Convert.convert
]]
local Convert
do
  local num = Values.num
  local begin = Call.begin
  local writable = Commands.writable
  local check_meta, tag_count, expire, evicting_policy, gcode = Meta.check_meta, Meta.tag_count, Meta.expire,
    Meta.evicting_policy, Meta.gcode
  local entry_member, list_member = Paths.entry_member, Paths.list_member
  local bump_target, flush = Index.bump_target, Index.flush
  local pack_lock, head_of, key_field, read_back, wake = Records.pack_lock, Records.head_of, Records.key_field,
    Records.read_back, Records.wake
  local load_waiters, remove_waiters, conversions_of = Removal.load_waiters, Removal.remove_waiters,
    Removal.conversions_of
  local lock_refuses = Conflicts.lock_refuses
  local read_request = Request.read_request
  local open_line, live_lock, grant_again, same_request = Acquire.open_line, Acquire.live_lock, Acquire.grant_again,
    Acquire.same_request
  local held_refusal, older_refusal, refusal_reply, refuse = Acquire.held_refusal, Acquire.older_refusal,
    Acquire.refusal_reply, Acquire.refuse
  local next_fence = Acquire.next_fence

  -- ---- convert, step by step ----------------------------------------------
  -- pl_convert (docs/lua-protocol.md#convert) takes acquire's arguments:
  -- reenter_id and reenter_token are the proof of the lock to convert; it
  -- reads the lock, opens the line, answers a retry (idempotent_convert),
  -- judges the request as an acquire with the lock's own counts taken out in
  -- memory and its own entries passed over (Acquire.held_refusal's `own`), and
  -- then writes the lock's new operation and targets (convert_grant) or
  -- nothing of the lock (refused).

  -- The live place in line of lock `id`'s waiting conversion, or nil: one
  -- ZRANGE and one HMGET of the line's CONVERTS fields (only when a
  -- conversion is refused by a held lock).
  local function waiting_conversion(c, id)
    local ids = rcall("ZRANGE", c.wq, "0", "-1")
    local converts = conversions_of(c, ids)
    for i = 1, #ids do
      if converts[ids[i]] == id then
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

  -- Granted: lock l takes request r's operation and targets, a new fence and
  -- the lease now + ttl; b is the index batch of the check, which holds l's
  -- old counts taken out (in memory) and the new ones are added to: one HSET
  -- (and HDEL) writes the difference; one ZREM and one ZADD move the entries.
  local function convert_grant(c, r, l, b)
    local fence, f16 = next_fence(c)
    if not fence then return redis.error_reply("PATHLOCK fence space exhausted (2^53)") end
    local old_paths, members, gone = l.paths, { "0", list_member(f16, l.id) }, { list_member(l.f16, l.id) }
    for i = 1, #old_paths do
      gone[#gone + 1] = entry_member(gcode(l.tag, l.info.first + i - 1), old_paths[i], l.f16, l.id)
    end
    rcall("ZREM", c.ent, tunpack(gone))
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

  -- Refused (nothing of l was written): `w` refused the request. A held lock
  -- whose own waiting conversion l refuses would wait for l while l waits for
  -- it: would_deadlock (l unchanged, the caller's place gone).
  local function convert_refused(c, r, l, w)
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
          or writable(c, true, true)
    if bad then return bad end
    local w, b, flagged
    w, b, flagged, bad = held_refusal(c, r, l)
    if not bad and not w and r.fair then
      w, bad = older_refusal(c, r, flagged, function(p) return lock_refuses(c, l, p) end)
    end
    if bad then return bad end
    if w then return convert_refused(c, r, l, w) end
    return convert_grant(c, r, l, b)
  end

  Convert = { convert = pl_convert }
end
