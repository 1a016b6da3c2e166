--[[
  lua/index.lua: the path index (key idx): counts per global code, read and
  written in batches of one HMGET and one HSET (and one HDEL).

  Uses:      Values (num, int, cache, keep), Commands (chunked), Meta (blocks), Paths (path_info, kind_fields)
  Provides:  Index.EMPTY, Index.lowest, Index.check_set, Index.checks_of, Index.batch, Index.want,
             Index.want_target, Index.fetch, Index.val, Index.decode, Index.bump_target, Index.flush,
             Index.text
]]
local Index
do
  local num, int, cache, keep = Values.num, Values.int, Values.cache, Values.keep
  local chunked = Commands.chunked
  local blocks = Meta.blocks
  local path_info, kind_fields = Paths.path_info, Paths.kind_fields

  local EMPTY = {} -- the counts of an absent field (shared, never changed)

  local function decode(v)
    local t = {}
    if v then
      local code, n = smatch(v, "^(%d+):(%d+)$") -- the usual case: one code
      if code then
        t[int(code)] = int(n)
      else
        for cd, k in sgmatch(v, "(%d+):(%d+)") do t[int(cd)] = int(k) end
      end
    end
    return t
  end
  -- (Counts are positive: bump() drops a code whose count reaches zero.)
  local function encode(t)
    local first, codes
    for code in pairs(t) do
      if first == nil then
        first = code
      else
        codes = codes or { first }
        codes[#codes + 1] = code
      end
    end
    if first == nil then return nil end
    if not codes then return num(first) .. ":" .. num(t[first]) end
    tsort(codes)
    for i = 1, #codes do codes[i] = num(codes[i]) .. ":" .. num(t[codes[i]]) end
    return tconcat(codes, ",")
  end
  -- The lowest global code with a positive count in `t` that refuses `code`
  -- in relation `rel` (see blocks()), or nil.
  local function lowest(c, t, rel, code)
    if t == EMPTY then return nil end
    local best
    for g, n in pairs(t) do
      if n > 0 and (not best or g < best) and blocks(c, rel, code, g) then best = g end
    end
    return best
  end

  -- A batch of idx fields: read with one HMGET, changed in memory, written with
  -- one HSET (and one HDEL for fields whose counts all reached zero).
  -- Per field, by position: raw = the text as read or last written (false:
  -- absent); cur = the text to write (false: delete; nil: unchanged); vals =
  -- decoded counts being changed. The usual changes (a field gets its first
  -- count, loses its only one, or one code's count moves) are made on the
  -- text; other fields are decoded. A batch made for one target starts from
  -- that target's cached field set (shared, copied only if more is wanted).
  local ONE = {} -- global code -> "code:1"
  local function one(code)
    local s = ONE[code]
    if not s then
      s = num(code) .. ":1"
      ONE[code] = s
    end
    return s
  end
  -- A field of one code, "code:count", as one number, code * WIDE + count
  -- (exact: codes and counts are far below 2^21 and 2^32), kept per text
  -- (false: a text of several codes); and the text of such a number, kept.
  -- The counts of a folder move up and down around the same values, so the
  -- usual change of a count (bump) costs two lookups: no match, no string.
  local WIDE = 4294967296
  local SINGLE, TEXT = cache(4096), cache(4096)
  local function single(text)
    local cs, k = smatch(text, "^(%d+):(%d+)$")
    local v = cs and #k <= 9 and int(cs) * WIDE + int(k) or false
    return keep(SINGLE, text, v)
  end
  local function text_of(v, code, k) return keep(TEXT, v, num(code) .. ":" .. num(k)) end
  -- A set of fields: the list, and each field's position in it (pos).
  -- The set of a path with a known parent extends the parent's: its list is
  -- the parent's copied at its final size with its own fields at the end,
  -- and its pos holds only its own fields, reading the others from the
  -- parent's through a metatable. A set that becomes a parent has its pos
  -- made whole once (flat), so a lookup takes at most one step up.
  local function positions(fields)
    local pos = {}
    for i = 1, #fields do pos[fields[i]] = i end
    return pos
  end
  local function flat(set)
    if set.mt then return set.mt end
    if getmeta(set.pos) then set.pos = positions(set.fields) end
    set.mt = { __index = set.pos }
    return set.mt
  end
  local function field_set(fields) return { fields = fields, pos = positions(fields), mt = nil } end
  -- The set of a path with a parent: `fields`, whose last ones (from `own`
  -- on) are the path's own, the others' positions read through `up`.
  local function extended(fields, own, up)
    local pos = {}
    for i = own, #fields do pos[fields[i]] = i end
    return { fields = fields, pos = setmeta(pos, flat(up)), mt = nil }
  end
  -- What a check of `path` reads: h and b of every node.
  local function set_of_checks(p)
    local set = p.check
    if set then return set end
    local n = p.n
    if p.parent then
      local m = 2 * n
      local up = set_of_checks(p.parent)
      local fields = { tunpack(up.fields, 1, m) }
      fields[m - 1], fields[m] = "h" .. p.path, "b" .. p.path
      set = extended(fields, m - 1, up)
    else
      local hf, bf = kind_fields(p, "h"), kind_fields(p, "b")
      local fields = {}
      for j = 1, n do fields[2 * j - 1], fields[2 * j] = hf[j], bf[j] end
      set = field_set(fields)
    end
    p.check = set
    return set
  end
  local function check_set(path) return set_of_checks(path_info(path)) end
  local checks_of = set_of_checks -- (the same, from a path's entry)
  -- The set of kind `below` of every node of entry p (the ancestors' part of
  -- its children's target sets).
  local function below_set(p, below)
    local key = below .. "#"
    local set = p[key]
    if not set then
      set = field_set(kind_fields(p, below))
      p[key] = set
    end
    return set
  end
  -- What adding or removing a target at `path` changes: below..ANCESTOR for each
  -- strict ancestor, here..PATH (here: h or wh; below: b or wb).
  local function target_set(path, here, below)
    local p = path_info(path)
    local key = here .. "+"
    local set = p[key]
    if not set then
      local n = p.n
      if p.parent then
        local fields = { tunpack(kind_fields(p.parent, below), 1, n) }
        fields[n] = here .. p.path
        set = extended(fields, n, below_set(p.parent, below))
      else
        local hf, bf = kind_fields(p, here), kind_fields(p, below)
        local fields = {}
        for j = 1, n - 1 do fields[j] = bf[j] end
        fields[n] = hf[n]
        set = field_set(fields)
      end
      p[key] = set
    end
    return set
  end
  -- (The nils size the arrays once: growing a table costs more than filling it.)
  local UNREAD = {} -- the raw texts of a batch before its first fetch (shared, never written)
  local function batch(set)
    return { fields = set and set.fields or {}, pos = set and set.pos or {}, shared = set ~= nil, fetched = 0,
             raw = UNREAD, cur = { nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil }, vals = {} }
  end
  -- The position of field f in the batch, added when new.
  local function want(b, f)
    local i = b.pos[f]
    if i then return i end
    if b.shared then -- a cached set: copy its list before adding, read its positions through
      b.fields, b.pos, b.shared = { tunpack(b.fields) }, setmeta({}, { __index = b.pos }), false
    end
    i = #b.fields + 1
    b.fields[i], b.pos[f] = f, i
    return i
  end
  -- The fields of one target (target_set).
  local function want_target(c, b, path, here, below)
    local set = target_set(path, here, below)
    if #b.fields == 0 then
      b.fields, b.pos, b.shared = set.fields, set.pos, true
      return
    end
    for k = 1, #set.fields do want(b, set.fields[k]) end
  end
  -- Reads the fields wanted since the last fetch (one HMGET).
  local function fetch(c, b)
    local fields, from, to = b.fields, b.fetched + 1, #b.fields
    if from > to then return end
    if from == 1 then
      b.raw = chunked("HMGET", c.idx, fields) -- (absent fields read as false)
    else
      local v, raw = chunked("HMGET", c.idx, { tunpack(fields, from, to) }), b.raw
      for i = from, to do raw[i] = v[i - from + 1] or false end
    end
    b.fetched = to
  end
  -- The text of the field at position i now (false: absent).
  local function text(b, i)
    local t = b.vals[i]
    if t then return encode(t) or false end
    t = b.cur[i]
    if t == nil then return b.raw[i] or false end
    return t
  end
  -- The counts of fetched field f (read-only; EMPTY when absent).
  local function val(b, f)
    local i = b.pos[f]
    if not i then return EMPTY end
    local t = b.vals[i]
    if t then return t end
    local raw = text(b, i)
    if not raw then return EMPTY end
    return decode(raw)
  end
  -- A field of several codes (or of another code alone): its text after the
  -- count of `code` moves by d (false: the field goes), kept per text and
  -- move. A folder under several operations sees its counts move up and down
  -- around the same values too, so the usual move costs two lookups instead
  -- of a decode into a table and a sorted encode.
  local MOVES = cache(4096)
  local function moved_other(cur, code, d)
    local e = MOVES.t[cur]
    local key = d == 1 and code or -code
    local s = e and e[key]
    if s ~= nil then return s end
    local t = decode(cur)
    local n = (t[code] or 0) + d
    t[code] = n > 0 and n or nil
    s = encode(t) or false
    if not e then e = keep(MOVES, cur, {}) end
    e[key] = s
    return s
  end
  -- The new text of a field whose text is `cur` (false: absent) when the
  -- count of `code` moves by d (1 or -1; false: the field goes). nil only
  -- for a count taken from an absent field, which decodes it.
  local function moved(cur, code, d, one_s)
    if not cur then
      if d == 1 then return one_s end
      return nil
    end
    if d == -1 and cur == one_s then return false end
    local v = SINGLE.t[cur]
    if v == nil then v = single(cur) end
    local k = v and v - code * WIDE
    if k and k >= 0 and k < WIDE then
      k, v = k + d, v + d
      return k > 0 and (TEXT.t[v] or text_of(v, code, k))
    end
    return moved_other(cur, code, d)
  end
  -- One count of `code` more (d = 1) or less (d = -1) in every field of a
  -- target at `path` (target_set).
  local function bump_target(c, b, code, path, here, below, d)
    local fields = target_set(path, here, below).fields
    local one_s = ONE[code] or one(code)
    for k = 1, #fields do
      local f = fields[k]
      local i = b.pos[f] or want(b, f)
      local t = b.vals[i]
      if not t then
        local cur = b.cur[i]
        if cur == nil then cur = b.raw[i] or false end
        local s = moved(cur, code, d, one_s)
        if s ~= nil then
          b.cur[i] = s
        else
          t = decode(cur or nil)
          b.vals[i] = t
        end
      end
      if t then
        local n = (t[code] or 0) + d
        t[code] = n > 0 and n or nil
      end
    end
  end
  local function flush(c, b)
    local set, del = { nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil }, nil
    local raw, cur, vals = b.raw, b.cur, b.vals
    if raw == UNREAD then -- (nothing was fetched: every field is new)
      raw = {}
      b.raw = raw
    end
    for i = 1, #b.fields do
      local v = vals[i]
      if v then
        v = encode(v) or false
      else
        v = cur[i]
      end
      if v ~= nil then
        if v ~= (raw[i] or false) then
          if v then
            set[#set + 1] = b.fields[i]
            set[#set + 1] = v
          else
            del = del or {}
            del[#del + 1] = b.fields[i]
          end
        end
        raw[i], cur[i], vals[i] = v or false, nil, nil
      end
    end
    if #set > 0 then chunked("HSET", c.idx, set, 2) end
    if del then chunked("HDEL", c.idx, del) end
  end

  Index = { EMPTY = EMPTY, lowest = lowest, check_set = check_set, checks_of = checks_of, batch = batch, want = want,
          want_target = want_target, fetch = fetch, val = val, decode = decode, bump_target = bump_target,
          flush = flush, text = text }
end
