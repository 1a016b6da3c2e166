// The checks and counts every backend shares (backend_engine.hpp).
#include "core/backend_engine.hpp"

#include "core/limits.hpp"

#include <pathlock/metrics.hpp>

namespace pathlock::core {

AcquireResult BackendEngine::acquire(const LockRequest& request, std::stop_token stop) {
  ResolvedRequest req = resolve_request(matrix_, request);
  return do_acquire(request, req, std::move(stop));
}

// MetricsSnapshot::conversions is indexed by AcquireOutcome, then an error.
static_assert(static_cast<std::size_t>(AcquireOutcome::would_deadlock) + 1 == kConversionError);

AcquireResult BackendEngine::convert(const ConvertRequest& request, std::stop_token stop) {
  ResolvedRequest req = resolve_convert(matrix_, request);
  Metrics* m = instruments_.metrics();
  try {
    AcquireResult out = do_convert(request, req, std::move(stop));
    if (m) m->count_conversion(static_cast<std::size_t>(out.outcome));
    return out;
  } catch (...) {
    if (m) m->count_conversion(kConversionError);
    throw;
  }
}

AcquireResult BackendEngine::do_convert(const ConvertRequest&, ResolvedRequest&, std::stop_token) {
  throw BackendError(
      "this backend does not convert locks (an engine of one's own implements do_convert; docs/changes.md, 1.1.0)");
}

bool BackendEngine::release(std::string_view ns, std::string_view id, std::string_view token) {
  check_namespace(ns);
  const bool ok = do_release(ns, id, token);
  instruments_.released(ns, id, ok, false);
  return ok;
}

bool BackendEngine::force_release(std::string_view ns, std::string_view id) {
  check_namespace(ns);
  const bool ok = do_force_release(ns, id);
  instruments_.released(ns, id, ok, true);
  return ok;
}

bool BackendEngine::renew(std::string_view ns, std::string_view id, std::string_view token,
                          std::optional<Millis> ttl) {
  check_namespace(ns);
  if (ttl) check_ttl(*ttl);
  const bool ok = do_renew(ns, id, token, ttl);
  instruments_.renewed(ns, id, ok);
  return ok;
}

bool BackendEngine::is_held(std::string_view ns, std::string_view id, std::string_view token) {
  check_namespace(ns);
  return do_is_held(ns, id, token);
}

std::vector<LockInfo> BackendEngine::list(std::string_view ns, std::string_view prefix) {
  check_namespace(ns);
  return do_list(ns, resolve_prefix(prefix));
}

std::vector<LockInfo> BackendEngine::do_list(std::string_view ns, const std::string& prefix) {
  return list_by_pages(*this, ns, prefix);
}

ListPage BackendEngine::list_page(std::string_view ns, std::string_view prefix, std::size_t limit,
                                  std::string_view after) {
  const PageQuery page = check_list_page(ns, prefix, limit, after);
  return do_list_page(ns, page, limit, after);
}

BlockersPage BackendEngine::blockers(std::string_view ns, std::string_view op, const std::vector<Target>& targets,
                                     std::size_t limit) {
  const ResolvedRequest req = resolve_dry_run(matrix_, ns, op, targets, limit, kMaxBlockers);
  return do_blockers(ns, req, limit);
}

BlockersPage BackendEngine::blockers(const ConvertRequest& request, std::size_t limit) {
  const ResolvedRequest req = resolve_conversion_dry_run(matrix_, request, limit, kMaxBlockers);
  return do_conversion_blockers(request, req, limit);
}

BlockersPage BackendEngine::do_conversion_blockers(const ConvertRequest&, const ResolvedRequest&, std::size_t) {
  throw BackendError("this backend does not convert locks (an engine of one's own implements do_conversion_blockers; "
                     "docs/changes.md, 1.1.0)");
}

std::vector<WaiterInfo> BackendEngine::waiters(std::string_view ns, std::string_view prefix, std::size_t limit) {
  check_namespace(ns);
  const std::string canonical = resolve_prefix(prefix);
  check_limit(limit, kMaxWaiters);
  return do_waiters(ns, canonical, limit);
}

void BackendEngine::set_default_limits(const Limits& limits) {
  check_limits(limits);
  do_set_default_limits(limits);
}

void BackendEngine::set_limits(std::string_view ns, const std::optional<Limits>& limits) {
  check_namespace(ns);
  if (limits) check_limits(*limits);
  do_set_limits(ns, limits);
}

LimitsStatus BackendEngine::limits(std::string_view ns) {
  check_namespace(ns);
  return do_limits(ns);
}

}  // namespace pathlock::core
