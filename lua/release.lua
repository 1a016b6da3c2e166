--[[
  lua/release.lua: the functions release (drops one hold of a lock; the lock
  goes when no hold is left) and force_release (drops a lock whatever its
  holds, without its token). Keys, arguments and replies:
  docs/lua-protocol.md#release. Cost: O(1) calls, whatever the depth: the
  record, one HMGET of the index, and one write per key; reaping rides in the
  same writes.

  Uses:      Values (valid_id), Call (begin), Commands (writable), Meta (check_meta),
             Records (pack_lock, unpack_lock), Removal (expired_locks, remove_locks,
             remove_ended, add_once)
  Provides:  Release.release, Release.force_release
]]
local Release
do
  local valid_id = Values.valid_id
  local writable = Commands.writable
  local begin = Call.begin
  local check_meta = Meta.check_meta
  local pack_lock, unpack_lock = Records.pack_lock, Records.unpack_lock
  local expired_locks, remove_locks = Removal.expired_locks, Removal.remove_locks
  local remove_ended, add_once = Removal.remove_ended, Removal.add_once

  -- The opening of release and force_release (`count` arguments, the first
  -- the lock's id): the call context, the expired locks to reap, and the lock
  -- as stored, live or expired (or nil). Returns nil and the reply when the
  -- call cannot go on.
  -- The record is read before meta, so that meta's one read also brings
  -- its owner's count (c.extra, which Limits.count_owners then lowers
  -- without reading it again); it is used only once meta's layout is known
  -- to be this library's.
  local function open_release(keys, argv, count, usage)
    local c, bad = begin(keys)
    if not c then return nil, bad end
    if #argv ~= count then return nil, { "invalid", usage } end
    local id = argv[1]
    local rec = valid_id(id) and rcall("HGET", c.locks, id)
    local l = rec and unpack_lock(id, rec) or nil
    c.owner_field = l and "o:" .. l.owner
    bad = check_meta(c, c.owner_field)
    if bad then return nil, bad end
    local reaped, stale = expired_locks(c)
    return c, nil, reaped, stale, l
  end

  -- Removes `l` (when given) together with the expired locks to reap.
  local function drop_with_reaped(c, l, reaped, stale)
    if l then add_once(reaped, l) end
    return remove_ended(c, reaped, stale, {})
  end

  local function pl_release(keys, argv)
    local c, bad, reaped, stale, l = open_release(keys, argv, 2, "release takes id, token")
    if not c then return bad end
    local live = l and l.exp > c.now
    if live and l.token == argv[2] and l.holds > 1 then
      bad = writable(c, false, #reaped + #stale > 0)
      if bad then return bad end
      l.holds = l.holds - 1
      rcall("HSET", c.locks, l.id, pack_lock(l))
      remove_locks(c, reaped, stale)
      return { "released", l.holds }
    end
    local drop = l and (not live or l.token == argv[2]) and l or nil
    bad = drop_with_reaped(c, drop, reaped, stale)
    if bad then return bad end
    if live and drop then return { "released", 0 } end
    return { "missing" }
  end

  local function pl_force_release(keys, argv)
    local c, bad, reaped, stale, l = open_release(keys, argv, 1, "force_release takes id")
    if not c then return bad end
    bad = drop_with_reaped(c, l, reaped, stale)
    if bad then return bad end
    if l and l.exp > c.now then return { "released", 0 } end
    return { "missing" }
  end

  Release = { release = pl_release, force_release = pl_force_release }
end
