// A local 3 + 3 Redis Cluster; see redis_cluster.hpp.
#include "redis_devtools/redis_cluster.hpp"

#include <chrono>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <thread>
#include <tuple>

namespace pathlock::devtools {
namespace {

using Clock = std::chrono::steady_clock;

// Each node's view of who serves which slot range: "start-end:port;...".
std::string slots_view(const RedisServer& node) {
  const RedisReply r = node.command({"CLUSTER", "SLOTS"});
  if (r.type != RedisReply::Type::array) return "error: " + r.str;
  std::map<long long, std::string> ranges;
  for (const RedisReply& range : r.elements) {
    std::string entry = std::to_string(range.elements.at(1).integer) + ":" +
                        std::to_string(range.elements.at(2).elements.at(1).integer);
    ranges[range.elements.at(0).integer] = entry;
  }
  std::string out;
  for (const auto& [start, entry] : ranges) out += std::to_string(start) + "-" + entry + ";";
  return out;
}

bool cluster_ok(const RedisServer& node) {
  return node.command({"CLUSTER", "INFO"}).str.find("cluster_state:ok") != std::string::npos;
}

template <class Ready>
void wait_for(const char* what, Ready&& ready) {
  devtools::wait_for("redis cluster", what, std::forward<Ready>(ready));
}

// One node on free ports. The bus port (and the TLS port) are chosen here,
// so RedisServer's own retries would reuse them: when one was taken
// meanwhile (another server started by a parallel test), start again with
// other ports, in a fresh folder (its nodes.conf names the old ones).
std::unique_ptr<RedisServer> start_node(const TlsCertificates* tls) {
  for (int attempt = 0;; ++attempt) {
    std::vector<std::string> args{"--cluster-enabled",     "yes",        "--cluster-port",
                                  std::to_string(free_loopback_port()), "--cluster-node-timeout", "2000",
                                  "--cluster-config-file", "nodes.conf", "--repl-diskless-sync-delay",
                                  "0"};
    if (tls) {
      const std::vector<std::string> t = tls->server_args(free_loopback_port());
      args.insert(args.end(), t.begin(), t.end());
      args.insert(args.end(), {"--tls-cluster", "yes", "--tls-replication", "yes"});
    }
    try {
      return std::make_unique<RedisServer>(args);
    } catch (const std::runtime_error&) {
      if (attempt == 4) throw;
    }
  }
}

}  // namespace

ClusterServers::ClusterServers(const TlsCertificates* tls) : SeedListDeployment("redis", "rediss") {
  for (int i = 0; i < 6; ++i) nodes_.push_back(start_node(tls));
  const char* env_cli = std::getenv("PATHLOCK_REDIS_CLI");
  std::vector<std::string> create{env_cli && *env_cli ? env_cli : "redis-cli", "--cluster", "create"};
  for (const auto& n : nodes_) create.push_back("127.0.0.1:" + std::to_string(n->port()));
  create.insert(create.end(), {"--cluster-replicas", "1", "--cluster-yes"});
  std::string output;
  const int status = run_program(create, output);
  if (status != 0) throw std::runtime_error("redis-cli --cluster create failed (" + std::to_string(status) + "):\n" + output);
  wait_until_agreed();
  // Every master has its replica attached and in sync (WAIT and failover
  // tests need it). Not CLUSTER SLOTS: it lists a replica only once its
  // replication offset, gossiped, is above 0, which on an idle master takes
  // one replica ping period.
  wait_for("the replicas to sync", [&] {
    std::size_t masters = 0;
    for (const auto& n : nodes_) {
      const std::string info = n->command({"INFO", "replication"}).str;
      if (info.find("role:master") == std::string::npos) continue;
      ++masters;
      if (info.find("state=online") == std::string::npos) return false;
    }
    return masters == 3;
  });
}

ClusterServers::~ClusterServers() = default;

std::size_t ClusterServers::index_of_port(int port) const {
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i]->port() == port || (nodes_[i]->tls_port() && nodes_[i]->tls_port() == port)) return i;
  throw std::runtime_error("redis cluster: no node on port " + std::to_string(port));
}

int ClusterServers::keyslot(const std::string& key) const {
  return static_cast<int>(nodes_.front()->command({"CLUSTER", "KEYSLOT", key}).integer);
}

std::size_t ClusterServers::master_of(int slot) const {
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const RedisReply role = nodes_[i]->command({"ROLE"});
    if (role.elements.empty() || role.elements[0].str != "master") continue;
    const RedisReply slots = nodes_[i]->command({"CLUSTER", "SLOTS"});
    for (const RedisReply& range : slots.elements)
      if (range.elements.at(0).integer <= slot && slot <= range.elements.at(1).integer &&
          range.elements.at(2).elements.at(1).integer == nodes_[i]->port())
        return i;
  }
  throw std::runtime_error("redis cluster: no master serves slot " + std::to_string(slot));
}

std::vector<std::size_t> ClusterServers::masters() const {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const RedisReply role = nodes_[i]->command({"ROLE"});
    if (!role.elements.empty() && role.elements[0].str == "master") out.push_back(i);
  }
  return out;
}

std::string ClusterServers::node_id(std::size_t i) const { return node(i).command({"CLUSTER", "MYID"}).str; }

std::size_t ClusterServers::replica_of(std::size_t m) const {
  const std::string id = node_id(m);
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const RedisReply role = nodes_[i]->command({"ROLE"});
    if (role.elements.size() >= 3 && role.elements[0].str == "slave" &&
        role.elements[2].integer == nodes_[m]->port())
      return i;
  }
  throw std::runtime_error("redis cluster: master " + id + " has no replica");
}

void ClusterServers::begin_migration(int slot, std::size_t to) {
  const std::size_t from = master_of(slot);
  const std::string s = std::to_string(slot);
  for (const auto& [node, how, other] : {std::tuple{to, "IMPORTING", from}, std::tuple{from, "MIGRATING", to}}) {
    const RedisReply r = nodes_[node]->command({"CLUSTER", "SETSLOT", s, how, node_id(other)});
    if (r.is_error()) throw std::runtime_error("CLUSTER SETSLOT " + s + " " + how + ": " + r.str);
  }
  migrating_slot_ = slot;
  migration_from_ = from;
  migration_to_ = to;
}

std::size_t ClusterServers::migrate_keys(int slot, std::size_t count) {
  if (slot != migrating_slot_) throw std::runtime_error("redis cluster: slot is not being migrated");
  const RedisReply keys =
      nodes_[migration_from_]->command({"CLUSTER", "GETKEYSINSLOT", std::to_string(slot), std::to_string(count)});
  if (keys.elements.empty()) return 0;
  std::vector<std::string> argv{"MIGRATE", "127.0.0.1", std::to_string(nodes_[migration_to_]->port()), "", "0",
                                "5000", "KEYS"};
  for (const RedisReply& k : keys.elements) argv.push_back(k.str);
  const RedisReply r = nodes_[migration_from_]->command(argv);
  if (r.is_error()) throw std::runtime_error("MIGRATE: " + r.str);
  return keys.elements.size();
}

void ClusterServers::finish_migration(int slot) {
  if (slot != migrating_slot_) throw std::runtime_error("redis cluster: slot is not being migrated");
  const std::string id = node_id(migration_to_);
  // The new owner first, then the old one, then everyone else.
  std::vector<std::size_t> order{migration_to_, migration_from_};
  for (const std::size_t m : masters())
    if (m != migration_to_ && m != migration_from_) order.push_back(m);
  for (const std::size_t n : order) {
    const RedisReply r = nodes_[n]->command({"CLUSTER", "SETSLOT", std::to_string(slot), "NODE", id});
    if (r.is_error()) throw std::runtime_error("CLUSTER SETSLOT NODE: " + r.str);
  }
  migrating_slot_ = -1;
  wait_until_agreed();
}

void ClusterServers::move_slot(int slot, std::size_t to) {
  begin_migration(slot, to);
  while (migrate_keys(slot, 100) > 0) {
  }
  finish_migration(slot);
}

std::size_t ClusterServers::failover(std::size_t m) {
  const std::size_t r = replica_of(m);
  const auto promoted = [&] {
    const RedisReply role = nodes_[r]->command({"ROLE"});
    return !role.elements.empty() && role.elements[0].str == "master";
  };
  // A manual failover that cannot finish in time (the replica is not caught
  // up yet, e.g. right after start-up) is dropped by Redis: ask again.
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (!promoted()) {
    if (Clock::now() > deadline) throw std::runtime_error("redis cluster: timed out waiting for the failover");
    const RedisReply reply = nodes_[r]->command({"CLUSTER", "FAILOVER"});
    if (reply.is_error()) throw std::runtime_error("CLUSTER FAILOVER: " + reply.str);
    const auto attempt_end = Clock::now() + std::chrono::seconds(6);
    while (!promoted() && Clock::now() < attempt_end) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  wait_until_agreed();
  // Every node sees the new master.
  const std::string mine = std::to_string(nodes_[r]->port());
  wait_for("every node to see the new master", [&] {
    for (const auto& n : nodes_)
      if (slots_view(*n).find(":" + mine + ";") == std::string::npos) return false;
    return true;
  });
  return r;
}

void ClusterServers::wait_until_agreed() const {
  wait_for("cluster_state:ok and one view of the slots", [&] {
    std::string first;
    for (const auto& n : nodes_) {
      if (!cluster_ok(*n)) return false;
      const std::string view = slots_view(*n);
      if (view.empty()) return false;
      if (first.empty()) first = view;
      if (view != first) return false;
    }
    return true;
  });
}

}  // namespace pathlock::devtools
