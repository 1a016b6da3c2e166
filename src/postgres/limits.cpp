// Limits per namespace in the PostgreSQL backend (limits.hpp).
#include "postgres/limits.hpp"

#include "core/limits.hpp"
#include "postgres/values.hpp"

#include <fmt/format.h>

namespace pathlock::postgres {

namespace {

// The row of the default limits in pathlock.limits: a name no namespace
// can have (namespaces are [A-Za-z0-9._:-]).
constexpr const char* kDefaultRow = "*";

// The limits of a status cell in the text form; a malformed one (written
// by hand around the function's checks) reads as no limits.
Limits limits_of(const PGresult* r, int col) { return core::parse_limits(text(r, 0, col)).value_or(Limits{}); }

}  // namespace

const char* const kSetLimits = "SELECT pathlock.set_limits($1, $2)";
const char* const kLimitsStatus =
    "SELECT s_defaults, s_overrides, s_locks, s_places, s_owner_locks, s_owner FROM pathlock.limits_status($1)";

std::vector<Param> set_limits_params(std::optional<std::string_view> ns, const std::optional<Limits>& limits) {
  return {std::string(ns ? *ns : kDefaultRow), limits ? Param(core::limits_text(*limits)) : Param()};
}

LimitsStatus status_of(const PGresult* r) {
  LimitsStatus out;
  out.defaults = limits_of(r, 0);
  if (!is_null(r, 0, 1)) out.overrides = limits_of(r, 1);
  out.effective = out.overrides ? *out.overrides : out.defaults;
  out.locks = static_cast<std::uint64_t>(number(r, 0, 2));
  out.places = static_cast<std::uint64_t>(number(r, 0, 3));
  out.owner_locks = static_cast<std::uint64_t>(number(r, 0, 4));
  if (!is_null(r, 0, 5)) out.owner = text(r, 0, 5);
  return out;
}

AcquireResult over_limit_of(const PGresult* r, int col) {
  const std::string name = text(r, 0, col);
  const std::optional<LimitKind> kind = core::limit_kind(name);
  if (!kind) throw BackendError(fmt::format("postgres: pathlock.acquire replied over_limit '{}'", name));
  return core::over_limit(*kind, static_cast<std::uint64_t>(number(r, 0, col + 1)),
                          static_cast<std::uint64_t>(number(r, 0, col + 2)));
}

}  // namespace pathlock::postgres
