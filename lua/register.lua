-- register: the library's functions, named PL_FUNCTION_PREFIX .. name so that
-- libraries of several matrices and layouts can share one server.
-- allow-oom: dropping a hold, renewing, leaving the line, releasing and
-- listing must work at maxmemory (they free memory, change records in place
-- or only read and reap).
redis.register_function{ function_name = PL_FUNCTION_PREFIX .. "acquire", callback = pl_acquire }
redis.register_function{ function_name = PL_FUNCTION_PREFIX .. "release", callback = pl_release,
                         flags = { "allow-oom" } }
redis.register_function{ function_name = PL_FUNCTION_PREFIX .. "force_release", callback = pl_force_release,
                         flags = { "allow-oom" } }
redis.register_function{ function_name = PL_FUNCTION_PREFIX .. "renew", callback = pl_renew,
                         flags = { "allow-oom" } }
redis.register_function{ function_name = PL_FUNCTION_PREFIX .. "leave", callback = pl_leave,
                         flags = { "allow-oom" } }
redis.register_function{ function_name = PL_FUNCTION_PREFIX .. "list", callback = pl_list, flags = { "allow-oom" } }
redis.register_function{ function_name = PL_FUNCTION_PREFIX .. "probe", callback = pl_probe,
                         flags = { "no-writes" } }
redis.register_function{ function_name = PL_FUNCTION_PREFIX .. "held", callback = pl_held,
                         flags = { "no-writes" } }
