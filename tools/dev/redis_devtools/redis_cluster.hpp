// A local Redis Cluster of 3 masters + 3 replicas for tests and benchmarks,
// and the operations tests need on it: find a slot's master, move a slot key
// by key (MOVED, and ASK while it is half moved), fail a master over.
//
// Start-up: six `redis-server --cluster-enabled yes` (RedisServer, each on a
// free loopback port with its own directory, bus port and nodes.conf), then
// `redis-cli --cluster create ... --cluster-replicas 1 --cluster-yes`, then a
// wait until every node reports cluster_state:ok and all agree on the master
// of every slot and know a replica for each. Everything stops in the
// destructor (RedisServer), also when a test fails; a constructor that
// throws stops what it started. redis-cli is $PATHLOCK_REDIS_CLI or
// redis-cli from PATH (Debian: redis-tools, a dependency of redis-server).
//
// Thread safety: none; one test drives it.
#pragma once

#include "redis_devtools/redis_server.hpp"
#include "redis_devtools/seed_list.hpp"
#include "redis_devtools/tls_certs.hpp"

#include <memory>
#include <string>
#include <vector>

namespace pathlock::devtools {

// url(): redis://127.0.0.1:P1,...,127.0.0.1:P6 (every node a seed);
// tls_url(): rediss://127.0.0.1:T1,...,127.0.0.1:T6 (a cluster started with `tls`).
class ClusterServers : public SeedListDeployment {
 public:
  // Starts and joins the cluster; throws std::runtime_error (with the
  // servers' or redis-cli's output) if it does not come up within 30 s.
  // With `tls`, every node also serves TLS on its tls_port() (client
  // certificates optional) with tls-cluster and tls-replication on: the bus
  // and replication run over TLS, and CLUSTER SLOTS/MOVED name the TLS ports
  // to TLS clients (plain clients, the devtools, still get the plain ones).
  explicit ClusterServers(const TlsCertificates* tls = nullptr);
  ~ClusterServers() override;

  std::size_t size() const { return nodes_.size(); }
  RedisServer& node(std::size_t i) const { return *nodes_.at(i); }
  // Index of the node listening on `port`.
  std::size_t index_of_port(int port) const;

  // The slot of a key, from CLUSTER KEYSLOT on a node.
  int keyslot(const std::string& key) const;
  // The node that serves `slot` as master (asked of the node itself).
  std::size_t master_of(int slot) const;
  // The current masters, by node index.
  std::vector<std::size_t> masters() const;
  // The replica of master `m`.
  std::size_t replica_of(std::size_t m) const;
  std::string node_id(std::size_t i) const;

  // Slot migration, step by step: begin marks `slot` IMPORTING on `to` and
  // MIGRATING on its master; migrate_keys moves up to `count` of its keys
  // with MIGRATE ... KEYS and returns how many it moved; finish assigns the
  // slot to `to` on every master and waits until all nodes agree.
  void begin_migration(int slot, std::size_t to);
  std::size_t migrate_keys(int slot, std::size_t count);
  void finish_migration(int slot);
  // All three at once.
  void move_slot(int slot, std::size_t to);

  // Graceful failover of master `m`: CLUSTER FAILOVER on its replica, then
  // waits until the replica serves m's slots in every node's view. Returns
  // the new master's index.
  std::size_t failover(std::size_t m);

  // Waits (up to 30 s) until every node reports cluster_state:ok and all
  // agree on every slot's master. Throws std::runtime_error otherwise.
  void wait_until_agreed() const;

 private:
  const std::vector<std::unique_ptr<RedisServer>>& seeds() const override { return nodes_; }

  std::vector<std::unique_ptr<RedisServer>> nodes_;
  int migrating_slot_ = -1;
  std::size_t migration_from_ = 0, migration_to_ = 0;
};

}  // namespace pathlock::devtools
