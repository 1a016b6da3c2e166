// pathlock/pathlock.hpp: every public header of the pathlock library
// (pathlock::pathlock) at once. Two public headers belong to other parts and
// are included by name: pathlock/matrix.hpp (the matrix files' library,
// pathlock::matrix) and pathlock/metrics_server.hpp (built only with
// PATHLOCK_WITH_METRICS_SERVER). tests/public_headers.py checks this list.
#pragma once

#include <pathlock/admin.hpp>
#include <pathlock/clock.hpp>
#include <pathlock/engine.hpp>
#include <pathlock/factory.hpp>
#include <pathlock/guard.hpp>
#include <pathlock/keeper.hpp>
#include <pathlock/matrix_table.hpp>
#include <pathlock/memory.hpp>
#include <pathlock/metrics.hpp>
#include <pathlock/path.hpp>
#include <pathlock/postgres.hpp>
#include <pathlock/redis.hpp>
#include <pathlock/redis_admin.hpp>
#include <pathlock/redis_secret.hpp>
#include <pathlock/redis_url.hpp>
#include <pathlock/version.hpp>
