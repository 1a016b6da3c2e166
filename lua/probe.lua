-- probe: which commands of this library may the caller not run on the
-- namespace's keys? Read-only; the engine calls it before its first call,
-- so a missing ACL permission is reported by name up front.
-- Keys: as every function. Reply: { "ok" } or { "denied", command, ... };
-- a refused SPUBLISH is reported as "SPUBLISH" too (wake-ups only).

local function pl_probe(keys, argv)
  local bad = keys_problem(keys)
  if bad then return bad end
  local c = { meta = keys[1], idx = keys[2], locks = keys[3], exp = keys[4], ent = keys[5], wq = keys[6],
              wexp = keys[7], wrec = keys[8], wake = keys[9] }
  local checks = { { "TIME" },
    { "HMGET", c.meta, "f" }, { "HGET", c.locks, "f" }, { "HSET", c.idx, "f", "1" }, { "HDEL", c.idx, "f" },
    { "ZADD", c.exp, "0", "m" }, { "ZREM", c.exp, "m" }, { "ZRANGE", c.wexp, "0", "0" },
    { "ZREVRANGE", c.wq, "0", "0" }, { "ZRANGEBYSCORE", c.exp, "0", "1" }, { "ZRANGEBYLEX", c.ent, "-", "+" },
    { "ZREVRANGEBYLEX", c.ent, "+", "-" }, { "ZMSCORE", c.wq, "m" }, { "SPUBLISH", c.wake, "" },
    { "EXISTS", c.locks, c.wq },
  }
  local denied = { "denied" }
  for i = 1, #checks do
    if not redis.acl_check_cmd(tunpack(checks[i])) then denied[#denied + 1] = checks[i][1] end
  end
  if #denied == 1 then return { "ok" } end
  return denied
end
