// `pathlock admin status` (admin.hpp). Design: the namespace's meta hash
// (docs/lua-protocol.md, layout 3) says everything an operator needs during
// a rolling deploy: its layout, its last fence, and per matrix in use
// (tag t: "m:T" = fingerprint \0 name \0 version, "l:T" locks, "w:T" places
// in line). One HGETALL per namespace; namespaces are found with SCAN
// (cursor-based, COUNT 1000 per step; on a cluster on every master in turn,
// since SCAN sees only its node's keys) and at most --limit of them are
// shown, so the command does bounded work on a big server. Older layouts are shown
// with what their meta records (layout 2: one bound matrix, no counts).
#include "admin.hpp"
#include "tls_flags.hpp"

#include <pathlock/engine.hpp>

#ifdef PATHLOCK_CLI_WITH_REDIS
#include "redis/redis_client.hpp"
#include "redis/redis_url.hpp"
#endif

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <ostream>

namespace pathlock::cli {

#ifdef PATHLOCK_CLI_WITH_REDIS
namespace {

// "pl:{NS}:meta" -> "NS" ("" if the key is not a namespace's meta).
std::string namespace_of(const std::string& key) {
  if (key.size() < 10 || key.rfind("pl:{", 0) != 0 || key.compare(key.size() - 6, 6, "}:meta") != 0) return "";
  return key.substr(4, key.size() - 10);
}

nlohmann::json status_of(redis::RedisClient& client, const std::string& ns) {
  const redis::Reply r = client.command({"HGETALL", fmt::format("pl:{{{}}}:meta", ns)});
  std::map<std::string, std::string> meta;
  for (std::size_t i = 0; i + 1 < r.elements.size(); i += 2) meta[r.elements[i].str] = r.elements[i + 1].str;
  nlohmann::json out{{"namespace", ns}};
  if (meta.empty()) {
    out["exists"] = false;
    return out;
  }
  const std::string layout = meta.count("layout") ? meta["layout"] : "1";
  out["layout"] = std::stoi(layout);
  if (meta.count("fence")) out["fence"] = std::stoull(meta["fence"]);
  nlohmann::json matrices = nlohmann::json::array();
  if (layout == "3") {
    for (const auto& [field, value] : meta) {
      if (field.rfind("m:", 0) != 0) continue;
      const std::string tag = field.substr(2);
      const std::size_t z1 = value.find('\0'), z2 = value.find('\0', z1 + 1);
      nlohmann::json m{{"tag", std::stoi(tag)},
                       {"fingerprint", value.substr(0, z1)},
                       {"name", z1 == std::string::npos ? "" : value.substr(z1 + 1, z2 - z1 - 1)},
                       {"version", z2 == std::string::npos ? "" : value.substr(z2 + 1)},
                       {"locks", meta.count("l:" + tag) ? std::stoll(meta["l:" + tag]) : 0},
                       {"waiters", meta.count("w:" + tag) ? std::stoll(meta["w:" + tag]) : 0}};
      matrices.push_back(std::move(m));
    }
    std::sort(matrices.begin(), matrices.end(),
              [](const nlohmann::json& a, const nlohmann::json& b) { return a["tag"] < b["tag"]; });
  } else if (meta.count("fingerprint")) {  // layouts 1 and 2: one matrix, bound for good
    matrices.push_back({{"fingerprint", meta["fingerprint"]},
                        {"name", meta.count("matrix") ? meta["matrix"] : ""},
                        {"version", meta.count("version") ? meta["version"] : ""}});
  }
  out["matrices"] = std::move(matrices);
  return out;
}

}  // namespace
#endif

int run_admin(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::map<std::string, std::string> opt;
  if (args.empty() || args[0] != "status") {
    err << "usage:\n" << kAdminUsage;
    return 2;
  }
  for (std::size_t i = 1; i < args.size(); i += 2) {
    if (args[i].rfind("--", 0) != 0 || i + 1 >= args.size() || !opt.emplace(args[i].substr(2), args[i + 1]).second) {
      err << "usage:\n" << kAdminUsage;
      return 2;
    }
  }
  for (const auto& [k, v] : opt)
    if (k != "redis" && k != "namespace" && k != "limit" && !is_tls_flag(k)) {
      err << fmt::format("error: unknown option --{}\n", k);
      return 2;
    }
  if (!opt.count("redis")) {
    err << "error: admin status needs --redis URL\n";
    return 2;
  }
#ifdef PATHLOCK_CLI_WITH_REDIS
  long limit = 10000;
  try {
    if (opt.count("limit")) limit = std::stol(opt["limit"]);
  } catch (const std::exception&) {
    limit = 0;
  }
  if (limit < 1) {
    err << "error: --limit must be a positive integer\n";
    return 2;
  }
  redis::ClientOptions co;
  co.url = redis::parse_redis_url(opt["redis"]);
  co.tls = tls_from_flags(opt);
  co.pool_size = 1;
  redis::RedisClient client(co);
  if (opt.count("namespace")) {
    out << status_of(client, opt["namespace"]).dump() << "\n";
    return 0;
  }
  // A cluster's masters in turn; otherwise the one server, with the client's
  // routing (which follows a Sentinel failover).
  const bool cluster = client.mode() == redis::RedisClient::Mode::cluster;
  long shown = 0;
  for (const redis::Endpoint& node : client.masters()) {
    std::string cursor = "0";
    do {
      const std::vector<std::string> scan{"SCAN", cursor, "MATCH", "pl:{*}:meta", "COUNT", "1000"};
      const redis::Reply r = cluster ? client.call_on(node, scan) : client.call(scan);
      if (r.is_error()) client.fail(fmt::format("SCAN on {} failed: {}", node.describe(), r.str));
      cursor = r.at(0).text();
      for (const redis::Reply& key : r.at(1).elements) {
        const std::string ns = namespace_of(key.str);
        if (ns.empty()) continue;
        if (shown == limit) {
          out << nlohmann::json{{"truncated", true}, {"limit", limit}}.dump() << "\n";
          return 0;
        }
        out << status_of(client, ns).dump() << "\n";
        ++shown;
      }
    } while (cursor != "0");
  }
  return 0;
#else
  err << "error: this pathlock was built without the Redis backend\n";
  return 1;
#endif
}

}  // namespace pathlock::cli
