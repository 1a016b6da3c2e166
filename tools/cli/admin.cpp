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

#include "common/options.hpp"

#ifdef PATHLOCK_CLI_WITH_REDIS
#include "redis/redis_client.hpp"
#include "redis/redis_url.hpp"
#endif

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <ostream>
#include <vector>

namespace pathlock::cli {

#ifdef PATHLOCK_CLI_WITH_REDIS
namespace {

// "pl:{NS}:meta" -> "NS" ("" if the key is not a namespace's meta).
std::string namespace_of(const std::string& key) {
  if (key.size() < 10 || key.rfind("pl:{", 0) != 0 || key.compare(key.size() - 6, 6, "}:meta") != 0) return "";
  return key.substr(4, key.size() - 10);
}

// Per matrix tag, how many of the namespace's locks (zset "exp", records in
// "locks") or places in line ("wexp", "wrec") have ended by the server's
// clock but were not reaped yet (no call came since). Records start with
// their tag: "T \0 ...".
std::map<std::string, long long> ended_by_tag(redis::RedisClient& client, const std::string& ns, const char* zset,
                                             const char* records) {
  const redis::Reply t = client.command({"TIME"});
  const long long now_ms = std::stoll(t.at(0).text()) * 1000 + std::stoll(t.at(1).text()) / 1000;
  const redis::Reply ids = client.command({"ZRANGEBYSCORE", fmt::format("pl:{{{}}}:{}", ns, zset), "-inf",
                                           std::to_string(now_ms), "LIMIT", "0", "100000"});
  std::map<std::string, long long> out;
  if (ids.elements.empty()) return out;
  std::vector<std::string> hmget{"HMGET", fmt::format("pl:{{{}}}:{}", ns, records)};
  for (const redis::Reply& id : ids.elements) hmget.push_back(id.str);
  for (const redis::Reply& rec : client.command(hmget).elements)
    if (!rec.str.empty()) ++out[rec.str.substr(0, rec.str.find('\0'))];
  return out;
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
  if (layout == "3" || layout == "4") {  // tags per matrix (4: same meta as 3)
    // meta counts every lock and place not yet reaped; those whose lease or
    // reservation ended are subtracted, so only live ones are counted.
    const std::map<std::string, long long> ended_locks = ended_by_tag(client, ns, "exp", "locks");
    const std::map<std::string, long long> ended_places = ended_by_tag(client, ns, "wexp", "wrec");
    const auto live = [&](const std::map<std::string, long long>& ended, const std::string& field,
                          const std::string& tag) {
      const long long stored = meta.count(field + tag) ? std::stoll(meta[field + tag]) : 0;
      const auto it = ended.find(tag);
      return std::max(0LL, stored - (it == ended.end() ? 0 : it->second));
    };
    for (const auto& [field, value] : meta) {
      if (field.rfind("m:", 0) != 0) continue;
      const std::string tag = field.substr(2);
      const std::size_t z1 = value.find('\0'), z2 = value.find('\0', z1 + 1);
      nlohmann::json m{{"tag", std::stoi(tag)},
                       {"fingerprint", value.substr(0, z1)},
                       {"name", z1 == std::string::npos ? "" : value.substr(z1 + 1, z2 - z1 - 1)},
                       {"version", z2 == std::string::npos ? "" : value.substr(z2 + 1)},
                       {"locks", live(ended_locks, "l:", tag)},
                       {"waiters", live(ended_places, "w:", tag)}};
      if (m["locks"] == 0 && m["waiters"] == 0) continue;  // only expired ones left: not in use
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

void for_each_namespace(redis::RedisClient& client, const std::function<bool(const std::string&)>& each) {
  // A cluster's masters in turn; otherwise the one server, with the client's
  // routing (which follows a Sentinel failover).
  const bool cluster = client.mode() == redis::RedisClient::Mode::cluster;
  for (const redis::Endpoint& node : client.masters()) {
    std::string cursor = "0";
    do {
      const std::vector<std::string> scan{"SCAN", cursor, "MATCH", "pl:{*}:meta", "COUNT", "1000"};
      const redis::Reply r = cluster ? client.call_on(node, scan) : client.call(scan);
      if (r.is_error()) client.fail(fmt::format("SCAN on {} failed: {}", node.describe(), r.str));
      cursor = r.at(0).text();
      for (const redis::Reply& key : r.at(1).elements) {
        const std::string ns = namespace_of(key.str);
        if (!ns.empty() && !each(ns)) return;
      }
    } while (cursor != "0");
  }
}

std::function<std::vector<std::string>()> redis_namespace_lister(const options::Parsed& opt) {
  auto client = std::make_shared<redis::RedisClient>(client_options_from(opt));
  auto mu = std::make_shared<std::mutex>();
  return [client, mu] {
    std::vector<std::string> all;
    std::lock_guard lock(*mu);
    for_each_namespace(*client, [&](const std::string& ns) {
      all.push_back(ns);
      return all.size() < 100000;
    });
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    return all;
  };
}
#else
std::function<std::vector<std::string>()> redis_namespace_lister(const options::Parsed&) {
  throw InvalidRequest("this pathlock was built without the Redis backend");
}
#endif

int run_admin(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (!args.empty() && (args[0] == "why" || args[0] == "locks" || args[0] == "waiters" || args[0] == "force-release" ||
                         args[0] == "top")) {
#ifdef PATHLOCK_CLI_WITH_REDIS
    try {
      return run_admin_op(args, out, err);
    } catch (const options::UsageError& e) {
      err << "error: " << e.what() << "\nusage:\n" << kAdminUsage;
      return options::kExitUsage;
    }
#else
    err << "error: this pathlock was built without the Redis backend\n";
    return options::kExitFailure;
#endif
  }
  if (args.empty() || args[0] != "status") {
    err << "usage:\n" << kAdminUsage;
    return options::kExitUsage;
  }
  options::Parsed opt;
  try {
    options::Options table =
        options::Options{}.command("admin status").required("redis").value("namespace").number("limit", 1, 1000000000);
    opt = with_tls(table).parse(std::vector<std::string>(args.begin() + 1, args.end()));
  } catch (const options::UsageError& e) {
    err << "error: " << e.what() << "\n";
    return options::kExitUsage;
  }
#ifdef PATHLOCK_CLI_WITH_REDIS
  const long long limit = opt.number_or("limit", 10000);
  redis::RedisClient client(client_options_from(opt));
  if (opt.has("namespace")) {
    out << status_of(client, opt.get("namespace")).dump() << "\n";
    return options::kExitOk;
  }
  long long shown = 0;
  bool truncated = false;
  for_each_namespace(client, [&](const std::string& ns) {
    if (shown == limit) {
      truncated = true;
      return false;
    }
    out << status_of(client, ns).dump() << "\n";
    ++shown;
    return true;
  });
  if (truncated) out << nlohmann::json{{"truncated", true}, {"limit", limit}}.dump() << "\n";
  return 0;
#else
  err << "error: this pathlock was built without the Redis backend\n";
  return options::kExitFailure;
#endif
}

}  // namespace pathlock::cli
