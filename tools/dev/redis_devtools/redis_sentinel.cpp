// A local Sentinel deployment; see redis_sentinel.hpp.
#include "redis_devtools/redis_sentinel.hpp"

#include <stdexcept>
#include <utility>

namespace pathlock::devtools {
namespace {

template <class Ready>
void wait_for(const char* what, Ready&& ready) {
  devtools::wait_for("redis sentinel", what, std::forward<Ready>(ready));
}

std::size_t entries(const RedisServer& s, const char* what) {
  const RedisReply r = s.command({"SENTINEL", what, SentinelServers::kMasterName});
  return r.type == RedisReply::Type::array ? r.elements.size() : 0;
}

int named_master_port(const RedisServer& s) {
  const RedisReply r = s.command({"SENTINEL", "get-master-addr-by-name", SentinelServers::kMasterName});
  return r.elements.size() == 2 ? std::stoi(r.elements[1].str) : 0;
}

}  // namespace

SentinelServers::SentinelServers(const TlsCertificates* tls)
    : SeedListDeployment("redis-sentinel", "rediss-sentinel", std::string("#") + kMasterName), tls_(tls != nullptr) {
  // No 5 s wait for more replicas before a diskless full sync.
  const auto with_tls = [&](std::vector<std::string> args) {
    if (!tls) return args;
    const std::vector<std::string> t = tls->server_args(free_loopback_port());
    args.insert(args.end(), t.begin(), t.end());
    args.insert(args.end(), {"--tls-replication", "yes"});
    return args;
  };
  data_.push_back(std::make_unique<RedisServer>(with_tls({"--repl-diskless-sync-delay", "0"})));
  const std::string master_port = std::to_string(tls ? data_[0]->tls_port() : data_[0]->port());
  data_.push_back(std::make_unique<RedisServer>(
      with_tls({"--replicaof", "127.0.0.1", master_port, "--repl-diskless-sync-delay", "0"})));
  const std::string config = std::string("sentinel monitor ") + kMasterName + " 127.0.0.1 " + master_port +
                             " 2\n"
                             "sentinel down-after-milliseconds " + kMasterName + " 1000\n"
                             "sentinel failover-timeout " + kMasterName + " 3000\n"
                             "sentinel parallel-syncs " + kMasterName + " 1\n";
  for (int i = 0; i < 3; ++i)
    sentinels_.push_back(std::make_unique<RedisServer>(with_tls({"--sentinel"}), config));
  wait_for("the replica to sync", [&] {
    return data_[0]->command({"INFO", "replication"}).str.find("state=online") != std::string::npos;
  });
  wait_for("the sentinels to know each other and the replica", [&] {
    for (const auto& s : sentinels_)
      if (entries(*s, "replicas") != 1 || entries(*s, "sentinels") != 2) return false;
    return true;
  });
}

SentinelServers::~SentinelServers() = default;

void SentinelServers::failover() {
  const RedisReply r = sentinels_[0]->command({"SENTINEL", "FAILOVER", kMasterName});
  if (r.is_error()) throw std::runtime_error("SENTINEL FAILOVER: " + r.str);
  const std::size_t next = 1 - master_;
  const int port = tls_ ? data_[next]->tls_port() : data_[next]->port();
  wait_for("the sentinels to name the new master", [&] {
    for (const auto& s : sentinels_)
      if (named_master_port(*s) != port) return false;
    const RedisReply role = data_[next]->command({"ROLE"});
    return !role.elements.empty() && role.elements[0].str == "master";
  });
  master_ = next;
}

}  // namespace pathlock::devtools
