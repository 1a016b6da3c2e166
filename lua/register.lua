--[[
  lua/register.lua: registers the library's functions, named
  PL_FUNCTION_PREFIX .. name so that libraries of several matrices, layouts
  and versions can share one server. allow-oom: dropping a hold, renewing,
  leaving the line, releasing and listing must work at maxmemory (they free
  memory, change records in place or only read and reap). no-writes: probe,
  held, list_ro, blockers and waiters only read (a user with read rights only may
  call them; replicas may serve them); info reads nothing at all (no keys:
  any node of a Cluster answers it), and so does contract.

  Uses:      Acquire, Convert, Release, Renew, Leave, List, Probe, Blockers, Info, Contract, Limits; PL_FUNCTION_PREFIX
  Provides:  (nothing to Lua: the functions, registered with Redis)
]]
do
  local FUNCTIONS = {
    { "acquire", Acquire.acquire, {} },
    { "convert", Convert.convert, {} },
    { "release", Release.release, { "allow-oom" } },
    { "force_release", Release.force_release, { "allow-oom" } },
    { "renew", Renew.renew, { "allow-oom" } },
    { "leave", Leave.leave, { "allow-oom" } },
    { "list", List.list, { "allow-oom" } },
    { "list_ro", List.list_ro, { "no-writes" } },
    { "probe", Probe.probe, { "no-writes" } },
    { "held", Renew.held, { "no-writes" } },
    { "blockers", Blockers.blockers, { "no-writes" } },
    { "waiters", Blockers.waiters, { "no-writes" } },
    { "info", Info.info, { "no-writes", "allow-stale" } },
    { "contract", Contract.contract, { "no-writes", "allow-stale" } },
    { "set_limits", Limits.set_limits, { "allow-oom" } },
    { "limits_ro", Limits.limits_ro, { "no-writes" } },
  }
  for i = 1, #FUNCTIONS do
    local f = FUNCTIONS[i]
    redis.register_function{ function_name = PL_FUNCTION_PREFIX .. f[1], callback = f[2], flags = f[3] }
  end
end
