-- register: the library's functions, named PL_FUNCTION_PREFIX .. name so that
-- libraries of several matrices, layouts and versions can share one server.
-- allow-oom: dropping a hold, renewing, leaving the line, releasing and
-- listing must work at maxmemory (they free memory, change records in place
-- or only read and reap). no-writes: probe, held, blockers and waiters only
-- read (a user with read rights only may call them; replicas may serve them);
-- info reads nothing at all (no keys: any node of a Cluster answers it).
local FUNCTIONS = {
  { "acquire", pl_acquire, {} },
  { "release", pl_release, { "allow-oom" } },
  { "force_release", pl_force_release, { "allow-oom" } },
  { "renew", pl_renew, { "allow-oom" } },
  { "leave", pl_leave, { "allow-oom" } },
  { "list", pl_list, { "allow-oom" } },
  { "probe", pl_probe, { "no-writes" } },
  { "held", pl_held, { "no-writes" } },
  { "blockers", pl_blockers, { "no-writes" } },
  { "waiters", pl_waiters, { "no-writes" } },
  { "info", pl_info, { "no-writes", "allow-stale" } },
}
for i = 1, #FUNCTIONS do
  local f = FUNCTIONS[i]
  redis.register_function{ function_name = PL_FUNCTION_PREFIX .. f[1], callback = f[2], flags = f[3] }
end
