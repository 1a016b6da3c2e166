// `pathlock admin status` (admin.hpp). Design: the backend's
// admin::Inspector (pathlock/admin.hpp) finds the namespaces (bounded work
// per step) and reads each one's status; at most --limit of them are shown,
// so the command does bounded work on a big server. This file only prints.
#include "admin.hpp"
#include "json_codec.hpp"
#include "tls_flags.hpp"

#include <pathlock/admin.hpp>

#include "common/options.hpp"

#include <nlohmann/json.hpp>

#include <memory>
#include <mutex>
#include <ostream>

namespace pathlock::cli {

options::Options& with_backend(options::Options& table) {
  table.value("backend", [](const std::string& v) { parse_backend(v); }).value("redis");
  return with_tls(with_postgres(table));
}

EngineOptions backend_from(const options::Parsed& p, bool require_url) {
  EngineOptions o = engine_options_from(p, Backend::redis);
  if (require_url && o.backend == Backend::redis && !p.has("redis")) throw options::UsageError("--redis is required");
  o.redis.pool_size = 1;  // one command at a time
  o.postgres.pool_size = 1;
  return o;
}

std::function<std::vector<std::string>()> namespace_lister(const options::Parsed& opt) {
  std::shared_ptr<admin::Inspector> inspector = admin::make_inspector(backend_from(opt, false));
  auto mu = std::make_shared<std::mutex>();
  return [inspector, mu] {
    std::lock_guard lock(*mu);
    return admin::list_namespaces(*inspector, 100000).namespaces;
  };
}

namespace {

int status(const options::Parsed& opt, std::ostream& out) {
  const auto limit = static_cast<std::size_t>(opt.number_or("limit", 10000));
  // A malformed name exits 1 before connecting, as in the other admin commands.
  if (opt.has("namespace")) admin::check_namespace(opt.get("namespace"));
  const std::unique_ptr<admin::Inspector> inspector = admin::make_inspector(backend_from(opt));
  if (opt.has("namespace")) {
    out << json_codec::namespace_status(inspector->status(opt.get("namespace"))).dump() << "\n";
    return options::kExitOk;
  }
  std::size_t shown = 0;
  bool truncated = false;
  inspector->for_each_namespace([&](const std::string& ns) {
    if (shown == limit) return !(truncated = true);
    out << json_codec::namespace_status(inspector->status(ns)).dump() << "\n";
    ++shown;
    return true;
  });
  if (truncated) out << nlohmann::json{{"truncated", true}, {"limit", limit}}.dump() << "\n";
  return options::kExitOk;
}

}  // namespace

int run_admin(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (!args.empty() && is_admin_op(args[0])) {
    try {
      return run_admin_op(args, out, err);
    } catch (const options::UsageError& e) {
      err << "error: " << e.what() << "\nusage:\n" << kAdminUsage;
      return options::kExitUsage;
    }
  }
  if (args.empty() || args[0] != "status") {
    err << "usage:\n" << kAdminUsage;
    return options::kExitUsage;
  }
  options::Parsed opt;
  try {
    options::Options table = options::Options{}.command("admin status").value("namespace").number("limit", 1, 1000000000);
    opt = with_backend(table).parse(std::vector<std::string>(args.begin() + 1, args.end()));
    (void)backend_from(opt);  // --redis missing: bad usage, before connecting
  } catch (const options::UsageError& e) {
    err << "error: " << e.what() << "\n";
    return options::kExitUsage;
  }
  return status(opt, out);
}

}  // namespace pathlock::cli
