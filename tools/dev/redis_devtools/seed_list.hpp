// What the deployments a client reaches through a list of servers share
// (ClusterServers: every node a seed; SentinelServers: the sentinels): the
// URLs that list those servers' loopback ports, and no copies (they own
// running servers).
//
// Thread safety: none; one test drives a deployment.
#pragma once

#include "redis_devtools/redis_server.hpp"

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace pathlock::devtools {

class SeedListDeployment {
 public:
  virtual ~SeedListDeployment() = default;
  SeedListDeployment(const SeedListDeployment&) = delete;
  SeedListDeployment& operator=(const SeedListDeployment&) = delete;

  // SCHEME://127.0.0.1:P1,...,127.0.0.1:Pn SUFFIX, every seed's port.
  std::string url() const { return listed(scheme_, false); }
  // TLS_SCHEME://127.0.0.1:T1,...,127.0.0.1:Tn SUFFIX, every seed's
  // tls_port() (a deployment started with TLS).
  std::string tls_url() const { return listed(tls_scheme_, true); }

 protected:
  SeedListDeployment(std::string scheme, std::string tls_scheme, std::string suffix = "")
      : scheme_(std::move(scheme)), tls_scheme_(std::move(tls_scheme)), suffix_(std::move(suffix)) {}
  // The servers the URLs list, in order.
  virtual const std::vector<std::unique_ptr<RedisServer>>& seeds() const = 0;

 private:
  std::string listed(const std::string& scheme, bool tls) const {
    std::string out = scheme + "://";
    const std::vector<std::unique_ptr<RedisServer>>& servers = seeds();
    for (std::size_t i = 0; i < servers.size(); ++i)
      out += (i ? ",127.0.0.1:" : "127.0.0.1:") + std::to_string(tls ? servers[i]->tls_port() : servers[i]->port());
    return out + suffix_;
  }

  std::string scheme_, tls_scheme_, suffix_;
};

}  // namespace pathlock::devtools
