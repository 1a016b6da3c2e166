--[[
  lua/request.lua: the arguments of acquire, checked before anything is read
  (docs/lua-protocol.md#acquire).

  Uses:      Values (dec, valid_id, valid_key), Paths (path_problem, nesting_problem), Limits (valid); PL_OPS,
             PL_MAX_OWNER, PL_MAX_TTL, PL_MAX_ID, PL_MAX_TOKEN, PL_MAX_KEY, PL_MAX_RESERVE, PL_MAX_LIMIT
  Provides:  Request.read_request
]]
local Request
do
  local dec, valid_id, valid_key = Values.dec, Values.valid_id, Values.valid_key
  local path_problem, nesting_problem = Paths.path_problem, Paths.nesting_problem
  local valid_limits = Limits.valid

  -- reenter_id, reenter_token and the idempotency key of request r (a
  -- conversion: the lock's proof, required, and a key beside it).
  local function read_proofs(r, convert)
    if convert or r.reenter_id ~= "" or r.reenter_token ~= "" then
      if not valid_id(r.reenter_id) then return { "invalid", "reenter_id must be 1.." .. PL_MAX_ID .. " of [A-Za-z0-9-]" } end
      if #r.reenter_token > PL_MAX_TOKEN or r.reenter_token == "" then
        return { "invalid", "reenter_token must be 1.." .. PL_MAX_TOKEN .. " bytes" }
      end
      if r.key ~= "" and not convert then return { "invalid", "a reentry takes no idempotency_key" } end
    end
    if r.key ~= "" and not valid_key(r.key) then
      return { "invalid", "idempotency_key must be 1.." .. PL_MAX_KEY .. " of [A-Za-z0-9._:-]" }
    end
    return nil
  end

  -- The paths of request r (one per role, canonical, and not inside each
  -- other where the operation forbids it).
  local function read_paths(r, argv)
    local op, paths = r.op, r.paths
    for i = 1, r.n do
      paths[i] = argv[8 + i]
      local problem = path_problem(paths[i])
      if problem then return { "invalid", op.roles[i] .. " path '" .. paths[i] .. "' " .. problem } end
    end
    local nested = nesting_problem(r.op_name, op, argv, 8)
    return nested and { "invalid", nested } or nil
  end

  -- The optional fair, waiter_id and reserve_ms of request r.
  local function read_line_args(r, fair, waiter_id, reserve)
    if fair ~= "1" and fair ~= "0" then return { "invalid", "fair must be 1 or 0" } end
    r.fair, r.waiter_id, r.reserve = fair == "1", waiter_id, dec(reserve)
    if waiter_id ~= "" and not valid_id(waiter_id) then
      return { "invalid", "waiter_id must be empty or 1.." .. PL_MAX_ID .. " of [A-Za-z0-9-]" }
    end
    if waiter_id ~= "" and not r.fair then return { "invalid", "only a fair request takes a place in line" } end
    if not r.reserve or r.reserve > PL_MAX_TTL then
      return { "invalid", "reserve_ms must be decimal digits, 0.." .. PL_MAX_TTL }
    end
    r.reserve = mmin(r.reserve, PL_MAX_RESERVE) -- a dead waiter blocks fair requests no longer than this
    return nil
  end

  -- The optional deadline_ms and default_limits of request r.
  local function read_tail(r, deadline, limits)
    if deadline and deadline ~= "" then
      r.deadline = dec(deadline)
      if not r.deadline then return { "invalid", "deadline_ms must be empty or decimal digits" } end
    end
    if limits and limits ~= "" then
      if not valid_limits(limits) then
        return { "invalid", "default_limits must be empty or \"LOCKS PLACES OWNER_LOCKS\", each 0.."
                            .. PL_MAX_LIMIT .. " or -" }
      end
      r.default_limits = limits
    end
    return nil
  end

  -- What a conversion leaves empty: the lock keeps its owner, id and token.
  local function read_convert_head(r)
    if r.owner ~= "" then return { "invalid", "convert takes an empty owner (the lock keeps its own)" } end
    if r.new_id ~= "" or r.new_token ~= "" then
      return { "invalid", "convert takes an empty new_id and new_token (the lock keeps its id and token)" }
    end
    return nil
  end
  -- new_id and new_token of an acquire.
  local function read_new(r)
    if not valid_id(r.new_id) then return { "invalid", "new_id must be 1.." .. PL_MAX_ID .. " of [A-Za-z0-9-]" } end
    if r.new_token == "" or #r.new_token > PL_MAX_TOKEN then
      return { "invalid", "new_token must be 1.." .. PL_MAX_TOKEN .. " bytes" }
    end
    return nil
  end

  -- The request in argv, checked (docs/lua-protocol.md#acquire): a table, or
  -- nil and an "invalid" reply. `convert`: the arguments of convert (the
  -- same layout; docs/lua-protocol.md#convert).
  local function read_request(argv, convert)
    local owner, op_name, ttl = argv[1], argv[2], dec(argv[3])
    local op = PL_OPS[op_name or ""]
    if not op then return nil, { "invalid", "unknown operation '" .. tostring(op_name) .. "'" } end
    local n = #op.roles
    if #argv ~= 8 + n and #argv ~= 11 + n and #argv ~= 12 + n and #argv ~= 13 + n then
      return nil, { "invalid", "operation '" .. op_name .. "' takes " .. n .. " path(s) after 8 arguments, then"
                               .. " optionally fair, waiter_id, reserve_ms [, deadline_ms [, default_limits]]" }
    end
    if (owner == "" and not convert) or #owner > PL_MAX_OWNER then
      return nil, { "invalid", "owner must be 1.." .. PL_MAX_OWNER .. " bytes" }
    end
    if not ttl or ttl < 1 or ttl > PL_MAX_TTL then
      return nil, { "invalid", "ttl must be decimal digits, 1.." .. PL_MAX_TTL .. " ms" }
    end
    local r = { owner = owner, op_name = op_name, op = op, n = n, ttl = ttl, ttl_s = argv[3], new_id = argv[4],
                new_token = argv[5], reenter_id = argv[6], reenter_token = argv[7], key = argv[8], paths = {},
                fair = true, waiter_id = "", reserve = 0, deadline = nil,
                default_limits = nil }
    local bad
    if convert then bad = read_convert_head(r) else bad = read_new(r) end
    bad = bad or read_proofs(r, convert) or read_paths(r, argv)
    if bad then return nil, bad end
    if #argv >= 11 + n then
      bad = read_line_args(r, argv[9 + n], argv[10 + n], argv[11 + n])
      if bad then return nil, bad end
    end
    bad = read_tail(r, argv[12 + n], argv[13 + n])
    if bad then return nil, bad end
    return r
  end

  Request = { read_request = read_request }
end
