--[[
  lua/acquire.lua: the function acquire: takes every target of one lock
  request, or none, in one atomic call; for a request that waits, also keeps
  its place in line (fairness). Keys, arguments and replies:
  docs/lua-protocol.md#acquire.

  Cost: one HMGET of the index for all nodes of all targets (the check and
  the counts to update), and on a grant one HSET of the index, one ZADD of
  the entries and one write per other key, whatever the path depth and the
  number of locks; a refusal costs what Conflicts says.

  Uses:      Values (num), Call (begin), Commands (writable), Meta (check_meta,
             tag_available, own_tag, TAGS_FULL, tag_count, expire, evicting_policy, gcode), Paths (fields_of,
             entry_member, list_member, fence16), Index (batch, check_set, want, fetch,
             want_target, bump_target, flush), Records (unpack_lock, pack_lock, pack_waiter,
             head_of, key_field, remaining, read_back), Removal (load_waiters, remove_locks,
             remove_waiters, expired_locks, ended_waiters, remove_ended, add_once, CONVERTS),
             Conflicts (held_conflict, waiter_flag, older_waiter), Request (read_request),
             Limits (effective, grant_refusal, place_refusal, owner_up);
             PL_CODES_PER_TAG, PL_FENCE_DIGITS, PL_MAX_FENCE
  Provides:  Acquire.acquire, and the steps lua/convert.lua shares: Acquire.open_line,
             Acquire.live_lock, Acquire.grant_again, Acquire.same_request, Acquire.held_refusal,
             Acquire.older_refusal, Acquire.refusal_reply, Acquire.refuse, Acquire.next_fence
]]
local Acquire
do
  local num = Values.num
  local begin = Call.begin
  local writable = Commands.writable
  local check_meta, tag_available, own_tag, TAGS_FULL = Meta.check_meta, Meta.tag_available, Meta.own_tag,
    Meta.TAGS_FULL
  local tag_count, expire, gcode, evicting_policy = Meta.tag_count, Meta.expire, Meta.gcode, Meta.evicting_policy
  -- The keys a new lock or a new place in line may create (Meta.expire):
  -- none when this matrix already has a lock (a place) here.
  local NEW_LOCK, NEW_PLACE = { "idx", "locks", "exp", "ent" }, { "idx", "wq", "wexp", "wrec" }
  local function new_keys(count, keys) return not (count and count > 0) and keys or nil end
  local fields_of, entry_member, list_member, fence16 = Paths.fields_of, Paths.entry_member, Paths.list_member,
    Paths.fence16
  local batch, check_set, want, fetch = Index.batch, Index.check_set, Index.want, Index.fetch
  local want_target, bump_target, flush = Index.want_target, Index.bump_target, Index.flush
  local unpack_lock, pack_lock, pack_waiter = Records.unpack_lock, Records.pack_lock, Records.pack_waiter
  local head_of, key_field, remaining, read_back = Records.head_of, Records.key_field, Records.remaining,
    Records.read_back
  local load_waiters, remove_locks, remove_waiters = Removal.load_waiters, Removal.remove_locks,
    Removal.remove_waiters
  local expired_locks, ended_waiters = Removal.expired_locks, Removal.ended_waiters
  local remove_ended, add_once = Removal.remove_ended, Removal.add_once
  local held_conflict, waiter_flag = Conflicts.held_conflict, Conflicts.waiter_flag
  local older_waiter = Conflicts.older_waiter
  local CONVERTS = Removal.CONVERTS
  local read_request = Request.read_request
  local effective, grant_refusal, place_refusal, owner_up = Limits.effective, Limits.grant_refusal,
    Limits.place_refusal, Limits.owner_up

  -- ---- acquire, step by step ------------------------------------------------
  -- pl_acquire runs: read_request (argument checks, before anything is read),
  -- check_meta, open_line (the caller's place, reaping), the proof steps
  -- (reenter, idempotent), find_refusal (held locks, then older waiters), and
  -- then refuse or grant. Each step returns a reply when the call ends there.

  -- The caller's place in line (r.me, nil when it has none or it ended), after
  -- reaping expired locks and ended places. Returns a reply when the call ends.
  local function open_line(c, r)
    if r.waiter_id ~= "" and rcall("HGET", c.wrec, r.waiter_id) then
      local me = load_waiters(c, { r.waiter_id })[1]
      if me.stale or me.tag ~= c.tag or me.owner ~= r.owner or me.op ~= r.op_name
         or tconcat(me.paths, "\0") ~= tconcat(r.paths, "\0") then
        return { "invalid", "waiter_id " .. r.waiter_id .. " is in use by another request" }
      end
      r.me = me
    end
    local reaped, stale = expired_locks(c)
    local ended, line_empty = ended_waiters(c)
    r.line_empty = line_empty
    if r.me and r.me.exp <= c.now then
      -- Its reservation ran out (the caller stalled): the place is lost; a
      -- refusal below puts the caller at the back again.
      add_once(ended, r.me)
      r.me = nil
    end
    return remove_ended(c, reaped, stale, ended)
  end

  -- The live lock `id` of this matrix, or nil (an expired one is removed).
  -- Returns the lock, or nil and a reply when the call ends.
  local function live_lock(c, id)
    local rec = rcall("HGET", c.locks, id)
    local l = rec and unpack_lock(id, rec)
    if l and l.exp <= c.now then
      local bad = writable(c, false, true)
      if bad then return nil, bad end
      remove_locks(c, { l })
      return nil
    end
    return l
  end

  -- Gives lock l (live, of this request) back to its caller: `hold` adds a
  -- hold (reentry); the lease becomes at least now + ttl either way.
  local function grant_again(c, r, l, hold)
    local bad = writable(c, true, r.me ~= nil)
    if bad then return bad end
    if hold then
      l.holds = l.holds + 1
      l.ttl_s = r.ttl_s
    end
    if c.now + r.ttl > l.exp then
      l.exp = c.now + r.ttl
      l.exp_s = num(l.exp)
    end
    rcall("ZADD", c.exp, l.exp_s, l.id)
    rcall("HSET", c.locks, l.id, pack_lock(l))
    expire(c, l.exp)
    if r.me then remove_waiters(c, { r.me }) end
    -- the layout of src/redis/replies.hpp (reply::granted)
    return { "granted", l.id, l.token, tonum(l.f16), remaining(l.exp, c.now), l.holds }
  end

  -- Does lock l have the operation and the paths of request r?
  local function same_request(c, l, r)
    return l.tag == c.tag and l.op == r.op_name and tconcat(l.paths, "\0") == tconcat(r.paths, "\0")
  end

  -- Reentry by proof: the lock r.reenter_id with token r.reenter_token gets
  -- one more hold. Without one: { "not_holder" }, which tells nothing about
  -- any lock.
  local function reenter(c, r)
    local l, bad = live_lock(c, r.reenter_id)
    if bad then return bad end
    if not l or l.token ~= r.reenter_token then return { "not_holder" } end
    if not same_request(c, l, r) then
      return { "invalid", "reentry of lock " .. l.id .. ": the request must repeat its operation '" .. l.op
                          .. "' and its targets" }
    end
    return grant_again(c, r, l, true)
  end

  -- Idempotent retry: the live lock of r.key, if any, comes back unchanged
  -- (its lease extended). Returns a reply when the call ends here.
  local function idempotent(c, r)
    local id = rcall("HGET", c.locks, key_field(r.key))
    local l, bad = nil, nil
    if id then l, bad = live_lock(c, id) end
    if bad then return bad end
    if not l then return nil end
    if l.owner ~= r.owner or not same_request(c, l, r) then
      return { "invalid", "idempotency_key is in use by another request (another owner, operation or targets)" }
    end
    return grant_again(c, r, l, false)
  end

  -- The held lock that refuses request r (held locks first, every request, in
  -- role order), with the index batch the check read (a grant writes through
  -- it), and which targets the waiter counts flag for a newcomer. Expired or
  -- stale witnesses are removed and the check runs again. Returns w, b,
  -- flagged; or nil, nil, nil and a reply. A conversion passes its lock as
  -- `own`: the batch holds that lock's counts taken out, in memory only (a
  -- grant writes through it; a refusal writes nothing), and the witnesses
  -- found are other locks' (lua/convert.lua).
  -- Fetches batch b; with a lock l (a conversion's), also the fields of l's
  -- targets, and then takes l's counts out in memory (b.own: the lock whose
  -- entries the check passes over, and whose batch it reads as changed).
  local function fetch_without(c, b, l)
    if l then
      for k = 1, #l.paths do want_target(c, b, l.paths[k], "h", "b") end
    end
    fetch(c, b)
    if not l then return end
    for k = 1, #l.paths do bump_target(c, b, gcode(l.tag, l.info.first + k - 1), l.paths[k], "h", "b", -1) end
    b.own = l.id
  end
  local NOT_FLAGGED = {} -- no target flagged (shared, never written)
  local function held_refusal(c, r, own)
    local paths, n = r.paths, r.n
    local newcomer_line = r.fair and not r.me and not r.line_empty
    while true do
      local b, flagged, w = batch(check_set(paths[1])), newcomer_line and {} or NOT_FLAGGED, nil
      for i = 1, n do
        if i > 1 then
          local fields = check_set(paths[i]).fields
          for k = 1, #fields do want(b, fields[k]) end
        end
        if newcomer_line then
          local whf = fields_of(paths[i], "wh")
          for j = 1, #whf do want(b, whf[j]) end
          want(b, fields_of(paths[i], "wb")[#whf])
        end
      end
      fetch_without(c, b, own)
      local again = false
      for i = 1, n do
        local code = r.op.first + i - 1
        local found = held_conflict(c, b, code, paths[i])
        if found and found.broken then
          return nil, nil, nil, redis.error_reply("PATHLOCK index out of step " .. found.broken .. " (code " .. code .. ")")
        elseif found and (found.expired or found.stale) then
          local bad = writable(c, false, true)
          if bad then return nil, nil, nil, bad end
          if found.expired then remove_locks(c, { found.expired }) else rcall("ZREM", c.ent, found.stale) end
          again = true
          break
        elseif found then
          found.at = i
          return found, b, flagged
        end
        if newcomer_line then flagged[i] = waiter_flag(c, b, code, paths[i]) end
      end
      if not again then return nil, b, flagged end
    end
  end

  -- Fair requests only: the older waiter that refuses request r. A newcomer
  -- scans the line only for targets the waiter counts flag; a waiter in line
  -- scans the waiters older than itself (strict order, so waiters never wait
  -- in a cycle). Places for which `skip(w)` is true are passed over (a
  -- conversion's). Returns w (or nil), or nil and a reply.
  local function older_refusal(c, r, flagged, skip)
    local gone, w = {}, nil
    for i = 1, r.n do
      if r.me or flagged[i] then
        w = older_waiter(c, r.op.first + i - 1, r.paths[i], r.me and r.me.seq, gone, skip)
        if w then
          w.at = i
          break
        end
      end
    end
    if #gone > 0 then
      local bad = writable(c, false, true)
      if bad then return nil, bad end
      remove_waiters(c, gone)
    end
    return w
  end

  -- Takes a new place at the back of the line for request r, refused now.
  local function take_place(c, r, exp)
    local paths = r.paths
    local last = rcall("ZREVRANGE", c.wq, "0", "0", "WITHSCORES")
    local seq = (last[2] and tonum(last[2]) or 0) + 1 -- behind everyone in line now
    local new = new_keys(c.tag_w, NEW_PLACE)
    local wb = batch() -- reads first: the counts to update
    for j = 1, r.n do want_target(c, wb, paths[j], "wh", "wb") end
    fetch(c, wb)
    local bad = writable(c, true, true)
    if bad then return bad end
    if not tag_available(c) then return redis.error_reply(TAGS_FULL) end
    local tag = own_tag(c)
    for j = 1, r.n do bump_target(c, wb, gcode(tag, r.op.first + j - 1), paths[j], "wh", "wb", 1) end
    rcall("ZADD", c.wexp, exp, r.waiter_id)
    tag_count(c, tag, 0, 1)
    flush(c, wb)
    local rec = pack_waiter({ head = head_of(tag, r.op_name), op = r.op_name, since = c.now_s, owner = r.owner,
                              paths = paths })
    if r.converts then
      rcall("HSET", c.wrec, r.waiter_id, rec, CONVERTS .. r.waiter_id, r.converts)
    else
      rcall("HSET", c.wrec, r.waiter_id, rec)
    end
    rcall("ZADD", c.wq, num(seq), r.waiter_id)
    expire(c, c.now + r.reserve, new)
    return nil
  end

  -- The reply of a refusal by w (`status`: refused, would_deadlock), naming
  -- the lock or place found by its own record (its matrix may be another one).
  local function refusal_reply(c, r, w, status)
    local item = w.lock or w.waiter
    local role = item.info.roles[w.code % PL_CODES_PER_TAG - item.info.first + 1] or ""
    -- the layout of src/redis/replies.hpp (reply::refused)
    return { status, item.id, item.op, role, w.path, item.owner, remaining(item.exp, c.now),
             r.op.roles[w.at], r.paths[w.at], w.relation, w.waiter and 1 or 0 }
  end

  -- Refused by w: keeps, takes or (last attempt) gives up the caller's place.
  local function refuse(c, r, w)
    local bad
    if r.waiter_id ~= "" and r.reserve > 0 then
      local exp = num(c.now + r.reserve)
      if r.me then
        bad = writable(c, true, true)
        if bad then return bad end
        rcall("ZADD", c.wexp, exp, r.waiter_id)
        expire(c, c.now + r.reserve)
      else
        local lim = effective(c, r)
        bad = (lim and place_refusal(c, lim)) or take_place(c, r, exp)
        if bad then return bad end
      end
    elseif r.me then
      bad = writable(c, false, true)
      if bad then return bad end
      remove_waiters(c, { r.me })
    end
    return refusal_reply(c, r, w, "refused")
  end

  -- The highest fence this library has issued in any namespace since it was
  -- loaded on this server: a floor for the next, so that fences never go
  -- back when a namespace's keys (meta.fence with them) expired on a clock
  -- that was ahead and the clock then stepped back (docs/design.md#clock-steps).
  -- (Kept by the server's Lua state: a restart or a reload starts it again
  -- at 0, and the clock alone then bounds the fence, as after a data loss.)
  local FLOOR = 0

  -- The fence of a new lock: one more than the last, and at least the server
  -- clock in microseconds, so it never goes back even when Redis lost the
  -- namespace's data (restart without persistence, failover to a lagging
  -- replica), and above FLOOR. Returns the fence and its 16-digit text, or nil.
  local function next_fence(c)
    local now_us = tonum(c.now_us_s)
    local fence = mmax((tonum(c.fence_s) or 0), FLOOR) + 1
    if now_us >= fence and #c.now_us_s == PL_FENCE_DIGITS then
      FLOOR = now_us
      return now_us, c.now_us_s
    end
    fence = mmax(fence, now_us)
    if fence > PL_MAX_FENCE then return nil end
    FLOOR = fence
    return fence, fence16(fence)
  end

  -- Granted: a new lock. Every write below is known to be allowed; the expiry
  -- first (so an interrupted call is reaped), the record last but one.
  local function grant(c, r, b)
    local bad = writable(c, true, r.me ~= nil)
    if bad then return bad end
    if not tag_available(c) then return redis.error_reply(TAGS_FULL) end
    local fence, f16 = next_fence(c)
    if not fence then return redis.error_reply("PATHLOCK fence space exhausted (2^53)") end
    local paths, id, new = r.paths, r.new_id, new_keys(c.tag_l, NEW_LOCK)
    local l = { id = id, token = r.new_token, owner = r.owner, op = r.op_name, f16 = f16, holds = 1,
                ttl_s = r.ttl_s, exp_s = num(c.now + r.ttl), key = r.key, paths = paths }
    rcall("ZADD", c.exp, l.exp_s, id)
    local tag = own_tag(c)
    l.head = head_of(tag, r.op_name)
    local members = { nil, nil, nil, nil }
    for i = 1, r.n do
      local g = gcode(tag, r.op.first + i - 1)
      bump_target(c, b, g, paths[i], "h", "b", 1)
      members[#members + 1] = "0"
      members[#members + 1] = entry_member(g, paths[i], f16, id)
    end
    members[#members + 1] = "0"
    members[#members + 1] = list_member(f16, id)
    tag_count(c, tag, 1, 0, f16, owner_up(c)) -- and the fence and the owner's count, in the same HSET
    flush(c, b)
    l.tag = tag
    local rec = pack_lock(l)
    if r.key ~= "" then
      rcall("HSET", c.locks, id, rec, key_field(r.key), id)
    else
      rcall("HSET", c.locks, id, rec)
    end
    read_back(l, rec)
    rcall("ZADD", c.ent, tunpack(members))
    expire(c, mmax(c.now + r.ttl, mfloor(fence / 1000) + 1), new)
    if r.me then remove_waiters(c, { r.me }) end
    -- the layout of src/redis/replies.hpp (reply::granted)
    return { "granted", id, r.new_token, fence, r.ttl, 1 }
  end

  -- Refused by a limit (`over`, the reply): a caller in line leaves it,
  -- nothing else is written.
  local function leave_over(c, r, over)
    if r.me then
      local bad = writable(c, false, true)
      if bad then return bad end
      remove_waiters(c, { r.me })
    end
    return over
  end

  local function pl_acquire(keys, argv)
    local c, bad = begin(keys)
    if not c then return bad end
    local r
    r, bad = read_request(argv)
    if not r then return bad end
    -- A call that runs after its caller stopped waiting changes nothing
    -- (docs/lua-protocol.md#deadlines); the reply gives the server's clock.
    if r.deadline and c.now >= r.deadline then return { "late", c.now } end
    c.owner_field = "o:" .. r.owner
    bad = check_meta(c, c.owner_field) or evicting_policy(c) or open_line(c, r)
    if bad then return bad end
    if r.reenter_id ~= "" then return reenter(c, r) end
    if r.key ~= "" then
      bad = idempotent(c, r)
      if bad then return bad end
    end
    if rcall("HGET", c.locks, r.new_id) then return { "invalid", "new_id " .. r.new_id .. " is in use" } end
    -- Limits on new locks first: a namespace (an owner) at its limit is
    -- refused whatever its conflicts, before the costly checks, so that a
    -- client acquiring in a loop costs the server little once stopped.
    local lim = effective(c, r)
    bad = lim and grant_refusal(c, r, lim)
    if bad then return leave_over(c, r, bad) end
    local w, b, flagged
    w, b, flagged, bad = held_refusal(c, r)
    if bad then return bad end
    if not w and r.fair then
      w, bad = older_refusal(c, r, flagged)
      if bad then return bad end
    end
    if w then return refuse(c, r, w) end
    return grant(c, r, b)
  end

  Acquire = { acquire = pl_acquire, open_line = open_line, live_lock = live_lock, grant_again = grant_again,
              same_request = same_request, held_refusal = held_refusal, older_refusal = older_refusal,
              refusal_reply = refusal_reply, refuse = refuse, next_fence = next_fence }
end
