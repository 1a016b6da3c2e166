--[[
  lua/conflicts.lua: which held lock or place in line refuses a target, by
  the canonical rule (docs/lua-protocol.md#the-conflicting-lock), found from
  the index counts and the entries.

  Cost: a refusal names its witness with one ZREVRANGEBYLEX (held at or above
  the path) or one ZRANGEBYLEX per blocking code present below the path plus
  one ZREVRANGEBYLEX: O(log n) each, however wide the folders are. Only fair
  requests meeting a possibly conflicting waiter, and re-checks of a waiter in
  line, scan the line: O(waiters x targets).

  Uses:      Values (num), Meta (gcode, blocks), Paths (within, path_info, nodes_of, kind_fields,
             code4, spell, unspell), Index (lowest, val, decode, checks_of, text), Records (unpack_lock),
             Removal (load_waiters); PL_RELATIONS, PL_CODE_DIGITS, PL_FENCE_DIGITS
  Provides:  Conflicts.refusal, Conflicts.held_conflict,
             Conflicts.waiter_flag, Conflicts.older_waiter, Conflicts.lock_refuses
]]
local Conflicts
do
  local num = Values.num
  local gcode, blocks = Meta.gcode, Meta.blocks
  local within, path_info, nodes_of, kind_fields = Paths.within, Paths.path_info, Paths.nodes_of, Paths.kind_fields
  local code4, spell, unspell = Paths.code4, Paths.spell, Paths.unspell
  local lowest, val, decode, checks_of, text = Index.lowest, Index.val, Index.decode, Index.checks_of, Index.text
  local unpack_lock = Records.unpack_lock
  local load_waiters = Removal.load_waiters
  local PATH_AT = PL_CODE_DIGITS + 1 -- where an entry member's path starts

  -- Does a target with global code `held` at `hp` refuse `code` at `rp`? The
  -- relation index (0 same, 1 held_ancestor, 2 held_descendant) when it does,
  -- else nil. Another matrix's target refuses whatever it overlaps.
  local function refusal(c, held, hp, code, rp)
    local rel
    if hp == rp then rel = 0
    elseif within(rp, hp) then rel = 1
    elseif within(hp, rp) then rel = 2
    else return nil end
    if blocks(c, rel, code, held) then return rel end
    return nil
  end

  -- The first member of `ms` that is not lock `own`'s (own: nil, or the id
  -- of a converting lock, whose entries the check passes over), and its id
  -- (after the "\0" at z and the fence).
  local function other_member(ms, z, own)
    for i = 1, #ms do
      local m = ms[i]
      local id = ssub(m, (z or sfind(m, "\0", PATH_AT, true)) + PL_FENCE_DIGITS + 1)
      if id ~= own then return m, id end
    end
    return nil
  end

  -- The newest entry with global code `g` exactly at `path` (highest fence),
  -- not lock `own`'s: the lock (nil when its record is gone) and the member
  -- (nil when none).
  local function entry_at(c, path, g, own)
    local s = code4(g) .. spell(path)
    local m, id = other_member(rcall("ZREVRANGEBYLEX", c.ent, "(" .. s .. "\1", "[" .. s .. "\0", "LIMIT", "0",
                                     own and "2" or "1"), #s + 1, own)
    if not m then return nil, nil end
    local rec = rcall("HGET", c.locks, id)
    return rec and unpack_lock(id, rec), m
  end

  -- Of the entries strictly below `path` with one of `codes` (ascending), not
  -- lock `own`'s, the one with the smallest path (component-wise), then the
  -- lowest code: one ZRANGEBYLEX per code. Returns its path and code, or nil.
  local function smallest_below(c, path, codes, own)
    local base = spell(path)
    local best, best_code
    for i = 1, #codes do
      local cc = code4(codes[i])
      local m = other_member(rcall("ZRANGEBYLEX", c.ent, "[" .. cc .. base .. "\1", "(" .. cc .. base .. "\2",
                                   "LIMIT", "0", own and "2" or "1"), nil, own)
      if m then
        local s = ssub(m, PATH_AT, sfind(m, "\0", PATH_AT, true) - 1)
        if not best or s < best then best, best_code = s, codes[i] end
      end
    end
    if not best then return nil end
    return unspell(best), best_code
  end

  -- The codes counted in field text v (of kind b: held below a path) that
  -- refuse `code` there, ascending; nil if none.
  local function codes_below(c, v, code)
    local present
    for k, count in pairs(decode(v)) do
      if count > 0 and blocks(c, 2, code, k) then
        present = present or {}
        present[#present + 1] = k
      end
    end
    if present then tsort(present) end
    return present
  end

  -- The held lock that refuses `code` at `path`, by the canonical rule
  -- (docs/lua-protocol.md#the-conflicting-lock): strict ancestors from the
  -- root down, then the path, then below it. Returns nil (no conflict), or a
  -- table: { lock, code, path, relation }, or { expired = lock } / { stale =
  -- member } (to remove before looking again), or { broken = where }.
  local function held_conflict(c, b, code, path)
    local at, held, rel
    local p = path_info(path)
    local n, cf = p.n, checks_of(p).fields -- (h and b of node j: cf[2j - 1], cf[2j])
    -- (A field's text as read, or with a conversion's own counts taken out
    -- (Index.text); an absent field, the usual case, costs no decode.)
    local raw, pos, own = b.raw, b.pos, b.own
    for j = 1, n do -- (held at node j: a strict ancestor, relation 1, then the path itself, relation 0)
      local i, r = pos[cf[2 * j - 1]], j < n and 1 or 0
      local v = raw[i]
      if own then v = text(b, i) end
      held = v and lowest(c, decode(v), r, code)
      if held then
        at, rel = r == 1 and nodes_of(p)[j] or path, PL_RELATIONS[r]
        break
      end
    end
    if not at then
      local i = pos[cf[2 * n]]
      local v = raw[i]
      if own then v = text(b, i) end
      local present = v and codes_below(c, v, code)
      if not present then return nil end
      at, held = smallest_below(c, path, present, own)
      if not at then return { broken = "below " .. path } end
      rel = PL_RELATIONS[2]
    end
    local l, m = entry_at(c, at, held, own)
    if not m then return { broken = "at " .. at } end
    if not l then return { stale = m } end
    if l.exp <= c.now then return { expired = l } end
    return { lock = l, code = held, path = at, relation = rel }
  end

  -- Could a waiting target refuse `code` at `path`? From the waiter counts.
  local function waiter_flag(c, b, code, path)
    local p = path_info(path)
    local n, whf = p.n, kind_fields(p, "wh")
    for j = 1, n - 1 do
      if lowest(c, val(b, whf[j]), 1, code) then return true end
    end
    if lowest(c, val(b, whf[n]), 0, code) then return true end
    return lowest(c, val(b, kind_fields(p, "wb")[n]), 2, code) ~= nil
  end

  -- Does a target of lock l (of this library's matrix) refuse a target of
  -- place w as if w held its lock? Another matrix's place: any overlap. (A
  -- conversion of l passes over such a place: lua/convert.lua.)
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

  -- Fairness, the slow path: the oldest waiter in line (older than place
  -- `before`, or any) that refuses `code` at `path` as if it held its lock.
  -- Places whose reservation ended are collected in `ended`; places for
  -- which `skip(w)` is true are passed over (a conversion's, lua/acquire.lua).
  local function older_waiter(c, code, path, before, ended, skip)
    local ids = before and rcall("ZRANGEBYSCORE", c.wq, "-inf", "(" .. num(before))
                or rcall("ZRANGE", c.wq, "0", "-1")
    for _, w in ipairs(load_waiters(c, ids)) do
      if w.stale or w.exp <= c.now then
        ended[#ended + 1] = w
      elseif not (skip and skip(w)) then
        for j = 1, #w.paths do
          local wcode = gcode(w.tag, w.info.first + j - 1)
          local rel = refusal(c, wcode, w.paths[j], code, path)
          if rel then return { waiter = w, code = wcode, path = w.paths[j], relation = PL_RELATIONS[rel] } end
        end
      end
    end
    return nil
  end

  Conflicts = { refusal = refusal, held_conflict = held_conflict, waiter_flag = waiter_flag,
              older_waiter = older_waiter, lock_refuses = lock_refuses }
end
