--[[
  lua/index.lua: the path index (key idx): counts per global code, read and
  written in batches of one HMGET and one HSET (and one HDEL).

  Uses:      Values (num, int), Commands (chunked), Meta (blocks), Paths (path_info, kind_fields)
  Provides:  Index.EMPTY, Index.lowest, Index.check_set, Index.batch, Index.want,
             Index.want_target, Index.fetch, Index.val, Index.bump_target, Index.flush
]]
local Index
do
  local num, int = Values.num, Values.int
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
  local function field_set(fields)
    local pos = {}
    for i = 1, #fields do pos[fields[i]] = i end
    return { fields = fields, pos = pos }
  end
  -- What a check of `path` reads: h and b of every node.
  local function check_set(path)
    local p = path_info(path)
    local set = p.check
    if not set then
      local hf, bf, fields = kind_fields(p, "h"), kind_fields(p, "b"), {}
      for j = 1, #hf do fields[2 * j - 1], fields[2 * j] = hf[j], bf[j] end
      set = field_set(fields)
      p.check = set
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
      local hf, bf, fields = kind_fields(p, here), kind_fields(p, below), {}
      for j = 1, #hf - 1 do fields[j] = bf[j] end
      fields[#hf] = hf[#hf]
      set = field_set(fields)
      p[key] = set
    end
    return set
  end
  -- (The nils size the arrays once: growing a table costs more than filling it.)
  local function batch(set)
    return { fields = set and set.fields or {}, pos = set and set.pos or {}, shared = set ~= nil, fetched = 0,
             raw = {}, cur = { nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil }, vals = {} }
  end
  -- The position of field f in the batch, added when new.
  local function want(b, f)
    local i = b.pos[f]
    if i then return i end
    if b.shared then -- a cached set: copy it before adding
      local fields, pos = {}, {}
      for k = 1, #b.fields do
        fields[k] = b.fields[k]
        pos[fields[k]] = k
      end
      b.fields, b.pos, b.shared = fields, pos, false
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
  local function bump(b, f, code, d)
    local i = want(b, f)
    local t = b.vals[i]
    if not t then
      local cur = b.cur[i]
      if cur == nil then cur = b.raw[i] or false end
      if not cur and d == 1 then
        b.cur[i] = one(code)
        return
      elseif d == -1 and cur == one(code) then
        b.cur[i] = false
        return
      elseif cur then -- one code only, ours: "code:count"
        local cs, k = smatch(cur, "^(%d+):(%d+)$")
        if cs and int(cs) == code then
          k = int(k) + d
          b.cur[i] = k > 0 and (cs .. ":" .. num(k))
          return
        end
      end
      t = decode(cur or nil)
      b.vals[i] = t
    end
    local n = (t[code] or 0) + d
    t[code] = n > 0 and n or nil
  end
  local function bump_target(c, b, code, path, here, below, d)
    local fields = target_set(path, here, below).fields
    for k = 1, #fields do bump(b, fields[k], code, d) end
  end
  local function flush(c, b)
    local set, del = { nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil }, {}
    local raw, cur, vals = b.raw, b.cur, b.vals
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
            del[#del + 1] = b.fields[i]
          end
        end
        raw[i], cur[i], vals[i] = v or false, nil, nil
      end
    end
    if #set > 0 then chunked("HSET", c.idx, set, 2) end
    if #del > 0 then chunked("HDEL", c.idx, del) end
  end

  Index = { EMPTY = EMPTY, lowest = lowest, check_set = check_set, batch = batch, want = want, want_target = want_target,
          fetch = fetch, val = val, bump_target = bump_target, flush = flush }
end
