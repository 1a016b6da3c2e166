// The Redis backend's operator reads (pathlock/admin.hpp: Inspector) and its
// library as an artifact (pathlock/redis_admin.hpp). Design: the namespace's
// meta hash (docs/lua-protocol.md#keys, layouts 3 and 4) says everything an
// operator needs during a rolling deploy: its layout, its last fence, and per
// matrix in use (tag T: "m:T" = fingerprint \0 name \0 version, "l:T" locks,
// "w:T" places in line). One HGETALL per namespace; namespaces are found with
// SCAN (COUNT 1000 per step; on a cluster on every master in turn, since SCAN
// sees only its node's keys). Older layouts are shown with what their meta
// records (layouts 1 and 2: one bound matrix, no counts). Only reads: a user
// with read rights only may run all of it but load_library.
#include <pathlock/admin.hpp>
#include <pathlock/redis_admin.hpp>

#include "core/request.hpp"
#include "redis/library.hpp"
#include "redis/redis_client.hpp"
#include <pathlock/redis_url.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace pathlock::redis {
namespace {

ClientOptions admin_client_options(const RedisOptions& o) {
  return ClientOptions{parse_redis_url(o.url, o.password), o.connect_timeout, o.command_timeout, 1, 0, o.tls, nullptr,
                       o.observe.log};
}

// Runs `argv` on master `node` (a Cluster) or through the client's routing
// (one server or a Sentinel's master, which follows a failover).
Reply on_master(RedisClient& client, const Endpoint& node, const std::vector<std::string>& argv) {
  return client.mode() == RedisClient::Mode::cluster ? client.call_on(node, argv) : client.call(argv);
}

// Per matrix tag, how many of the namespace's locks (zset "exp", records in
// "locks") or places in line ("wexp", "wrec") have ended by the server's
// clock but were not reaped yet. Records start with their tag: "T \0 ...".
std::map<std::string, long long> ended_by_tag(RedisClient& client, std::string_view ns, const char* zset,
                                             const char* records) {
  const Reply t = client.command({"TIME"});
  const long long now_ms = std::stoll(t.at(0).text()) * 1000 + std::stoll(t.at(1).text()) / 1000;
  const Reply ids =
      client.command({"ZRANGEBYSCORE", namespace_key(ns, zset), "-inf", std::to_string(now_ms), "LIMIT", "0", "100000"});
  std::map<std::string, long long> out;
  if (ids.elements.empty()) return out;
  std::vector<std::string> hmget{"HMGET", namespace_key(ns, records)};
  for (const Reply& id : ids.elements) hmget.push_back(id.str);
  for (const Reply& rec : client.command(hmget).elements)
    if (!rec.str.empty()) ++out[rec.str.substr(0, rec.str.find('\0'))];
  return out;
}

using Meta = std::map<std::string, std::string>;

// Layouts 3 and 4: the matrices with a live lock or place in line. meta
// counts every one not yet reaped; those that ended are subtracted.
std::vector<admin::MatrixInUse> tagged_matrices(RedisClient& client, std::string_view ns, const Meta& meta) {
  const std::map<std::string, long long> ended_locks = ended_by_tag(client, ns, "exp", "locks");
  const std::map<std::string, long long> ended_places = ended_by_tag(client, ns, "wexp", "wrec");
  const auto live = [&](const std::map<std::string, long long>& ended, const std::string& field) {
    const auto stored = meta.find(field);
    const auto it = ended.find(field.substr(2));
    const long long n = (stored == meta.end() ? 0 : std::stoll(stored->second)) - (it == ended.end() ? 0 : it->second);
    return static_cast<std::uint64_t>(std::max(0LL, n));
  };
  std::vector<admin::MatrixInUse> out;
  for (const auto& [field, value] : meta) {
    if (field.rfind("m:", 0) != 0) continue;
    const std::string tag = field.substr(2);
    const std::size_t z1 = value.find('\0'), z2 = value.find('\0', z1 + 1);
    admin::MatrixInUse m{std::stoi(tag), value.substr(0, z1),
                         z1 == std::string::npos ? "" : value.substr(z1 + 1, z2 - z1 - 1),
                         z2 == std::string::npos ? "" : value.substr(z2 + 1), live(ended_locks, "l:" + tag),
                         live(ended_places, "w:" + tag)};
    if (*m.locks == 0 && *m.waiters == 0) continue;  // only ended ones left: not in use
    out.push_back(std::move(m));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.tag < b.tag; });
  return out;
}

admin::NamespaceStatus status_of(RedisClient& client, std::string_view ns, const Meta& meta) {
  admin::NamespaceStatus out;
  out.ns = std::string(ns);
  if (meta.empty()) return out;
  out.exists = true;
  const auto field = [&](const char* name, const std::string& otherwise = "") {
    const auto it = meta.find(name);
    return it == meta.end() ? otherwise : it->second;
  };
  const std::string layout = field("layout", "1");
  out.layout = std::stoi(layout);
  if (meta.count("fence")) out.fence = std::stoull(field("fence"));
  // tags per matrix (4: the same meta as 3; "4.2": layout 4 whose keys expire)
  if (layout == "3" || layout == "4" || layout == kExpiringLayout)
    out.matrices = tagged_matrices(client, ns, meta);
  else if (meta.count("fingerprint"))  // layouts 1 and 2: one matrix, bound for good
    out.matrices.push_back({0, field("fingerprint"), field("matrix"), field("version"), std::nullopt, std::nullopt});
  return out;
}

class RedisInspector final : public admin::Inspector {
 public:
  explicit RedisInspector(const RedisOptions& options) : client_(admin_client_options(options)) {}

  void for_each_namespace(const std::function<bool(const std::string&)>& each) override {
    for (const Endpoint& node : client_.masters()) {
      std::string cursor = "0";
      do {
        const Reply r = on_master(client_, node, {"SCAN", cursor, "MATCH", namespace_key("*", "meta"), "COUNT", "1000"});
        if (r.is_error()) client_.fail(fmt::format("SCAN on {} failed: {}", node.describe(), r.str));
        cursor = r.at(0).text();
        for (const Reply& key : r.at(1).elements) {
          const std::string ns = namespace_of_key(key.str, "meta");
          if (!ns.empty() && !each(ns)) return;
        }
      } while (cursor != "0");
    }
  }

  admin::NamespaceStatus status(std::string_view ns) override {
    const Reply r = client_.command({"HGETALL", namespace_key(ns, "meta")});
    Meta meta;
    for (std::size_t i = 0; i + 1 < r.elements.size(); i += 2) meta[r.elements[i].str] = r.elements[i + 1].str;
    return status_of(client_, ns, meta);
  }

  // A namespace that was never used has no meta key (no lock call ever
  // deletes it). Asked on the node that owns the namespace's slot.
  bool exists(std::string_view ns) override { return client_.command({"EXISTS", namespace_key(ns, "meta")}).integer != 0; }

 private:
  RedisClient client_;
};

}  // namespace

std::unique_ptr<admin::Inspector> make_redis_inspector(const RedisOptions& options) {
  return std::make_unique<RedisInspector>(options);
}

}  // namespace pathlock::redis

namespace pathlock::redis_admin {

using redis::Endpoint;
using redis::Reply;

std::vector<LibraryLoad> load_library(const RedisOptions& options) {
  const redis::Library lib = redis::library_for(options.matrix ? *options.matrix : default_matrix());
  redis::RedisClient client(redis::admin_client_options(options));
  std::vector<LibraryLoad> out;
  for (const Endpoint& node : client.masters()) {
    const Reply r = redis::on_master(client, node, {"FUNCTION", "LOAD", lib.code});
    const bool exists = r.is_error() && r.str.find("already exists") != std::string::npos;
    if (r.is_error() && !exists)
      client.fail(fmt::format("FUNCTION LOAD of {} on {} failed: {}", lib.name, node.describe(), r.str));
    out.push_back({node.describe(), lib.name, exists});
  }
  return out;
}

namespace {

// The value of `field` in a RESP2 flat map [k1, v1, k2, v2, ...].
const Reply* field_of(const Reply& map, std::string_view field) {
  for (std::size_t i = 0; i + 1 < map.elements.size(); i += 2)
    if (map.elements[i].str == field) return &map.elements[i + 1];
  return nullptr;
}

// The library `listed` (an element of FUNCTION LIST) with its info function's answer.
ServerLibrary library_of(redis::RedisClient& client, const Endpoint& node, const std::string& library,
                         const Reply& listed) {
  ServerLibrary out{node.describe(), library, std::nullopt, ""};
  const Reply* functions = field_of(listed, "functions");
  for (const Reply& f : functions ? functions->elements : std::vector<Reply>{}) {
    const Reply* name = field_of(f, "name");
    if (!name || name->str.size() < 5 || name->str.compare(name->str.size() - 5, 5, "_info") != 0) continue;
    const Reply r = redis::on_master(client, node, {"FCALL", name->str, "0"});
    if (r.is_error() || r.elements.size() < 7 || r.at(0).str != "info") {
      out.info.reset();
      out.error = r.is_error() ? r.str : "unexpected reply of " + name->str;
      return out;
    }
    out.info = LibraryInfo{r.at(1).str, r.at(2).str,     r.at(3).str, r.at(4).str,
                           r.at(5).integer, r.at(6).str, name->str.substr(0, name->str.size() - 4)};
  }
  return out;
}

}  // namespace

std::string key_pattern(std::string_view namespace_prefix) {
  if (!namespace_prefix.empty()) core::check_namespace(namespace_prefix);  // a prefix of a name is a name
  return redis::namespaces_key_pattern(namespace_prefix);
}

std::vector<ServerLibrary> list_libraries(const RedisOptions& options) {
  redis::RedisClient client(redis::admin_client_options(options));
  std::vector<ServerLibrary> out;
  for (const Endpoint& node : client.masters()) {
    const Reply r = redis::on_master(client, node, {"FUNCTION", "LIST", "LIBRARYNAME", "pathlock_*"});
    if (r.is_error()) client.fail(fmt::format("FUNCTION LIST on {} failed: {}", node.describe(), r.str));
    for (const Reply& library : r.elements) {
      const Reply* name = field_of(library, "library_name");
      if (name && name->str.rfind("pathlock_", 0) == 0) out.push_back(library_of(client, node, name->str, library));
    }
  }
  return out;
}

}  // namespace pathlock::redis_admin
