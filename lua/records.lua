--[[
  lua/records.lua: lock and waiter records (self-describing, so any library
  can read another matrix's), idempotency key fields, wake-ups.

  Uses:      Values (cache, keep, num, int), Meta (TAG_N, gcode); PL_OPS
  Provides:  Records.pack_lock, Records.unpack_lock, Records.pack_waiter,
             Records.unpack_waiter, Records.head_of, Records.key_field,
             Records.remaining, Records.wake, Records.read_back
]]
local Records
do
  local cache, keep, num, int = Values.cache, Values.keep, Values.num, Values.int
  local TAG_N, gcode = Meta.TAG_N, Meta.gcode

  -- Records are self-describing, so that a library of any matrix can report,
  -- reap and remove the locks and places of another: they start with the
  -- matrix's tag, the operation's first code in its matrix and its role names
  -- (comma-separated): tag \0 first \0 roles \0 ...
  -- Kept per head (a few per matrix and operation; shared, never changed by
  -- callers), so that loading a record parses its roles once.
  local INFO = cache(512)
  local function info_of(head, first, roles)
    local t = INFO.t[head]
    if t then return t end
    t = { first = tonum(first), roles = {} }
    for r in sgmatch(roles, "[^,]+") do t.roles[#t.roles + 1] = r end
    return keep(INFO, head, t)
  end
  -- The paths at the end of a record: path_1 \0 ... path_n, exactly n of them.
  local function paths_of(tail, n)
    if n == 1 then
      if tail == "" or sfind(tail, "\0", 1, true) then return nil end
      return { tail }
    end
    local paths = {}
    for p in sgmatch(tail, "[^%z]+") do paths[#paths + 1] = p end
    if #paths ~= n then return nil end
    return paths
  end
  -- The description of this library's operation `op` in a record.
  local HEADS = {} -- global code of the operation's first role -> head
  local function head_of(tag, op)
    local info = PL_OPS[op]
    local g = gcode(tag, info.first)
    local head = HEADS[g]
    if not head then
      head = num(tag) .. "\0" .. num(info.first) .. "\0" .. tconcat(info.roles, ",") .. "\0"
      HEADS[g] = head
    end
    return head
  end

  -- A lock record: tag \0 first \0 roles \0 op \0 fence \0 holds \0 ttl \0 exp
  -- \0 #token \0 #owner \0 #key \0 token owner key path_1 \0 ... path_n
  -- (owners may hold any byte, paths none of \0; the fence has PL_FENCE_DIGITS digits; key
  -- is the idempotency key, often empty). Numbers are kept as text too (ttl_s,
  -- exp_s, f16) so that writing a record back converts only what changed;
  -- `head` is the record's first three fields as stored.
  local function pack_lock(l)
    return l.head .. l.op .. "\0" .. l.f16 .. "\0" .. num(l.holds) .. "\0" .. l.ttl_s .. "\0" .. l.exp_s .. "\0"
           .. num(#l.token) .. "\0" .. num(#l.owner) .. "\0" .. num(#l.key) .. "\0" .. l.token .. l.owner .. l.key
           .. tconcat(l.paths, "\0")
  end
  -- Records read back: the lock a record describes, kept per record text
  -- (a pure function of the text) when a grant wrote it (read_back), so that
  -- the release of a lock just granted does not parse it again. Kept
  -- entries are never changed: every read gets a copy of its own, with the
  -- id it asked for.
  local WRITTEN = cache(256)
  local function copy_lock(id, t)
    return { id = id, head = t.head, tag = t.tag, op = t.op, info = t.info, f16 = t.f16, holds = t.holds,
             ttl_s = t.ttl_s, exp = t.exp, exp_s = t.exp_s, token = t.token, owner = t.owner, key = t.key,
             paths = t.paths }
  end
  -- Lock l (of this library's operation l.op, tag l.tag) was written as
  -- record `rec`; l is kept as it is and must not change after this.
  local function read_back(l, rec)
    local op = PL_OPS[l.op]
    l.info = INFO.t[l.head] or info_of(l.head, op.first, tconcat(op.roles, ","))
    l.exp = tonum(l.exp_s)
    keep(WRITTEN, rec, l)
  end
  local function unpack_lock(id, rec)
    local kept_lock = WRITTEN.t[rec]
    if kept_lock then return copy_lock(id, kept_lock) end
    local head, tag, first, roles, op, fence, holds, ttl, exp, tl, ol, kl, at =
      smatch(rec, "^((%d+)%z(%d+)%z([%w_,]+)%z)([%w_]+)%z(%d+)%z(%d+)%z(%d+)%z(%d+)%z(%d+)%z(%d+)%z(%d+)%z()")
    if not head then return nil end
    local info = info_of(head, first, roles)
    tl, ol, kl = int(tl), int(ol), int(kl)
    local paths = paths_of(ssub(rec, at + tl + ol + kl), #info.roles)
    if not paths then return nil end
    -- (The fence and the ttl stay text: f16, ttl_s; few callers need them as numbers.)
    return { id = id, head = head, tag = TAG_N[tag] or tonum(tag), op = op, info = info, f16 = fence,
             holds = int(holds), ttl_s = ttl, exp = tonum(exp), exp_s = exp,
             token = ssub(rec, at, at + tl - 1), owner = ssub(rec, at + tl, at + tl + ol - 1),
             key = ssub(rec, at + tl + ol, at + tl + ol + kl - 1), paths = paths }
  end

  -- A place in line: tag \0 first \0 roles \0 op \0 since \0 #owner \0 owner
  -- path_1 \0 ... path_n (since: when it took its place, ms, server clock).
  -- Its place (seq) is its score in wq, the end of its reservation its score
  -- in wexp.
  local function pack_waiter(w)
    return w.head .. w.op .. "\0" .. w.since .. "\0" .. #w.owner .. "\0" .. w.owner .. tconcat(w.paths, "\0")
  end
  local function unpack_waiter(id, rec)
    local head, tag, first, roles, op, since, ol, at =
      smatch(rec, "^((%d+)%z(%d+)%z([%w_,]+)%z)([%w_]+)%z(%d+)%z(%d+)%z()")
    if not head then return nil end
    local info = info_of(head, first, roles)
    ol = int(ol)
    local paths = paths_of(ssub(rec, at + ol), #info.roles)
    if not paths then return nil end
    return { id = id, head = head, tag = TAG_N[tag] or tonum(tag), op = op, info = info, since = tonum(since),
             owner = ssub(rec, at, at + ol - 1), paths = paths }
  end

  -- The field of the locks hash that maps an idempotency key to its lock's id
  -- ("k:" .. key). Lock ids never hold ':', so these fields never collide
  -- with the ids.
  local function key_field(key) return "k:" .. key end

  local function remaining(exp, now) return mmax(0, exp - now) end

  -- Best effort: a user without channel rights loses quick wake-ups only.
  local function wake(c, paths)
    if #paths == 1 then
      rpcall("SPUBLISH", c.wake, paths[1])
    elseif #paths > 1 then
      rpcall("SPUBLISH", c.wake, tconcat(paths, "\n"))
    end
  end

  Records = { pack_lock = pack_lock, unpack_lock = unpack_lock, pack_waiter = pack_waiter, unpack_waiter = unpack_waiter,
            head_of = head_of, read_back = read_back, key_field = key_field, remaining = remaining,
            wake = wake }
end
