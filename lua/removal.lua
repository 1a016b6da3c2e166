--[[
  lua/removal.lua: loading and removing locks and places in line, batched
  (one call per key), and reaping the expired ones.

  Uses:      Commands (chunked, writable), Meta (gcode, count_down),
             Paths (entry_member, list_member), Index (batch, want_target, fetch,
             bump_target, flush), Records (unpack_lock, unpack_waiter, key_field, wake),
             Limits (count_owners); PL_REAP_LIMIT
  Provides:  Removal.remove_locks, Removal.expired_locks, Removal.load_waiters,
             Removal.remove_waiters, Removal.add_once, Removal.remove_ended,
             Removal.ended_waiters, Removal.CONVERTS, Removal.conversions_of
]]
local Removal
do
  local chunked, writable = Commands.chunked, Commands.writable
  local gcode, count_down = Meta.gcode, Meta.count_down
  local count_owners = Limits.count_owners
  local entry_member, list_member = Paths.entry_member, Paths.list_member
  local batch, want_target, fetch, bump_target, flush = Index.batch, Index.want_target, Index.fetch,
    Index.bump_target, Index.flush
  local unpack_lock, unpack_waiter, key_field, wake = Records.unpack_lock, Records.unpack_waiter,
    Records.key_field, Records.wake
  -- The wrec field that names the lock a waiting conversion converts: CONVERTS
  -- .. waiter id (ids never hold ':', so it never collides with a record's).
  local CONVERTS = "v:"
  local REAP_LIMIT_S = "" .. PL_REAP_LIMIT -- expired locks (and ended places in line) removed per call at most

  -- Loads the records of `ids` (one HMGET); returns the locks found and the ids
  -- that have no (readable) record.
  local NO_IDS = {} -- no stale ids (shared: callers only read the stale ids)
  local function load_locks(c, ids)
    if #ids == 0 then return {}, NO_IDS end
    local found, stale = {}, {}
    local recs = chunked("HMGET", c.locks, ids)
    for i = 1, #ids do
      local l = recs[i] and unpack_lock(ids[i], recs[i])
      if l then found[#found + 1] = l else stale[#stale + 1] = ids[i] end
    end
    return found, stale
  end

  -- Removes locks completely (records, idempotency key fields, entries, expiry, index
  -- counts) with one call per key, and publishes their paths. `stale` ids
  -- (in exp without a record) leave exp too. The caller checked writable().
  local function remove_locks(c, locks, stale)
    if #locks == 0 and (not stale or #stale == 0) then return end
    local b, members, ids, fields, paths = batch(), { nil, nil }, { nil }, { nil, nil }, { nil }
    for k = 1, #locks do
      local l = locks[k]
      for i = 1, #l.paths do want_target(c, b, l.paths[i], "h", "b") end
    end
    fetch(c, b)
    for k = 1, #locks do
      local l = locks[k]
      for i = 1, #l.paths do
        local code = gcode(l.tag, l.info.first + i - 1)
        bump_target(c, b, code, l.paths[i], "h", "b", -1)
        members[#members + 1] = entry_member(code, l.paths[i], l.f16, l.id)
        paths[#paths + 1] = l.paths[i]
      end
      members[#members + 1] = list_member(l.f16, l.id)
      ids[#ids + 1] = l.id
      fields[#fields + 1] = l.id
      if l.key ~= "" then fields[#fields + 1] = key_field(l.key) end
    end
    if stale then
      for k = 1, #stale do ids[#ids + 1] = stale[k] end
    end
    -- The index first: once the counts are gone the lock refuses nobody, and
    -- the record, entries and expiry left by an interrupted call would be
    -- removed by a retry; the record last.
    flush(c, b)
    if #members > 0 then chunked("ZREM", c.ent, members) end
    chunked("ZREM", c.exp, ids)
    if #fields > 0 then chunked("HDEL", c.locks, fields) end
    count_down(c, locks, false)
    count_owners(c, locks)
    wake(c, paths)
  end

  -- The expired locks to reap: at most REAP_LIMIT (locks, stale ids).
  local function expired_locks(c)
    local ids = rcall("ZRANGEBYSCORE", c.exp, "-inf", c.now_s, "LIMIT", "0", REAP_LIMIT_S)
    return load_locks(c, ids)
  end

  -- Waiters: the records of `ids` (one HMGET) and their reservation ends.
  local function load_waiters(c, ids)
    local out = {}
    if #ids == 0 then return out end
    local recs = chunked("HMGET", c.wrec, ids)
    local exps = chunked("ZMSCORE", c.wexp, ids)
    local seqs = chunked("ZMSCORE", c.wq, ids)
    for i = 1, #ids do
      local w = recs[i] and unpack_waiter(ids[i], recs[i])
      if w then
        w.exp = tonum(exps[i]) or 0
        w.seq = tonum(seqs[i]) or 0
      else
        w = { id = ids[i], stale = true }
      end
      out[#out + 1] = w
    end
    return out
  end

  -- Takes places out of the line (their counts, records, line entries, and
  -- the field naming the lock a waiting conversion converts: CONVERTS .. id).
  local function remove_waiters(c, ws)
    if #ws == 0 then return end
    local b, ids, paths, fields = batch(), {}, {}, {}
    for _, w in ipairs(ws) do
      if not w.stale then
        for i = 1, #w.paths do want_target(c, b, w.paths[i], "wh", "wb") end
      end
    end
    fetch(c, b)
    for _, w in ipairs(ws) do
      ids[#ids + 1] = w.id
      fields[#fields + 1] = w.id
      fields[#fields + 1] = CONVERTS .. w.id
      if not w.stale then
        for i = 1, #w.paths do
          bump_target(c, b, gcode(w.tag, w.info.first + i - 1), w.paths[i], "wh", "wb", -1)
          paths[#paths + 1] = w.paths[i]
        end
      end
    end
    flush(c, b)
    chunked("ZREM", c.wq, ids)
    chunked("ZREM", c.wexp, ids)
    chunked("HDEL", c.wrec, fields)
    count_down(c, ws, true)
    wake(c, paths)
  end

  -- Appends `item` to `list` unless an element with its id is there already.
  local function add_once(list, item)
    for k = 1, #list do
      if list[k].id == item.id then return end
    end
    list[#list + 1] = item
  end

  -- Removes the given expired (or dropped) locks, stale lock ids and ended
  -- waiters, if there are any; a refused write is returned (nothing removed).
  local function remove_ended(c, locks, stale, waiters)
    if #locks + #stale + #waiters == 0 then return nil end
    local bad = writable(c, false, true)
    if bad then return bad end
    remove_locks(c, locks, stale)
    remove_waiters(c, waiters)
    return nil
  end

  -- The places in line whose reservation ended (at most REAP_LIMIT), and
  -- whether the line is empty. One call when nothing ended.
  local function ended_waiters(c)
    local first = rcall("ZRANGE", c.wexp, "0", "0", "WITHSCORES")
    if not first[1] then return {}, true end
    if tonum(first[2]) > c.now then return {}, false end
    local ids = rcall("ZRANGEBYSCORE", c.wexp, "-inf", c.now_s, "LIMIT", "0", REAP_LIMIT_S)
    return load_waiters(c, ids), false
  end

  -- The lock each waiting conversion of `ids` converts (CONVERTS fields;
  -- "": an acquire), by place id.
  local function conversions_of(c, ids)
    local converts = {}
    if #ids > 0 then
      local fields = {}
      for i = 1, #ids do fields[i] = CONVERTS .. ids[i] end
      local v = chunked("HMGET", c.wrec, fields)
      for i = 1, #ids do converts[ids[i]] = v[i] or "" end
    end
    return converts
  end

  Removal = { remove_locks = remove_locks, expired_locks = expired_locks, load_waiters = load_waiters,
            remove_waiters = remove_waiters, add_once = add_once, remove_ended = remove_ended,
            ended_waiters = ended_waiters, CONVERTS = CONVERTS, conversions_of = conversions_of }
end
