-- namespace.lua: the data layout, input checks, index maintenance and reaping
-- shared by every function of the pathlock Functions library. The library
-- text is: a data chunk generated from a MatrixTable (src/redis/library.cpp:
-- PL_* constants), then lua/namespace.lua, the function files, and
-- lua/register.lua, which registers the functions. docs/lua-protocol.md
-- describes the keys, arguments and replies once; this file follows it.
--
-- Load time: while Redis loads a library only `redis` is visible, so the top
-- level of every file only defines locals and functions; `string`, `table`,
-- `math` and `unpack` are looked up when a function runs.
--
-- Design, in short (the reasons are in docs/lua-protocol.md#data-layout):
--   * A fixed set of keys per namespace, all passed in KEYS and checked
--     against KEYS[1] (never computed here): Redis Cluster then knows and
--     protects every key a call touches.
--   * idx, ONE hash, is the path index: field kind..PATH holds the counts
--     "code:count,code:count" of the targets with kind h (held exactly at
--     PATH), b (held strictly below PATH), wh / wb (the same for waiters).
--     A request reads all the fields of all nodes of all its targets with
--     one HMGET and writes the changed ones with one HSET (and one HDEL for
--     counts that reached zero): the number of calls does not grow with the
--     path's depth.
--   * ent, ONE lex-ordered zset, names the held targets: member
--     CCCC .. spell(PATH) .. "\0" .. FFFFFFFFFFFFFFFF .. ID (global code,
--     path with "\1" for "/", 16-digit fence, lock id), and "F" .. fence ..
--     ID for listing in fence order. A witness is one ZRANGEBYLEX.
--   * Several matrices share a namespace (a rolling deploy): meta gives each
--     matrix in use a tag; codes in idx and ent are global (tag * 100 +
--     code); a code of another tag refuses every overlapping request;
--     records carry their tag, first code and role names, so any library
--     can name, list, reap and remove another matrix's locks.
--   * Every function reads and checks first; before its first write it asks
--     the server (redis.acl_check_cmd) whether the caller may run every
--     write command it could use, so an ACL refusal never stops a function
--     halfway. Writes are ordered so that the reaper can find what an
--     interrupted acquire left (exp first).

-- The standard functions a call uses, kept in upvalues: reading an upvalue
-- is far cheaper than a global and then its field (string.find), and calls
-- make hundreds of such reads. Only `redis` is visible while the library
-- loads, so the first call of any function fills them: the entry step of
-- every function (begin, and pl_probe) starts with `if not sfind then init()
-- end`, before anything else runs.
local sfind, ssub, smatch, sgmatch, sgsub, sformat, tconcat, tsort, tunpack, mfloor, mmax, mmin, tonum, rcall, rpcall
local function init()
  sfind, ssub, smatch, sgmatch = string.find, string.sub, string.match, string.gmatch
  sgsub, sformat, tconcat, tsort, tunpack = string.gsub, string.format, table.concat, table.sort, unpack
  mfloor, mmax, mmin, tonum, rcall, rpcall = math.floor, math.max, math.min, tonumber, redis.call, redis.pcall
end

-- The keys (PL_KEY_SUFFIXES, PL_KEY_COUNT: from kKeySuffixes in
-- src/redis/library.hpp) by name: the fields of the call context (begin).
-- The data chunk's order is the only one; these names must be its entries.
local K_META, K_IDX, K_LOCKS, K_EXP, K_ENT, K_WQ, K_WEXP, K_WREC, K_WAKE
do
  local at = {}
  for i = 1, PL_KEY_COUNT do at[PL_KEY_SUFFIXES[i]] = i end
  K_META, K_IDX, K_LOCKS, K_EXP, K_ENT = at.meta, at.idx, at.locks, at.exp, at.ent
  K_WQ, K_WEXP, K_WREC, K_WAKE = at.wq, at.wexp, at.wrec, at.wake
end
local REAP_LIMIT_S = "32" -- expired locks (and ended places in line) removed per call at most
local CHUNK = 4000 -- arguments per redis.call at most (Lua's C stack); only very deep paths reach it

-- The library's caches: what calls derive again and again, kept as long as
-- the library, each emptied when it holds `max` entries (a large Lua heap
-- slows every call). Read with c.t[key]; keep() adds and returns the value.
local function cache(max) return { t = {}, n = 0, max = max } end
local function keep(c, key, value)
  if c.n >= c.max then c.t, c.n = {}, 0 end
  c.t[key], c.n = value, c.n + 1
  return value
end

-- Numbers as Redis arguments: exact decimal strings (never "1e+15").
-- Converting a number to text is one of the costliest steps of a call, so
-- small integers (codes, small counts, lengths) are converted once and kept in
-- NUMSTR, a table of the library that lives as long as the library.
-- Counts (up to a million) are kept too. Numbers that never recur (times,
-- fences) are not kept.
local NUMSTR = cache(4096)
local function num(x)
  local s = NUMSTR.t[x]
  if s then return s end
  s = sformat("%.0f", x)
  if x >= 0 and x < 1000000 then keep(NUMSTR, x, s) end
  return s
end
-- The other way: short numeric texts (record fields, codes, counts, ttls)
-- are kept once converted (tonumber parses with strtod, one of the costliest
-- steps of a call); longer texts (times, fences) never recur and are not
-- kept.
local INTS = cache(4096)
local function int(s)
  local n = INTS.t[s]
  if n then return n end
  n = tonum(s)
  if n and #s <= 9 then keep(INTS, s, n) end
  return n
end
local PAD = { [0] = "", "0", "00", "000", "0000", "00000", "000000" }
-- A number argument: plain decimal digits only (no sign, exponent, hex
-- prefix or blank; docs/lua-protocol.md#conventions), at most 15 of them
-- (exact in a double). nil for anything else.
local function dec(s)
  if type(s) ~= "string" or #s == 0 or #s > 15 or sfind(s, "%D") then return nil end
  return int(s)
end

-- nil when KEYS are the namespace's keys in the documented order, else an
-- "invalid" reply. The last KEYS found valid are kept: a service sends the
-- same keys call after call, and comparing interned strings is cheaper than
-- checking them again (the verdict depends on the strings only).
local KEYS_SEEN = {}
local function keys_problem(keys)
  if #keys == PL_KEY_COUNT and keys[1] == KEYS_SEEN[1] then
    local same = true
    for i = 2, PL_KEY_COUNT do
      if keys[i] ~= KEYS_SEEN[i] then
        same = false
        break
      end
    end
    if same then return nil end
  end
  if #keys ~= PL_KEY_COUNT then
    return { "invalid", "expected " .. PL_KEY_COUNT .. " keys: pl:{NS}:" .. tconcat(PL_KEY_SUFFIXES, ", pl:{NS}:") }
  end
  local prefix, ns = smatch(keys[1], "^([^{}]*{([%w._:-]+)}:)" .. PL_KEY_SUFFIXES[1] .. "$")
  if not prefix or #ns > PL_MAX_NAMESPACE or #keys[1] > #ns + 200 then
    return { "invalid", "KEYS[1] must be the namespace's meta key pl:{NS}:meta (NS: 1.." .. PL_MAX_NAMESPACE
             .. " of [A-Za-z0-9._:-])" }
  end
  for i = 2, PL_KEY_COUNT do
    if keys[i] ~= prefix .. PL_KEY_SUFFIXES[i] then
      return { "invalid", "KEYS[" .. i .. "] must be " .. prefix .. PL_KEY_SUFFIXES[i] }
    end
  end
  KEYS_SEEN = { tunpack(keys) }
  return nil
end

-- The call context: keys, server time, and what was checked so far.
local function begin(keys)
  if not sfind then init() end
  local bad = keys_problem(keys)
  if bad then return nil, bad end
  -- The server clock, as text and numbers (text built by hand: cheaper).
  local t = rcall("TIME")
  local usec = PAD[6 - #t[2]] .. t[2]
  local now_s, now_us_s = t[1] .. ssub(usec, 1, 3), t[1] .. usec
  -- (now_us_s is made a number only by a grant, for its fence. The fields
  -- set later are named here with nil, which sizes the table once.)
  return { meta = keys[K_META], idx = keys[K_IDX], locks = keys[K_LOCKS], exp = keys[K_EXP], ent = keys[K_ENT],
           wq = keys[K_WQ], wexp = keys[K_WEXP], wrec = keys[K_WREC], wake = keys[K_WAKE], now = tonum(now_s), now_s = now_s,
           now_us_s = now_us_s, fence_s = nil, tag = nil, tag_l = nil, tag_w = nil, tag1_free = nil,
           next_tag = nil, hset = nil, zadd = nil, zrem = nil }
end

-- Every command the functions run, with the key (a field of the call
-- context) and arguments its ACL check uses: the one list of them. pl_probe
-- checks them all; writable() checks the write commands before a call's
-- first write. tests/redis_test.cpp fails when a function runs a command
-- that is not listed here.
local COMMANDS = {
  { "TIME" }, { "EXISTS", "locks" }, { "HMGET", "meta", "f" }, { "HGET", "locks", "f" },
  { "HSET", "idx", "f", "1" }, { "HDEL", "idx", "f" }, { "ZADD", "ent", "0", "m" }, { "ZREM", "ent", "m" },
  { "ZRANGE", "wexp", "0", "0" }, { "ZREVRANGE", "wq", "0", "0" }, { "ZRANGEBYSCORE", "exp", "0", "1" },
  { "ZRANGEBYLEX", "ent", "-", "+" }, { "ZREVRANGEBYLEX", "ent", "+", "-" }, { "ZMSCORE", "wq", "m" },
  { "SPUBLISH", "wake", "" },
}
local COMMAND = {}
for i = 1, #COMMANDS do COMMAND[COMMANDS[i][1]] = COMMANDS[i] end

-- nil when the caller may run command `spec` (an entry of COMMANDS) on the
-- keys of c, else an error reply that names it (a function returns it
-- before any write). Spelled out per length: unpack would cost more than
-- the check, which every call makes for each write command it may use.
local function refused_command(c, spec)
  local n, ok = #spec, nil
  if n == 4 then ok = redis.acl_check_cmd(spec[1], c[spec[2]], spec[3], spec[4])
  elseif n == 3 then ok = redis.acl_check_cmd(spec[1], c[spec[2]], spec[3])
  elseif n == 2 then ok = redis.acl_check_cmd(spec[1], c[spec[2]])
  else ok = redis.acl_check_cmd(spec[1]) end
  if ok then return nil end
  return redis.error_reply("NOPERM PATHLOCK this user may not run " .. spec[1]
                           .. " on the namespace's keys; nothing was changed")
end

-- Before the first write of a call: may this caller run the write commands
-- the call may use? `adds`: HSET and ZADD (new data); `removes`: HSET, HDEL
-- and ZREM (removals). Returns the error reply of a refused command, else nil.
local HSET, ZADD, HDEL, ZREM = COMMAND.HSET, COMMAND.ZADD, COMMAND.HDEL, COMMAND.ZREM
local function writable(c, adds, removes)
  local bad
  if not c.hset then
    bad = refused_command(c, HSET)
    if bad then return bad end
    c.hset = true
  end
  if adds and not c.zadd then
    bad = refused_command(c, ZADD)
    if bad then return bad end
    c.zadd = true
  end
  if removes and not c.zrem then
    bad = refused_command(c, HDEL) or refused_command(c, ZREM)
    if bad then return bad end
    c.zrem = true
  end
  return nil
end

-- redis.call(cmd, key, unpack(list)) in chunks of at most CHUNK arguments
-- (`step` keeps field-value pairs together). Returns the concatenated
-- replies of HMGET-like commands.
local function chunked(cmd, key, list, step)
  local n = #list
  if n <= CHUNK then return rcall(cmd, key, tunpack(list)) end
  local out = {}
  local size = CHUNK - CHUNK % (step or 1)
  for from = 1, n, size do
    local part = rcall(cmd, key, tunpack(list, from, mmin(n, from + size - 1)))
    if type(part) == "table" then
      for i = 1, #part do out[#out + 1] = part[i] end
    end
  end
  return out
end

-- Meta: the namespace's layout version, its fence, and the matrices in use.
-- Every matrix with a lock or a place in line in the namespace has a small
-- tag number (1..TAG_MAX): field t:FP = tag, m:TAG = "FP\0name\0version",
-- l:TAG / w:TAG = its locks / places in line. Codes in idx and ent are
-- global: tag * 100 + the matrix's own code, so a request reads which
-- matrix every held target belongs to from the counts it reads anyway.
local TAG_MAX = 99
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
-- the guess was right, its counts (c.tag_l, c.tag_w). Returns a reply when
-- the namespace belongs to another data layout. (Every value read costs:
-- what only some calls need is read by those.)
local function check_meta(c)
  local g = TAG_GUESS
  local m = rcall("HMGET", c.meta, "layout", "fence", T_FIELD, L_FIELD[g], W_FIELD[g])
  -- Layout 1 (pathlock <= 0.1) had no layout field, but a fingerprint.
  local layout = m[1] or (rcall("HGET", c.meta, "fingerprint") and "1")
  if layout and layout ~= PL_LAYOUT and not adoptable(c, layout) then return { "layout", layout, PL_LAYOUT } end
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
  rcall("HSET", c.meta, "layout", PL_LAYOUT, T_FIELD, TAG_S[t], M_FIELD[t], M_VALUE, L_FIELD[t], "0",
             W_FIELD[t], "0")
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

-- Adds dl locks and dw places to a tag's counts; a tag whose locks and
-- places both reach zero leaves meta (its matrix is no longer in use here).
-- Counts are lowered only after the data is gone. `f16`, when given, is
-- written as the namespace's fence in the same HSET.
local function tag_count(c, tag, dl, dw, f16)
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
    return
  end
  l, w = mmax(l, 0), mmax(w, 0)
  if f16 then
    rcall("HSET", c.meta, "fence", f16, "l:" .. ts, num(l), "w:" .. ts, num(w))
  else
    rcall("HSET", c.meta, "l:" .. ts, num(l), "w:" .. ts, num(w))
  end
  if tag == c.tag then c.tag_l, c.tag_w = l, w end
end
-- One count less per item of `items` (locks, or places in line when
-- `places`) that has a tag (a stale place has none): one tag_count per tag.
local function count_down(c, items, places)
  local per_tag = {}
  for k = 1, #items do
    local t = items[k].tag
    if t then per_tag[t] = (per_tag[t] or 0) + 1 end
  end
  for tag, d in pairs(per_tag) do
    if places then tag_count(c, tag, 0, -d) else tag_count(c, tag, -d, 0) end
  end
end

-- Global codes: the tag and the matrix's own code.
local function gcode(tag, code) return tag * 100 + code end
local function tag_of(g) return mfloor(g / 100) end

-- Does held global code `held` refuse this library's code `code` in
-- relation `rel`? Its own rules for its own matrix; any overlap for another.
local function blocks(c, rel, code, held)
  local own = c.tag and tag_of(held) == c.tag
  if not own then return true end
  return PL_BLOCKSET[rel][code][held - c.tag * 100] or false
end

-- ---- paths ----------------------------------------------------------------

local function path_problem(p)
  if type(p) ~= "string" or ssub(p, 1, 1) ~= "/" then return "is not absolute" end
  if #p > PL_MAX_PATH then return "is longer than " .. PL_MAX_PATH .. " bytes" end
  if sfind(p, "%c") then return "has a control character" end
  if p == "/" then return nil end
  if ssub(p, -1) == "/" or sfind(p, "//", 1, true) then return "is not canonical (empty component)" end
  if sfind(p, "/.", 1, true) and (sfind(p, "/%.%.?/") or sfind(p, "/%.%.?$")) then
    return "has a '.' or '..' component"
  end
  if #p > PL_MAX_NAME + 1 then -- only then can a component be too long
    for name in sgmatch(p, "[^/]+") do
      if #name > PL_MAX_NAME then return "has a component longer than " .. PL_MAX_NAME .. " bytes" end
    end
  end
  return nil
end

local function within(inner, outer)
  return outer == "/" or inner == outer or ssub(inner, 1, #outer + 1) == outer .. "/"
end

-- Per path, what calls derive from it again and again: its nodes ("/",
-- "/a", "/a/b" for "/a/b") and, per kind of idx field, the field names of
-- those nodes. A small cache of the library, emptied when full (a large Lua
-- heap slows every call). A path's entry is built from its parent's, which
-- is looked up (and so cached) the same way: ancestors recur far more often
-- than paths do, so a new path usually costs one node and one field name per
-- kind. Paths longer than PATH_CHAIN bytes are split directly (bounding the
-- chain of parents built at once).
local PATHS, PATH_CHAIN = cache(512), 256
local function path_info(path)
  local p = PATHS.t[path]
  if p then return p end
  local nodes, parent = { "/" }, nil
  if path ~= "/" and #path <= PATH_CHAIN then
    parent = path_info(smatch(path, "^(.+)/[^/]*$") or "/")
    local pn = parent.nodes
    for j = 2, #pn do nodes[j] = pn[j] end
    nodes[#pn + 1] = path
  elseif path ~= "/" then
    local at = 2
    while true do
      local i = sfind(path, "/", at, true)
      if not i then
        nodes[#nodes + 1] = path
        break
      end
      nodes[#nodes + 1] = ssub(path, 1, i - 1)
      at = i + 1
    end
  end
  return keep(PATHS, path, { nodes = nodes, parent = parent })
end
local function nodes_of(path) return path_info(path).nodes end
-- kind .. node for every node of the path of entry p (kind: h, b, wh or wb;
-- see idx): the parent's names and one more, when the parent is known.
local function kind_fields(p, kind)
  local f = p[kind]
  if f then return f end
  local nodes = p.nodes
  f = {}
  if p.parent then
    local pf = kind_fields(p.parent, kind)
    for j = 1, #pf do f[j] = pf[j] end
    f[#nodes] = kind .. nodes[#nodes]
  else
    for j = 1, #nodes do f[j] = kind .. nodes[j] end
  end
  p[kind] = f
  return f
end
local function fields_of(path, kind) return kind_fields(path_info(path), kind) end

-- The path as entry members spell it: "/" -> "\1", the root -> "". "\1" sorts
-- below every name byte (names hold no control character), so lex order of
-- spellings is component-wise path order, a folder before its contents.
local function spell(path)
  if path == "/" then return "" end
  return (sgsub(path, "/", "\1"))
end
local function unspell(s)
  if s == "" then return "/" end
  return (sgsub(s, "\1", "/"))
end
-- A global code as entry members spell it: four digits.
local CODE4 = {} -- (at most 9,999 entries)
local function code4(g)
  local s = CODE4[g]
  if not s then
    s = sformat("%04d", g)
    CODE4[g] = s
  end
  return s
end
local function fence16(fence) return sformat("%016.0f", fence) end
-- f16: the fence as 16 digits (locks keep it so in their records).
local function entry_member(g, path, f16, id)
  local p = path_info(path)
  local s = p.spelled
  if not s then
    s = spell(path)
    p.spelled = s
  end
  return code4(g) .. s .. "\0" .. f16 .. id
end
local function list_member(f16, id) return "F" .. f16 .. id end

-- ---- the index (idx) ------------------------------------------------------

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

-- ---- lock and waiter records ----------------------------------------------

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
  local g = tag * 100 + info.first
  local head = HEADS[g]
  if not head then
    head = num(tag) .. "\0" .. num(info.first) .. "\0" .. tconcat(info.roles, ",") .. "\0"
    HEADS[g] = head
  end
  return head
end

-- A lock record: tag \0 first \0 roles \0 op \0 fence \0 holds \0 ttl \0 exp
-- \0 #token \0 #owner \0 #key \0 token owner key path_1 \0 ... path_n
-- (owners may hold any byte, paths none of \0; the fence has 16 digits; key
-- is the idempotency key, often empty). Numbers are kept as text too (ttl_s,
-- exp_s, f16) so that writing a record back converts only what changed;
-- `head` is the record's first three fields as stored.
local function pack_lock(l)
  return l.head .. l.op .. "\0" .. l.f16 .. "\0" .. num(l.holds) .. "\0" .. l.ttl_s .. "\0" .. l.exp_s .. "\0"
         .. num(#l.token) .. "\0" .. num(#l.owner) .. "\0" .. num(#l.key) .. "\0" .. l.token .. l.owner .. l.key
         .. tconcat(l.paths, "\0")
end
local function unpack_lock(id, rec)
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

-- ---- removal (batched) ----------------------------------------------------

-- Loads the records of `ids` (one HMGET); returns the locks found and the ids
-- that have no (readable) record.
local function load_locks(c, ids)
  local found, stale = {}, {}
  if #ids == 0 then return found, stale end
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

-- Takes places out of the line (their counts, records, line entries).
local function remove_waiters(c, ws)
  if #ws == 0 then return end
  local b, ids, paths = batch(), {}, {}
  for _, w in ipairs(ws) do
    if not w.stale then
      for i = 1, #w.paths do want_target(c, b, w.paths[i], "wh", "wb") end
    end
  end
  fetch(c, b)
  for _, w in ipairs(ws) do
    ids[#ids + 1] = w.id
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
  chunked("HDEL", c.wrec, ids)
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

local function valid_id(id) return type(id) == "string" and #id <= PL_MAX_ID and sfind(id, "^[%w-]+$") ~= nil end
local function valid_key(k)
  return type(k) == "string" and #k <= PL_MAX_KEY and sfind(k, "^[%w._:-]+$") ~= nil
end
