--[[
  lua/commands.lua: every command the functions run (COMMANDS, the one list),
  the ACL checks made before a call's first write, and calls in chunks.

  Uses:      (nothing but the standard functions)
  Provides:  Commands.COMMANDS, Commands.refused_command, Commands.writable,
             Commands.chunked
]]
local Commands
do
  local CHUNK = 4000 -- arguments per redis.call at most (Lua's C stack); only very deep paths reach it

  -- Every command the functions run, with the key (a field of the call
  -- context) and arguments its ACL check uses: the one list of them. pl_probe
  -- checks them all; writable() checks the write commands before a call's
  -- first write. tests/redis_lua_test.cpp fails when a function runs a command
  -- that is not listed here.
  local COMMANDS = {
    { "TIME" }, { "EXISTS", "locks" }, { "HMGET", "meta", "f" }, { "HGET", "locks", "f" },
    { "HSET", "idx", "f", "1" }, { "HDEL", "idx", "f" }, { "ZADD", "ent", "0", "m" }, { "ZREM", "ent", "m" },
    { "ZRANGE", "wexp", "0", "0" }, { "ZREVRANGE", "wq", "0", "0" }, { "ZRANGEBYSCORE", "exp", "0", "1" },
    { "ZRANGEBYLEX", "ent", "-", "+" }, { "ZREVRANGEBYLEX", "ent", "+", "-" }, { "ZMSCORE", "wq", "m" },
    { "SPUBLISH", "wake", "" }, { "PEXPIREAT", "meta", "1" }, { "PERSIST", "meta" }, { "INFO" },
    { "ZCOUNT", "exp", "0", "1" }, { "HGETALL", "meta" },
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
  -- the call may use? `adds`: HSET and ZADD (new data), and PEXPIREAT where
  -- the keys expire (c.expiring), PERSIST and HDEL where the call may take
  -- a TTL off (c.persist: Meta.check_meta); `removes`: HSET, HDEL and ZREM
  -- (removals). Returns the error reply of a refused command, else nil.
  local HSET, ZADD, HDEL, ZREM = COMMAND.HSET, COMMAND.ZADD, COMMAND.HDEL, COMMAND.ZREM
  local PEXPIREAT, PERSIST = COMMAND.PEXPIREAT, COMMAND.PERSIST
  local function writable(c, adds, removes)
    local bad
    if not c.hset then
      bad = refused_command(c, HSET)
      if bad then return bad end
      c.hset = true
    end
    if adds and not c.zadd then
      bad = refused_command(c, ZADD) or (c.expiring and not c.persist and refused_command(c, PEXPIREAT))
            or (c.persist and (refused_command(c, PERSIST) or refused_command(c, HDEL)))
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

  Commands = { COMMANDS = COMMANDS, refused_command = refused_command, writable = writable,
               chunked = chunked }
end
