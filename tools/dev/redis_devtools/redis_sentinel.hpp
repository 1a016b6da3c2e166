// A local Sentinel deployment for tests and benchmarks: one master, one
// replica and three `redis-server --sentinel` watching the master under the
// name "pathlock" with quorum 2, down-after-milliseconds 1000 and
// failover-timeout 3000, so a failover takes a few seconds.
//
// Start-up waits until the replica is in sync and every sentinel knows the
// replica and the two other sentinels. Everything stops in the destructor
// (RedisServer), also when a test fails.
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

// url(): redis-sentinel://127.0.0.1:S1,127.0.0.1:S2,127.0.0.1:S3#pathlock;
// tls_url(): rediss-sentinel://127.0.0.1:T1,...#pathlock (a deployment
// started with `tls`).
class SentinelServers : public SeedListDeployment {
 public:
  // Throws std::runtime_error if the deployment is not ready within 30 s.
  // With `tls`, every server also serves TLS on its tls_port() with
  // tls-replication on: the replica and the sentinels reach the master over
  // TLS, and the sentinels name the master's TLS port.
  explicit SentinelServers(const TlsCertificates* tls = nullptr);
  ~SentinelServers() override;

  static constexpr const char* kMasterName = "pathlock";

  // The data servers as they are now (swapped by failover()).
  RedisServer& master() const { return *data_[master_]; }
  RedisServer& replica() const { return *data_[1 - master_]; }
  RedisServer& sentinel(std::size_t i) const { return *sentinels_.at(i); }

  // SENTINEL FAILOVER, then waits until every sentinel names the former
  // replica and it reports role master.
  void failover();

 private:
  const std::vector<std::unique_ptr<RedisServer>>& seeds() const override { return sentinels_; }

  std::vector<std::unique_ptr<RedisServer>> data_;
  std::vector<std::unique_ptr<RedisServer>> sentinels_;
  std::size_t master_ = 0;
  bool tls_ = false;
};

}  // namespace pathlock::devtools
