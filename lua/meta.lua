--[[
  lua/meta.lua: the namespace's meta key: its layout, its fence, and the tags
  of the matrices in use; global codes and which of them refuse which.

  Uses:      Values (int, num, per_key), Call (begin); PL_LAYOUT, PL_EXPIRING_LAYOUT, PL_EXPIRY_MARGIN,
             PL_FINGERPRINT, PL_MATRIX_NAME, PL_MATRIX_VERSION, PL_MAX_TAGS, PL_CODES_PER_TAG,
             PL_BLOCKSET
  Provides:  Meta.TAG_N, Meta.TAGS_FULL, Meta.check_meta, Meta.begin_with,
             Meta.own_tag, Meta.tag_available, Meta.tag_count, Meta.count_down,
             Meta.expire, Meta.evicting_policy, Meta.persist, Meta.drained, Meta.gcode, Meta.blocks
]]
local Meta
do
  local int, num, per_key = Values.int, Values.num, Values.per_key
  local begin = Call.begin

  -- Meta: the namespace's layout version, its fence, and the matrices in use.
  -- Every matrix with a lock or a place in line in the namespace has a small
  -- tag number (1..PL_MAX_TAGS): field t:FP = tag, m:TAG = "FP\0name\0version",
  -- l:TAG / w:TAG = its locks / places in line. Codes in idx and ent are
  -- global: tag * PL_CODES_PER_TAG + the matrix's own code, so a request reads which
  -- matrix every held target belongs to from the counts it reads anyway.
  local TAG_MAX = PL_MAX_TAGS
  -- Field names and texts, made once when the library loads (number-to-text
  -- conversion is among the costliest steps of a call).
  local T_FIELD = "t:" .. PL_FINGERPRINT
  local M_VALUE = PL_FINGERPRINT .. "\0" .. PL_MATRIX_NAME .. "\0" .. PL_MATRIX_VERSION
  local TAG_S, TAG_N, L_FIELD, W_FIELD, M_FIELD = {}, {}, {}, {}, {}
  for t = 1, TAG_MAX do
    TAG_S[t] = "" .. t
    TAG_N[TAG_S[t]] = t
    L_FIELD[t], W_FIELD[t], M_FIELD[t] = "l:" .. t, "w:" .. t, "m:" .. t
  end
  -- The tag this library had in the namespace it saw last: check_meta reads
  -- that tag's counts in its one HMGET, so that a call which changes them
  -- (every grant and release) usually need not read them again.
  local TAG_GUESS = 1

  -- The server's maxmemory-policy, which decides whether a key with a TTL
  -- may be evicted (docs/operations.md#eviction-and-memory-limits): only
  -- under noeviction may live data carry one. Read from INFO memory (which
  -- managed services answer where CONFIG is disabled) at most once a second
  -- per library: the policy is the server's, the same for every namespace.
  -- "unknown" (INFO refused by the ACL, renamed, or unreadable) counts as
  -- one that evicts.
  local POLICY, POLICY_AT = "unknown", nil
  local function eviction_policy(c)
    local at = POLICY_AT
    if at and c.now >= at and c.now < at + 1000 then return POLICY end
    local p = "unknown"
    local known, allowed = pcall(redis.acl_check_cmd, "INFO", "memory") -- (raises where INFO is renamed)
    if known and allowed then
      local s = rpcall("INFO", "memory")
      if type(s) == "string" then p = smatch(s, "maxmemory_policy:([%w-]+)") or p end
    end
    POLICY, POLICY_AT = p, c.now
    return p
  end
  -- May this call give live data a TTL? Not where Redis would evict it.
  local function may_expire(c) return eviction_policy(c) == "noeviction" end
  -- An error reply when the policy may evict any key (allkeys-*), lock data
  -- included: nothing may be granted or queued there. Else nil.
  local function evicting_policy(c)
    local p = eviction_policy(c)
    if ssub(p, 1, 8) ~= "allkeys-" then return nil end
    return redis.error_reply("PATHLOCK maxmemory-policy is " .. p .. ", which lets Redis evict lock data under "
                             .. "memory pressure; set maxmemory-policy noeviction (or a volatile-* policy); "
                             .. "nothing was changed")
  end

  -- A namespace of layout 3 (pathlock 0.1) that holds no lock and no place in
  -- line has nothing this layout reads differently: meta keeps only its
  -- layout and fence (a matrix's tag fields go with its last lock). It is
  -- served as layout 4; the first grant or place rewrites meta.layout (own_tag).
  -- So a drained namespace moves to 0.2 during a rolling upgrade, and a
  -- namespace is never served by both layouts at once.
  local function adoptable(c, layout)
    return layout == "3" and rcall("EXISTS", c.locks, c.wq) == 0
  end

  -- Reads the fence (c.fence_s, text), this library's tag (c.tag) and, when
  -- the guess was right, its counts (c.tag_l, c.tag_w); whether the keys
  -- expire (c.expiring: layout PL_EXPIRING_LAYOUT) and when (c.x); the
  -- namespace's own limits (c.lim_s); and meta's field `extra`, when
  -- given, as c.extra (acquire reads its owner's count so). Returns a
  -- reply when the namespace belongs to another data layout. (Every value
  -- read costs: what only some calls need is read by those.)
  local function check_meta(c, extra)
    local g = TAG_GUESS
    local m
    if extra then
      m = rcall("HMGET", c.meta, "layout", "fence", T_FIELD, L_FIELD[g], W_FIELD[g], "x", "lim", extra)
    else
      m = rcall("HMGET", c.meta, "layout", "fence", T_FIELD, L_FIELD[g], W_FIELD[g], "x", "lim")
    end
    -- Layout 1 (pathlock <= 0.1) had no layout field, but a fingerprint.
    local layout = m[1] or (rcall("HGET", c.meta, "fingerprint") and "1")
    c.expiring = layout == PL_EXPIRING_LAYOUT
    if layout and not c.expiring and layout ~= PL_LAYOUT and not adoptable(c, layout) then
      return { "layout", layout, PL_LAYOUT }
    end
    c.x = m[6] and tonum(m[6])
    c.lim_s = m[7] -- the namespace's own limits (lua/limits.lua), or nil
    c.extra = extra and m[8] -- the field `extra` the caller asked for in the same read, or nil
    -- Will this call take TTLs off, if it adds data? An expiring namespace
    -- on a server that may evict keys with one, or a drained one whose meta
    -- has one (drained).
    if c.expiring then
      c.persist = not may_expire(c)
    else
      c.persist = c.x ~= nil
    end
    c.fence_s = m[2] or "0"
    c.tag = m[3] and (TAG_N[m[3]] or tonum(m[3])) or nil
    if c.tag == g then
      c.tag_l, c.tag_w = int(m[4] or "0") or 0, int(m[5] or "0") or 0
    elseif c.tag and TAG_S[c.tag] then
      TAG_GUESS = c.tag
    end
    return nil
  end

  -- The opening of a function that takes exactly `count` arguments: the call
  -- context (begin), the argument count (`usage` says what it takes) and the
  -- namespace's metadata. Returns the context, or nil and the reply.
  local function begin_with(keys, argv, count, usage)
    local c, bad = begin(keys)
    if not c then return nil, bad end
    if #argv ~= count then return nil, { "invalid", usage } end
    bad = check_meta(c)
    if bad then return nil, bad end
    return c
  end

  -- The lowest free tag, or nil when all are taken.
  local function free_tag(c)
    if c.tag1_free or not rcall("HGET", c.meta, "m:1") then return 1 end
    local v = rcall("HMGET", c.meta, tunpack(M_FIELD))
    for t = 1, TAG_MAX do
      if not v[t] then return t end
    end
    return nil
  end
  -- This library's tag, assigned (the lowest free one) when it has none: the
  -- first write of a call that adds a lock or a place. nil when every tag is
  -- taken (the caller then refuses with an error before writing anything).
  local function own_tag(c)
    if c.tag then return c.tag end
    local t = c.next_tag or free_tag(c)
    if not t then return nil end
    -- A new or drained namespace becomes one whose keys expire, if this
    -- caller may set their expiry and no key with a TTL can be evicted
    -- (docs/lua-protocol.md#expiry). Else its meta, which may carry the TTL
    -- it got when it drained (drained), keeps its data without one.
    if not c.expiring and rcall("EXISTS", c.locks, c.wq) == 0 then
      -- (Not a namespace with limits of its own: an operator's setting,
      -- which its keys' expiry would drop; lua/limits.lua.)
      if not c.lim_s and may_expire(c) and redis.acl_check_cmd("PEXPIREAT", c.meta, "1") then
        c.expiring, c.persist = true, false
      elseif c.x then
        rcall("PERSIST", c.meta)
        rcall("HDEL", c.meta, "x")
        c.x, c.persist = nil, false
      end
    end
    rcall("HSET", c.meta, "layout", c.expiring and PL_EXPIRING_LAYOUT or PL_LAYOUT, T_FIELD, TAG_S[t], M_FIELD[t],
          M_VALUE, L_FIELD[t], "0", W_FIELD[t], "0")
    c.tag, c.tag_l, c.tag_w, c.next_tag, TAG_GUESS = t, 0, 0, nil, t
    if t == 1 then c.tag1_free = false end
    return t
  end
  -- Is any tag free (or is this library's assigned)? Checked before writing.
  -- (The tag found is kept for own_tag, which follows without a tag change
  -- between them.)
  local function tag_available(c)
    if c.tag then return true end
    c.next_tag = free_tag(c)
    return c.next_tag ~= nil
  end
  local TAGS_FULL = "PATHLOCK " .. TAG_MAX .. " matrices are in use in this namespace; the request was not granted"

  -- After the last lock or place of a tag went: when it was the
  -- namespace's last (only meta is left, with the fence), a namespace whose
  -- keys do not expire lets meta expire PL_EXPIRY_MARGIN from now, which is
  -- after its fence's time: a fence made without meta (the server clock)
  -- still exceeds it. Its next lock or place takes the TTL back (own_tag).
  -- Skipped, never refused, for a caller without PEXPIREAT.
  local function drained(c)
    if c.expiring or c.lim_s or rcall("EXISTS", c.locks, c.wq) ~= 0 then return end
    if not redis.acl_check_cmd("PEXPIREAT", c.meta, "1") then return end
    local xs = sformat("%.0f", mfloor((c.now + PL_EXPIRY_MARGIN + 999) / 1000) * 1000)
    rcall("HSET", c.meta, "x", xs)
    rcall("PEXPIREAT", c.meta, xs)
    c.x = tonum(xs)
  end
  -- Adds dl locks and dw places to a tag's counts; a tag whose locks and
  -- places both reach zero leaves meta (its matrix is no longer in use here).
  -- Counts are lowered only after the data is gone. `f16`, when given, is
  -- written as the namespace's fence in the same HSET, and with it field
  -- `xf` = `xv` when given (a grant's owner count: dl > 0).
  local function tag_count(c, tag, dl, dw, f16, xf, xv)
    local ts = TAG_S[tag] or num(tag)
    local l, w, fp
    if tag == c.tag and c.tag_l then
      l, w, fp = c.tag_l + dl, c.tag_w + dw, PL_FINGERPRINT
    else
      local v = rcall("HMGET", c.meta, "l:" .. ts, "w:" .. ts, "m:" .. ts)
      l, w = (tonum(v[1] or "0") or 0) + dl, (tonum(v[2] or "0") or 0) + dw
      fp = v[3] and smatch(v[3], "^[^%z]*")
    end
    if l <= 0 and w <= 0 then
      if fp then rcall("HDEL", c.meta, "t:" .. fp, "m:" .. ts, "l:" .. ts, "w:" .. ts) end
      if c.tag == tag then c.tag, c.tag_l, c.tag_w = nil, nil, nil end
      if tag == 1 then c.tag1_free = true end
      c.next_tag = nil
      if f16 then rcall("HSET", c.meta, "fence", f16) end
      drained(c)
      return
    end
    l, w = mmax(l, 0), mmax(w, 0)
    if xf then
      rcall("HSET", c.meta, "fence", f16, "l:" .. ts, num(l), "w:" .. ts, num(w), xf, xv)
    elseif f16 then
      rcall("HSET", c.meta, "fence", f16, "l:" .. ts, num(l), "w:" .. ts, num(w))
    else
      rcall("HSET", c.meta, "l:" .. ts, num(l), "w:" .. ts, num(w))
    end
    if tag == c.tag then c.tag_l, c.tag_w = l, w end
  end
  -- One count less per item of `items` (locks, or places in line when
  -- `places`) that has a tag (a stale place has none): one tag_count per tag.
  local function tag_down(tag, d, c, places)
    if places then tag_count(c, tag, 0, -d) else tag_count(c, tag, -d, 0) end
  end
  local function count_down(c, items, places) per_key(items, "tag", tag_down, c, places) end

  -- Expiry (layout PL_EXPIRING_LAYOUT; docs/lua-protocol.md#expiry): every
  -- key of the namespace expires at meta.x, the latest end (of a lease, of a
  -- reservation, or the fence's time) any call set, plus PL_EXPIRY_MARGIN,
  -- rounded up to a whole second (so most calls of one second find it set).
  -- A call that sets a later end `end_ms` moves every key's expiry; any
  -- other gives the keys it may have created (`new`: fields of c) the
  -- current one. Nothing for a namespace of layout PL_LAYOUT.
  local ALL_KEYS = { "meta", "idx", "locks", "exp", "ent", "wq", "wexp", "wrec" }
  -- An expiring namespace on a server whose policy may now evict keys with
  -- a TTL (it was changed since the namespace expired its keys) keeps its
  -- data without one from this call on: layout PL_LAYOUT.
  local function persist(c)
    for i = 1, #ALL_KEYS do rcall("PERSIST", c[ALL_KEYS[i]]) end
    rcall("HSET", c.meta, "layout", PL_LAYOUT)
    rcall("HDEL", c.meta, "x")
    c.expiring, c.x = false, nil
  end
  local function expire(c, end_ms, new)
    if not c.expiring then return end
    if c.persist then return persist(c) end
    local t = mfloor((end_ms + PL_EXPIRY_MARGIN + 999) / 1000) * 1000
    if c.x and t <= c.x then
      if new then
        local xs = sformat("%.0f", c.x)
        for i = 1, #new do rcall("PEXPIREAT", c[new[i]], xs) end
      end
      return
    end
    local ts = sformat("%.0f", t)
    rcall("HSET", c.meta, "x", ts)
    for i = 1, #ALL_KEYS do rcall("PEXPIREAT", c[ALL_KEYS[i]], ts) end
    c.x = t
  end

  -- Global codes: the tag and the matrix's own code (PL_CODES_PER_TAG is
  -- more than any matrix has; every global code has PL_CODE_DIGITS digits).
  local CODES = PL_CODES_PER_TAG
  local function gcode(tag, code) return tag * CODES + code end
  local function tag_of(g) return mfloor(g / CODES) end

  -- Does held global code `held` refuse this library's code `code` in
  -- relation `rel`? Its own rules for its own matrix; any overlap for another.
  local function blocks(c, rel, code, held)
    local own = c.tag and tag_of(held) == c.tag
    if not own then return true end
    return PL_BLOCKSET[rel][code][held - c.tag * CODES] or false
  end

  Meta = { TAG_N = TAG_N, TAGS_FULL = TAGS_FULL, check_meta = check_meta, begin_with = begin_with, own_tag = own_tag,
         tag_available = tag_available, tag_count = tag_count, count_down = count_down, expire = expire,
         evicting_policy = evicting_policy, persist = persist, drained = drained,
         gcode = gcode, blocks = blocks }
end
