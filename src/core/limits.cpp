// Limits per namespace: the text form and the checks (limits.hpp).
#include "core/limits.hpp"

#include <fmt/format.h>

#include <charconv>

namespace pathlock::core {

namespace {

constexpr LimitKind kKinds[] = {LimitKind::locks, LimitKind::places, LimitKind::owner_locks};

std::optional<std::uint64_t>& slot(Limits& l, LimitKind kind) {
  return kind == LimitKind::locks ? l.locks : kind == LimitKind::places ? l.places : l.owner_locks;
}

}  // namespace

std::optional<std::uint64_t> limit_of(const Limits& limits, LimitKind kind) {
  return slot(const_cast<Limits&>(limits), kind);
}

void check_limits(const Limits& limits) {
  for (LimitKind k : kKinds) {
    const auto v = limit_of(limits, k);
    if (v && *v > kMaxLimit) {
      throw InvalidRequest(fmt::format("limit {} must be 0..{}, got {}", limit_name(k), kMaxLimit, *v));
    }
  }
}

std::string limits_text(const Limits& limits) {
  std::string out;
  for (LimitKind k : kKinds) {
    const auto v = limit_of(limits, k);
    if (!out.empty()) out += ' ';
    out += v ? std::to_string(*v) : std::string("-");
  }
  return out;
}

std::optional<Limits> parse_limits(std::string_view text) {
  Limits out;
  std::size_t at = 0;
  for (LimitKind k : kKinds) {
    if (at > text.size()) return std::nullopt;
    std::size_t end = text.find(' ', at);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view field = text.substr(at, end - at);
    if (field != "-") {
      if (field.empty() || field.size() > 10) return std::nullopt;
      std::uint64_t v = 0;
      auto [p, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
      if (ec != std::errc{} || p != field.data() + field.size() || v > kMaxLimit) return std::nullopt;
      slot(out, k) = v;
    }
    at = end + 1;
  }
  if (at != text.size() + 1) return std::nullopt;
  return out;
}

std::optional<LimitKind> limit_kind(std::string_view name) {
  for (LimitKind k : kKinds) {
    if (limit_name(k) == name) return k;
  }
  return std::nullopt;
}

AcquireResult over_limit(LimitKind kind, std::uint64_t max, std::uint64_t count) {
  AcquireResult out;
  out.outcome = AcquireOutcome::over_limit;
  out.limit = LimitRefusal{kind, max, count};
  return out;
}

}  // namespace pathlock::core
