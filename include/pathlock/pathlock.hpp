// pathlock/pathlock.hpp: every public header of pathlock.
#pragma once

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
#include <pathlock/version.hpp>
