// The base of this library's backends (embedded, Redis, PostgreSQL): the
// public LockEngine calls check their input and count in one place, then
// call the backend's own step (non-virtual interface). A backend derives
// from BackendEngine, implements the do_* steps with input already checked
// (namespaces, paths resolved against the matrix, TTLs, limits, cursors),
// and waits through core::wait_for_grant with `instruments_` (src/README.md,
// "Adding a backend"). Engines from elsewhere still derive from LockEngine.
//
// Private to the library.
#pragma once

#include <pathlock/engine.hpp>

#include "core/observe.hpp"
#include "core/request.hpp"

#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

namespace pathlock::core {

class BackendEngine : public LockEngine {
 public:
  using LockEngine::blockers;
  using LockEngine::convert;
  using LockEngine::list;
  using LockEngine::renew;
  using LockEngine::waiters;

  AcquireResult acquire(const LockRequest& request) final { return acquire(request, std::stop_token{}); }
  AcquireResult acquire(const LockRequest& request, std::stop_token stop) final;
  AcquireResult convert(const ConvertRequest& request, std::stop_token stop) final;
  bool release(std::string_view ns, std::string_view id, std::string_view token) final;
  bool renew(std::string_view ns, std::string_view id, std::string_view token, std::optional<Millis> ttl) final;
  bool is_held(std::string_view ns, std::string_view id, std::string_view token) final;
  std::vector<LockInfo> list(std::string_view ns, std::string_view prefix) final;
  ListPage list_page(std::string_view ns, std::string_view prefix, std::size_t limit, std::string_view after) final;
  BlockersPage blockers(std::string_view ns, std::string_view op, const std::vector<Target>& targets,
                        std::size_t limit) final;
  BlockersPage blockers(const ConvertRequest& request, std::size_t limit) final;
  std::vector<WaiterInfo> waiters(std::string_view ns, std::string_view prefix, std::size_t limit) final;
  bool force_release(std::string_view ns, std::string_view id) final;
  void set_default_limits(const Limits& limits) final;
  void set_limits(std::string_view ns, const std::optional<Limits>& limits) final;
  LimitsStatus limits(std::string_view ns) final;
  const MatrixTable& matrix() const final { return matrix_; }
  std::shared_ptr<Metrics> metrics() const final { return instruments_.shared_metrics(); }

 protected:
  // Throws InvalidRequest when observe.metrics does not fit `matrix`.
  BackendEngine(const MatrixTable& matrix, const ObserveOptions& observe) : matrix_(matrix), instruments_(observe, matrix) {}

  // The backend's steps, each called once its input is checked. `request`
  // resolved is `req`; prefixes are canonical; `page` is the checked cursor.
  virtual AcquireResult do_acquire(const LockRequest& request, ResolvedRequest& req, std::stop_token stop) = 0;
  // Default: BackendError (a backend that does not convert yet).
  virtual AcquireResult do_convert(const ConvertRequest& request, ResolvedRequest& req, std::stop_token stop);
  virtual bool do_release(std::string_view ns, std::string_view id, std::string_view token) = 0;
  virtual bool do_force_release(std::string_view ns, std::string_view id) = 0;
  virtual bool do_renew(std::string_view ns, std::string_view id, std::string_view token,
                        std::optional<Millis> ttl) = 0;
  virtual bool do_is_held(std::string_view ns, std::string_view id, std::string_view token) = 0;
  // Default: list_page() with the largest limit until the last page.
  virtual std::vector<LockInfo> do_list(std::string_view ns, const std::string& prefix);
  virtual ListPage do_list_page(std::string_view ns, const PageQuery& page, std::size_t limit,
                                std::string_view after) = 0;
  virtual BlockersPage do_blockers(std::string_view ns, const ResolvedRequest& req, std::size_t limit) = 0;
  // The blockers of a conversion of lock `id` (request.fair: places in line
  // too). Default: BackendError (a backend that does not convert yet).
  virtual BlockersPage do_conversion_blockers(const ConvertRequest& request, const ResolvedRequest& req,
                                              std::size_t limit);
  virtual std::vector<WaiterInfo> do_waiters(std::string_view ns, const std::string& prefix, std::size_t limit) = 0;
  virtual void do_set_default_limits(const Limits& limits) = 0;
  virtual void do_set_limits(std::string_view ns, const std::optional<Limits>& limits) = 0;
  virtual LimitsStatus do_limits(std::string_view ns) = 0;

  const MatrixTable& matrix_;
  const Instruments instruments_;  // before a derived engine's members, which may count into it
};

}  // namespace pathlock::core
