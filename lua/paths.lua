--[[
  lua/paths.lua: path checks, the nodes of a path and the idx field names of
  those nodes (cached), and paths as entry members spell them.

  Uses:      Values (cache, keep); PL_MAX_PATH, PL_MAX_NAME, PL_CODE_DIGITS, PL_FENCE_DIGITS
  Provides:  Paths.path_problem, Paths.within, Paths.nesting_problem, Paths.path_info, Paths.nodes_of, Paths.kind_fields,
             Paths.fields_of, Paths.spell, Paths.unspell, Paths.code4, Paths.fence16,
             Paths.entry_member, Paths.list_member
]]
local Paths
do
  local cache, keep = Values.cache, Values.keep

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
  -- An entry: the path, its depth n (nodes, the root included), its
  -- parent's entry, and what calls derive, each made when first asked for
  -- (a new path, mostly a file's, is usually checked and written through its
  -- parent's lists and two field names of its own: nodes_of and
  -- kind_fields are for folders and for refusals). Lists are copied from the
  -- parent's with one unpack into a table made at its final size (a table
  -- grown one element at a time is rehashed at every power of two); the nil
  -- fields size the entry for what calls add.
  local function path_info(path)
    local p = PATHS.t[path]
    if p then return p end
    local nodes, parent, n = nil, nil, nil
    if path ~= "/" and #path <= PATH_CHAIN then
      parent = path_info(smatch(path, "^(.+)/[^/]*$") or "/")
      n = parent.n + 1
    else
      nodes = { "/" }
      if path ~= "/" then
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
      n = #nodes
    end
    return keep(PATHS, path, { path = path, n = n, nodes = nodes, parent = parent, h = nil, b = nil, wh = nil, wb = nil,
                               check = nil, spelled = nil, ["h+"] = nil, ["wh+"] = nil, ["b#"] = nil, ["wb#"] = nil })
  end
  -- The nodes of entry p: "/", "/a", "/a/b" for "/a/b".
  local function nodes_of(p)
    local nodes = p.nodes
    if nodes then return nodes end
    local n = p.n
    nodes = { tunpack(nodes_of(p.parent), 1, n) }
    nodes[n] = p.path
    p.nodes = nodes
    return nodes
  end
  -- kind .. node for every node of the path of entry p (kind: h, b, wh or wb;
  -- see idx): the parent's names and one more, when the parent is known.
  local function kind_fields(p, kind)
    local f = p[kind]
    if f then return f end
    local n = p.n
    if p.parent then
      f = { tunpack(kind_fields(p.parent, kind), 1, n) }
      f[n] = kind .. p.path
    else
      local nodes = p.nodes
      f = {}
      for j = 1, n do f[j] = kind .. nodes[j] end
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
  -- A global code as entry members spell it: PL_CODE_DIGITS digits.
  local CODE4, CODE_FORMAT = {}, "%0" .. PL_CODE_DIGITS .. "d" -- (one entry per global code)
  local function code4(g)
    local s = CODE4[g]
    if not s then
      s = sformat(CODE_FORMAT, g)
      CODE4[g] = s
    end
    return s
  end
  local FENCE_FORMAT = "%0" .. PL_FENCE_DIGITS .. ".0f"
  local function fence16(fence) return sformat(FENCE_FORMAT, fence) end
  -- f16: the fence as PL_FENCE_DIGITS digits (locks keep it so in their records).
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

  -- The problem of operation `op`'s paths argv[first + 1 ..] (one per role)
  -- where the operation forbids one role at or inside another; nil if none.
  local function nesting_problem(name, op, argv, first)
    for k = 1, #op.not_inside do
      local pair = op.not_inside[k]
      if within(argv[first + pair[1]], argv[first + pair[2]]) then
        return name .. ": " .. op.roles[pair[1]] .. " may not be " .. op.roles[pair[2]] .. " or inside it"
      end
    end
    return nil
  end

  Paths = { path_problem = path_problem, within = within, nesting_problem = nesting_problem, path_info = path_info, nodes_of = nodes_of,
          kind_fields = kind_fields, fields_of = fields_of, spell = spell, unspell = unspell, code4 = code4,
          fence16 = fence16, entry_member = entry_member, list_member = list_member }
end
