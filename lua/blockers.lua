--[[
  lua/blockers.lua: the functions blockers (why is this request refused?
  Every live held lock and every place in line that would refuse it now) and
  waiters (the places in line with a target at or inside a prefix). Both
  read-only (registered no-writes: they reap nothing, skip what has expired,
  and replicas may serve them). Keys, arguments and replies:
  docs/lua-protocol.md#blockers.

  A conversion's dry run (blockers' optional converts and fair) is judged as
  the conversion is: never against the converting lock, nor against a place
  the conversion passes over (lua/convert.lua); unfair: held locks only.

  Cost: one HMGET of idx per target (the counts say which codes refuse, at
  which node), one ZRANGEBYLEX per refusing (code, node) or per refusing code
  below the path, one HMGET of the records found: O(depth + answer). Places in
  line are scanned (O(waiters)) only when the counts flag one.

  Uses:      Values (num, dec), Call (begin), Commands (chunked), Meta (check_meta,
             begin_with, blocks, gcode), Paths (path_problem, within, nesting_problem, path_info, nodes_of,
             kind_fields, code4, spell, unspell), Index (batch, want, fetch, val),
             Records (unpack_lock, remaining), Removal (load_waiters, conversions_of),
             Conflicts (refusal, waiter_flag, lock_refuses); PL_OPS, PL_RELATIONS, PL_MAX_BLOCKERS,
             PL_MAX_WAITERS, PL_CODE_DIGITS, PL_FENCE_DIGITS
  Provides:  Blockers.blockers, Blockers.waiters
]]
local Blockers
do
  local num, dec = Values.num, Values.dec
  local begin = Call.begin
  local chunked = Commands.chunked
  local check_meta, begin_with, blocks, gcode = Meta.check_meta, Meta.begin_with, Meta.blocks, Meta.gcode
  local path_problem, within, path_info, nodes_of = Paths.path_problem, Paths.within, Paths.path_info, Paths.nodes_of
  local nesting_problem = Paths.nesting_problem
  local kind_fields, code4, spell, unspell = Paths.kind_fields, Paths.code4, Paths.spell, Paths.unspell
  local batch, want, fetch, val = Index.batch, Index.want, Index.fetch, Index.val
  local unpack_lock, remaining = Records.unpack_lock, Records.remaining
  local load_waiters, conversions_of = Removal.load_waiters, Removal.conversions_of
  local refusal, waiter_flag, lock_refuses = Conflicts.refusal, Conflicts.waiter_flag, Conflicts.lock_refuses
  local PATH_AT = PL_CODE_DIGITS + 1 -- where an entry member's path starts

  -- The entries of global code g exactly at `path` (below = false) or
  -- strictly inside it (below = true), at most `max`: { path, id } pairs.
  local function entries_of(c, path, g, below, max)
    local s = code4(g) .. spell(path)
    local from, to = "[" .. s .. "\0", "(" .. s .. "\1"
    if below then from, to = "[" .. s .. "\1", "(" .. s .. "\2" end
    local out = {}
    for _, m in ipairs(rcall("ZRANGEBYLEX", c.ent, from, to, "LIMIT", "0", num(max))) do
      local z = sfind(m, "\0", PATH_AT, true)
      out[#out + 1] = { path = unspell(ssub(m, PATH_AT, z - 1)), id = ssub(m, z + PL_FENCE_DIGITS + 1) }
    end
    return out
  end

  -- The held entries that refuse `code` at `path`: { path, id, rel } (rel 1
  -- held_ancestor, 0 same, 2 held_descendant), at most `max`.
  local function held_refusing(c, code, path, max)
    local p = path_info(path)
    local nodes, hf = nodes_of(p), kind_fields(p, "h")
    local b = batch()
    for j = 1, #hf do want(b, hf[j]) end
    want(b, kind_fields(p, "b")[#nodes])
    fetch(c, b)
    local found = {}
    local function add(at, rel, t, below)
      for g, n in pairs(t) do
        if n > 0 and blocks(c, rel, code, g) and #found < max then
          for _, e in ipairs(entries_of(c, at, g, below, max - #found)) do
            e.rel = rel
            found[#found + 1] = e
          end
        end
      end
    end
    for j = 1, #nodes do add(nodes[j], j < #nodes and 1 or 0, val(b, hf[j]), false) end
    add(path, 2, val(b, kind_fields(p, "b")[#nodes]), true)
    return found
  end

  -- Could a place in line refuse `code` at `path`? From the waiter counts.
  local function waiter_counts_flag(c, code, path)
    local p = path_info(path)
    local b = batch()
    local whf = kind_fields(p, "wh")
    for j = 1, #whf do want(b, whf[j]) end
    want(b, kind_fields(p, "wb")[#whf])
    fetch(c, b)
    return waiter_flag(c, b, code, path)
  end

  -- blockers' arguments: op, its paths, limit, and optionally converts and
  -- fair (protocol 4.6). Returns the operation and the limit, or nil and an
  -- "invalid" reply.
  local function read_blockers_args(argv)
    local op = PL_OPS[argv[1] or ""]
    if not op then return nil, nil, { "invalid", "unknown operation '" .. tostring(argv[1]) .. "'" } end
    local n = #op.roles
    if #argv ~= 2 + n and #argv ~= 4 + n then
      return nil, nil, { "invalid", "blockers takes op, " .. n .. " path(s), limit[, converts, fair]" }
    end
    local fair = argv[4 + n]
    if fair and fair ~= "1" and fair ~= "0" then return nil, nil, { "invalid", "fair must be 1 or 0" } end
    local limit = dec(argv[2 + n])
    if not limit or limit < 1 or limit > PL_MAX_BLOCKERS then
      return nil, nil, { "invalid", "limit must be decimal digits, 1.." .. PL_MAX_BLOCKERS }
    end
    for i = 1, n do
      local problem = path_problem(argv[1 + i])
      if problem then return nil, nil, { "invalid", op.roles[i] .. " path '" .. argv[1 + i] .. "' " .. problem } end
    end
    local nested = nesting_problem(argv[1], op, argv, 1)
    if nested then return nil, nil, { "invalid", nested } end
    return op, limit, nil
  end

  -- Appends to `out` (rows so far in out.rows, at most out.limit) the live
  -- held locks that refuse `op` on its paths (argv[2..]), other than
  -- out.own (a converting lock): one row per (lock path, requested path).
  -- Rows: the layout of src/redis/replies.hpp (reply::blocker_row).
  local function held_rows(c, op, argv, out)
    local own = out.own
    for i = 1, #op.roles do
      local code, path = op.first + i - 1, argv[1 + i]
      local found = held_refusing(c, code, path, out.limit - out.rows + 1 + (own and #own.paths or 0))
      local ids = {}
      for k = 1, #found do ids[k] = found[k].id end
      local recs = #ids > 0 and chunked("HMGET", c.locks, ids) or {}
      for k = 1, #found do
        local l = recs[k] and unpack_lock(ids[k], recs[k])
        if l and l.exp > c.now and not (own and l.id == own.id) then
          if out.rows == out.limit then out.truncated = true return end
          local j = 1
          while l.paths[j] ~= found[k].path do j = j + 1 end
          out.rows = out.rows + 1
          out[#out + 1] = { 0, l.id, l.owner, l.op, l.info.roles[j] or "", found[k].path, op.roles[i], path,
                            PL_RELATIONS[found[k].rel], tonum(l.f16), l.holds, remaining(l.exp, c.now), 0 }
        end
      end
    end
  end

  -- Does a conversion of lock `own` pass over place w (its own place, or one
  -- its lock refuses: lua/convert.lua)? `converts`: conversions_of the line.
  local function passed_over(c, own, converts, w)
    return own and (converts[w.id] == own.id or lock_refuses(c, own, w))
  end

  -- The same for the places in line whose reservation has not ended (and
  -- that a conversion of out.own does not pass over).
  local function waiter_rows(c, op, argv, out)
    for i = 1, #op.roles do
      local code, path = op.first + i - 1, argv[1 + i]
      if waiter_counts_flag(c, code, path) then
        local ids = rcall("ZRANGE", c.wq, "0", "-1")
        local converts = out.own and conversions_of(c, ids)
        for _, w in ipairs(load_waiters(c, ids)) do
          if not w.stale and w.exp > c.now and not passed_over(c, out.own, converts, w) then
            for j = 1, #w.paths do
              local rel = refusal(c, gcode(w.tag, w.info.first + j - 1), w.paths[j], code, path)
              if rel then
                if out.rows == out.limit then out.truncated = true return end
                out.rows = out.rows + 1
                out[#out + 1] = { 1, w.id, w.owner, w.op, w.info.roles[j] or "", w.paths[j], op.roles[i], path,
                                  PL_RELATIONS[rel], 0, 0, remaining(w.exp, c.now), mmax(0, c.now - (w.since or c.now)) }
              end
            end
          end
        end
      end
    end
  end

  local function pl_blockers(keys, argv)
    local c, bad = begin(keys)
    if not c then return bad end
    local op, limit
    op, limit, bad = read_blockers_args(argv)
    if bad then return bad end
    bad = check_meta(c)
    if bad then return bad end
    local n = #op.roles
    local found = { rows = 0, limit = limit, truncated = false, own = nil }
    local converts = argv[3 + n]
    if converts and converts ~= "" then -- a conversion's dry run: judged without its lock (if live)
      local rec = rcall("HGET", c.locks, converts)
      local l = rec and unpack_lock(converts, rec)
      if l and l.exp > c.now then found.own = l end
    end
    held_rows(c, op, argv, found)
    if not found.truncated and argv[4 + n] ~= "0" then waiter_rows(c, op, argv, found) end
    -- {"blockers", truncated, row_1, ...}: src/redis/replies.hpp (reply::blockers)
    local reply = { "blockers", found.truncated and 1 or 0 }
    for k = 1, #found do reply[k + 2] = found[k] end
    return reply
  end

  local function pl_waiters(keys, argv)
    local c, bad = begin_with(keys, argv, 2, "waiters takes prefix, limit")
    if not c then return bad end
    local prefix, limit = argv[1], dec(argv[2])
    local problem = path_problem(prefix)
    if problem then return { "invalid", "prefix '" .. tostring(prefix) .. "' " .. problem } end
    if not limit or limit < 1 or limit > PL_MAX_WAITERS then
      return { "invalid", "limit must be decimal digits, 1.." .. PL_MAX_WAITERS }
    end
    local reply = { "waiters" }
    local ids = rcall("ZRANGE", c.wq, "0", "-1")
    local converts = conversions_of(c, ids)
    for _, w in ipairs(load_waiters(c, ids)) do
      if #reply > limit then break end
      local inside = false
      if not w.stale and w.exp > c.now then
        for j = 1, #w.paths do inside = inside or within(w.paths[j], prefix) end
      end
      if inside then
        local targets = {}
        for j = 1, #w.paths do
          targets[#targets + 1] = w.info.roles[j] or ""
          targets[#targets + 1] = w.paths[j]
        end
        -- the layout of src/redis/replies.hpp (reply::waiter_row)
        reply[#reply + 1] = { w.id, w.owner, w.op, mmax(0, c.now - (w.since or c.now)), remaining(w.exp, c.now), targets,
                              converts[w.id] }
      end
    end
    return reply
  end

  Blockers = { blockers = pl_blockers, waiters = pl_waiters }
end
