// `pathlock redis load|libraries` (redis_cmd.hpp). Design: the public
// pathlock/redis_admin.hpp finds the topology (standalone, Cluster,
// Sentinel) and runs each command on every master, since functions are per
// node; the library is the one the engine would load for the same
// MatrixTable, so a service and `pathlock redis load` with the same matrix
// agree on its name. This file only prints.
#include "redis_cmd.hpp"

#include "matrix_cli.hpp"
#include "tls_flags.hpp"

#include <pathlock/engine.hpp>
#include <pathlock/matrix_table.hpp>
#include <pathlock/redis_admin.hpp>

#include "common/options.hpp"

#include <nlohmann/json.hpp>

#include <ostream>

namespace pathlock::cli {
namespace {

using json = nlohmann::json;

// FUNCTION LOAD on every master; one JSON line per master.
int load(const options::Parsed& opt, std::ostream& out) {
  const auto compiled = opt.has("matrix") ? load_matrix_option(opt.get("matrix")) : nullptr;
  const MatrixTable& table = compiled ? compiled->table() : default_matrix();
  RedisOptions ro = redis_options_from(opt);
  ro.matrix = &table;
  for (const redis_admin::LibraryLoad& l : redis_admin::load_library(ro))
    out << json{{"node", l.node},
                {"library", l.library},
                {"matrix", table.name},
                {"matrix_version", table.version},
                {"fingerprint", table.fingerprint},
                {"status", l.already_loaded ? "already loaded" : "loaded"}}
               .dump()
        << "\n";
  return options::kExitOk;
}

// One JSON line per library named pathlock_* on every master: its info
// function's reply, or null when the library has none (generated before
// info was added); "error" when the call failed.
int libraries(const options::Parsed& opt, std::ostream& out) {
  for (const redis_admin::ServerLibrary& l : redis_admin::list_libraries(redis_options_from(opt))) {
    json line{{"node", l.node}, {"library", l.library}, {"info", nullptr}};
    if (!l.error.empty()) line["error"] = l.error;
    if (l.info)
      line["info"] = json{{"library", l.info->library},
                          {"matrix", l.info->matrix},
                          {"matrix_version", l.info->matrix_version},
                          {"fingerprint", l.info->fingerprint},
                          {"layout", l.info->layout},
                          {"pathlock_version", l.info->pathlock_version},
                          {"function_prefix", l.info->function_prefix}};
    out << line.dump() << "\n";
  }
  return options::kExitOk;
}

}  // namespace

int run_redis_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  const bool is_load = !args.empty() && args[0] == "load";
  if (args.empty() || (!is_load && args[0] != "libraries")) {
    err << "usage:\n" << kRedisUsage;
    return options::kExitUsage;
  }
  options::Options table = options::Options{}.command("redis " + args[0]).required("redis");
  if (is_load) table.value("matrix");
  const options::Parsed opt = with_tls(table).parse(std::vector<std::string>(args.begin() + 1, args.end()));
  return is_load ? load(opt, out) : libraries(opt, out);
}

}  // namespace pathlock::cli
