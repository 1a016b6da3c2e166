// `pathlock redis load|libraries` (redis_cmd.hpp). Design: the RedisClient
// of the Redis backend finds the topology (standalone, Cluster, Sentinel)
// and its masters; each command then runs on every master in turn with
// call_on, since functions are per node. The library text is the one the
// engine would load (library_for of the same MatrixTable), so a service and
// `pathlock redis load` with the same matrix agree on its name.
#include "redis_cmd.hpp"

#include "matrix_cli.hpp"
#include "tls_flags.hpp"

#include <pathlock/engine.hpp>
#include <pathlock/matrix_table.hpp>

#include "common/options.hpp"

#ifdef PATHLOCK_CLI_WITH_REDIS
#include "redis/library.hpp"
#include "redis/redis_client.hpp"
#include "redis/redis_url.hpp"
#endif

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <ostream>

namespace pathlock::cli {

#ifdef PATHLOCK_CLI_WITH_REDIS
namespace {

using json = nlohmann::json;

std::unique_ptr<redis::RedisClient> client_from(const options::Parsed& opt) {
  return std::make_unique<redis::RedisClient>(client_options_from(opt));
}

bool already_exists(const redis::Reply& r) { return r.str.find("already exists") != std::string::npos; }

// FUNCTION LOAD on every master; one JSON line per master.
int load(const options::Parsed& opt, std::ostream& out) {
  const auto compiled = opt.has("matrix") ? load_matrix_option(opt.get("matrix")) : nullptr;
  const MatrixTable& table = compiled ? compiled->table() : default_matrix();
  const redis::Library lib = redis::library_for(table);
  auto client = client_from(opt);
  const bool cluster = client->mode() == redis::RedisClient::Mode::cluster;
  for (const redis::Endpoint& node : client->masters()) {
    const std::vector<std::string> argv{"FUNCTION", "LOAD", lib.code};
    const redis::Reply r = cluster ? client->call_on(node, argv) : client->call(argv);
    if (r.is_error() && !already_exists(r))
      client->fail(fmt::format("FUNCTION LOAD of {} on {} failed: {}", lib.name, node.describe(), r.str));
    out << json{{"node", node.describe()},
                {"library", lib.name},
                {"matrix", table.name},
                {"matrix_version", table.version},
                {"fingerprint", table.fingerprint},
                {"status", r.is_error() ? "already loaded" : "loaded"}}
               .dump()
        << "\n";
  }
  return options::kExitOk;
}

// The value of `field` in a RESP2 flat map [k1, v1, k2, v2, ...].
const redis::Reply* field_of(const redis::Reply& map, std::string_view field) {
  for (std::size_t i = 0; i + 1 < map.elements.size(); i += 2)
    if (map.elements[i].str == field) return &map.elements[i + 1];
  return nullptr;
}

// The library's line: its info function's reply as JSON, or null when the
// library has none (generated before info was added); "error" when the call
// failed. FCALL, not FCALL_RO: the administrator of docs/operations.md may
// run FCALL only, and info writes nothing either way.
json library_json(redis::RedisClient& client, const redis::Endpoint& node, bool cluster, const std::string& library,
                  const redis::Reply& listed) {
  json out{{"node", node.describe()}, {"library", library}, {"info", nullptr}};
  const redis::Reply* functions = field_of(listed, "functions");
  for (const redis::Reply& f : functions ? functions->elements : std::vector<redis::Reply>{}) {
    const redis::Reply* name = field_of(f, "name");
    if (!name || name->str.size() < 5 || name->str.compare(name->str.size() - 5, 5, "_info") != 0) continue;
    const std::vector<std::string> argv{"FCALL", name->str, "0"};
    const redis::Reply r = cluster ? client.call_on(node, argv) : client.call(argv);
    if (r.is_error() || r.elements.size() < 7 || r.at(0).str != "info") {
      out["error"] = r.is_error() ? r.str : "unexpected reply of " + name->str;
      return out;
    }
    out["info"] = json{{"library", r.at(1).str},     {"matrix", r.at(2).str}, {"matrix_version", r.at(3).str},
                       {"fingerprint", r.at(4).str}, {"layout", r.at(5).integer}, {"pathlock_version", r.at(6).str},
                       {"function_prefix", name->str.substr(0, name->str.size() - 4)}};
  }
  return out;
}

// FUNCTION LIST LIBRARYNAME pathlock_* (a glob) on every master; one JSON line per library.
int libraries(const options::Parsed& opt, std::ostream& out) {
  auto client = client_from(opt);
  const bool cluster = client->mode() == redis::RedisClient::Mode::cluster;
  for (const redis::Endpoint& node : client->masters()) {
    const std::vector<std::string> argv{"FUNCTION", "LIST", "LIBRARYNAME", "pathlock_*"};
    const redis::Reply r = cluster ? client->call_on(node, argv) : client->call(argv);
    if (r.is_error()) client->fail(fmt::format("FUNCTION LIST on {} failed: {}", node.describe(), r.str));
    for (const redis::Reply& library : r.elements) {
      const redis::Reply* name = field_of(library, "library_name");
      if (!name || name->str.rfind("pathlock_", 0) != 0) continue;
      out << library_json(*client, node, cluster, name->str, library).dump() << "\n";
    }
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
#else
int run_redis_command(const std::vector<std::string>&, std::ostream&, std::ostream& err) {
  err << "error: this pathlock was built without the Redis backend\n";
  return 1;
}
#endif

}  // namespace pathlock::cli
