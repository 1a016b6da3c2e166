// pathlock/metrics_server.hpp: a small HTTP exporter for services that have
// none: GET /metrics answers Metrics::prometheus() (text format 0.0.4).
//
// Listens on one address, loopback unless told otherwise; port 0 picks a
// free port, which port() reports. One background thread accepts and
// answers; the server stops (and joins it) when destroyed. Built on
// cpp-httplib (Debian libcpp-httplib-dev), kept out of this header.
// Thread safety: the object itself is not meant to be shared; the Metrics it
// serves may be counted into from any thread meanwhile.
#pragma once

#include <pathlock/metrics.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace pathlock {

class MetricsServer {
 public:
  // Serves `metrics` on `listen`, "HOST:PORT" (HOST a name or an IPv4
  // address, PORT 0..65535, 0: any free port). Throws InvalidRequest for a
  // malformed address and BackendError when it cannot listen there (port in
  // use, no such host).
  explicit MetricsServer(std::shared_ptr<const Metrics> metrics, std::string_view listen = "127.0.0.1:0");
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  const std::string& host() const;
  int port() const;  // the port listened on (the one chosen, for port 0)
  // "http://HOST:PORT/metrics"
  std::string url() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Splits "HOST:PORT" as MetricsServer does. Throws InvalidRequest.
std::pair<std::string, int> parse_listen_address(std::string_view listen);

}  // namespace pathlock
