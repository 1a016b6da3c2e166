// Limits per namespace (engine.hpp: Limits, LockEngine::set_limits), the
// parts every backend shares. Private to the library.
//
// The text form, used by the Redis library (acquire's default_limits
// argument, meta's `lim` field, the `pl:limits` key) and by PostgreSQL's
// functions: three fields separated by one space, in the order locks,
// places, owner_locks, each decimal digits (1..10 of them, at most
// kMaxLimit) or "-" for no limit. "- - -" is a record without limits; an
// empty text is no record.
#pragma once

#include <pathlock/engine.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace pathlock::core {

// Throws InvalidRequest naming the field above kMaxLimit.
void check_limits(const Limits& limits);
// "L P O" (see above).
std::string limits_text(const Limits& limits);
// The limits of a text as limits_text writes it; nullopt for "" and for
// anything malformed (read as no record).
std::optional<Limits> parse_limits(std::string_view text);
// The limit of `kind` in `limits`.
std::optional<std::uint64_t> limit_of(const Limits& limits, LimitKind kind);
// "locks" etc. back to the kind; nullopt for another name.
std::optional<LimitKind> limit_kind(std::string_view name);

// An AcquireResult refused by `kind` at `max` with `count`.
AcquireResult over_limit(LimitKind kind, std::uint64_t max, std::uint64_t count);

}  // namespace pathlock::core
