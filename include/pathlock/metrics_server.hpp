// pathlock/metrics_server.hpp: a small HTTP exporter for services that have
// none: GET /metrics answers Metrics::prometheus() (text format 0.0.4).
//
// Listens on one address, loopback unless told otherwise; port 0 picks a
// free port, which port() reports. One background thread accepts; each
// connection (one request) is answered on a thread of its own, at most
// max_connections at once, within a deadline for the whole request; only
// Host names of this server are answered (MetricsServerOptions). The
// server stops (and waits for them) when destroyed. Built on
// cpp-httplib (Debian libcpp-httplib-dev), kept out of this header.
// Thread safety: the object itself is not meant to be shared; the Metrics it
// serves may be counted into from any thread meanwhile.
#pragma once

#include <pathlock/metrics.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pathlock {

struct MetricsServerOptions {
  // "HOST:PORT": HOST a name, an IPv4 address or a bracketed IPv6 address
  // ("[::1]:9464"); PORT 0..65535, 0: any free port.
  std::string listen = "127.0.0.1:0";
  // Host header names answered besides the listen address, IP address
  // literals and localhost (those with the port served): NAME (any port) or
  // NAME:PORT, e.g. the name Prometheus scrapes this service by when it
  // listens on 0.0.0.0. Any other Host is answered 421 (a page of another
  // site whose name resolves here, DNS rebinding, cannot read it).
  std::vector<std::string> allowed_hosts;
  // At most this many connections are served at once; one more is answered
  // 503 and closed at once (never queued behind slow clients).
  std::size_t max_connections = 32;
  // Each connection is one request; all of it (headers, answer) must be
  // done within this, whatever the client's pace, or it is closed.
  std::chrono::milliseconds request_deadline{10000};
};

class MetricsServer {
 public:
  // Serves `metrics` on `listen`, "HOST:PORT" (HOST a name, an IPv4
  // address or a bracketed IPv6 one, PORT 0..65535, 0: any free port), with
  // the defaults of MetricsServerOptions. Throws InvalidRequest for a
  // malformed address and BackendError when it cannot listen there (port in
  // use, no such host).
  explicit MetricsServer(std::shared_ptr<const Metrics> metrics, std::string_view listen = "127.0.0.1:0");
  // The same with every option (throws InvalidRequest for a zero limit).
  MetricsServer(std::shared_ptr<const Metrics> metrics, MetricsServerOptions options);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  const std::string& host() const;
  int port() const;  // the port listened on (the one chosen, for port 0)
  // "http://HOST:PORT/metrics" ("http://[::1]:PORT/metrics" for IPv6)
  std::string url() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Splits "HOST:PORT" as MetricsServer does ("[::1]:0" -> "::1", 0; the
// last colon separates the port, so "::1:0" is read the same). Throws
// InvalidRequest.
std::pair<std::string, int> parse_listen_address(std::string_view listen);

}  // namespace pathlock
