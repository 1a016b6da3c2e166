// MetricsServer (pathlock/metrics_server.hpp) on cpp-httplib: one
// GuardedServer (http_guard.hpp: Host check, a deadline per request, bounded
// connections, no multipart ranges) bound before its thread starts, so a
// scrape sent as soon as the constructor returns waits in the listen
// backlog rather than being refused; the destructor stops it and waits.
//
// Why a library: an exporter that Prometheus and curl scrape must parse
// request lines and headers, keep-alive, partial reads and slow clients
// correctly; cpp-httplib is a maintained Debian package that does, and this
// file stays a route and a bind.
#include <pathlock/metrics_server.hpp>

#include "metrics/http/http_guard.hpp"

#include <fmt/format.h>

#include <charconv>

namespace pathlock {

std::pair<std::string, int> parse_listen_address(std::string_view listen) {
  const std::size_t colon = listen.rfind(':');
  const auto bad = [&](std::string_view why) {
    return InvalidRequest(fmt::format(
        "bad metrics address '{}': {} (use HOST:PORT, e.g. 127.0.0.1:9464 or [::1]:9464)", listen, why));
  };
  if (colon == std::string_view::npos) throw bad("no port");
  std::string_view host = listen.substr(0, colon);
  const std::string_view port = listen.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);  // [v6]
  if (host.empty()) throw bad("no host");
  if (host.find_first_of(" \t\r\n/[]") != std::string_view::npos) throw bad("the host has a character no host name has");
  int value = -1;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value < 0 || value > 65535)
    throw bad("the port must be a whole number from 0 to 65535");
  return {std::string(host), value};
}

struct MetricsServer::Impl {
  std::shared_ptr<const Metrics> metrics;
  std::unique_ptr<http::GuardedServer> server;
};

namespace {
MetricsServerOptions listening_on(std::string_view listen) {
  MetricsServerOptions o;
  o.listen = std::string(listen);
  return o;
}
}  // namespace

MetricsServer::MetricsServer(std::shared_ptr<const Metrics> metrics, std::string_view listen)
    : MetricsServer(std::move(metrics), listening_on(listen)) {}

MetricsServer::MetricsServer(std::shared_ptr<const Metrics> metrics, MetricsServerOptions options)
    : impl_(std::make_unique<Impl>()) {
  if (!metrics) throw InvalidRequest("MetricsServer needs a Metrics to serve");
  Impl& m = *impl_;
  m.metrics = std::move(metrics);
  http::Limits limits;
  limits.max_connections = options.max_connections;
  limits.request_deadline = options.request_deadline;
  if (limits.max_connections < 1 || limits.request_deadline.count() < 1)
    throw InvalidRequest("MetricsServer needs max_connections and request_deadline of at least 1");
  m.server = std::make_unique<http::GuardedServer>(http::GuardOptions{
      .what = "metrics server", .listen = options.listen, .allowed_hosts = options.allowed_hosts, .limits = limits});
  m.server->Get("/metrics", [served = m.metrics](const httplib::Request&, httplib::Response& res) {
    res.set_content(served->prometheus(), "text/plain; version=0.0.4; charset=utf-8");
  });
  m.server->start();
}

MetricsServer::~MetricsServer() = default;  // GuardedServer stops and waits

const std::string& MetricsServer::host() const { return impl_->server->host(); }
int MetricsServer::port() const { return impl_->server->port(); }
std::string MetricsServer::url() const { return impl_->server->base_url() + "/metrics"; }

}  // namespace pathlock
