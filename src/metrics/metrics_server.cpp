// MetricsServer (pathlock/metrics_server.hpp) on cpp-httplib: one
// httplib::Server bound before its thread starts, so a scrape sent as soon
// as the constructor returns waits in the listen backlog rather than being
// refused; stop() ends listen_after_bind() and the destructor joins.
//
// Why a library: an exporter that Prometheus and curl scrape must parse
// request lines and headers, keep-alive, partial reads and slow clients
// correctly; cpp-httplib is a maintained Debian package that does, and this
// file stays a route and a bind.
#include <pathlock/metrics_server.hpp>

#include <fmt/format.h>
#include <httplib.h>
#include <sys/socket.h>

#include <charconv>
#include <chrono>
#include <thread>

namespace pathlock {

std::pair<std::string, int> parse_listen_address(std::string_view listen) {
  const std::size_t colon = listen.rfind(':');
  const auto bad = [&](std::string_view why) {
    return InvalidRequest(fmt::format("bad metrics address '{}': {} (use HOST:PORT, e.g. 127.0.0.1:9464)", listen, why));
  };
  if (colon == std::string_view::npos) throw bad("no port");
  const std::string_view host = listen.substr(0, colon), port = listen.substr(colon + 1);
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
  httplib::Server server;
  std::string host;
  int port = 0;
  std::thread thread;
};

MetricsServer::MetricsServer(std::shared_ptr<const Metrics> metrics, std::string_view listen)
    : impl_(std::make_unique<Impl>()) {
  if (!metrics) throw InvalidRequest("MetricsServer needs a Metrics to serve");
  auto [host, port] = parse_listen_address(listen);
  Impl& m = *impl_;
  m.metrics = std::move(metrics);
  m.host = std::move(host);
  m.server.Get("/metrics", [served = m.metrics](const httplib::Request&, httplib::Response& res) {
    res.set_content(served->prometheus(), "text/plain; version=0.0.4; charset=utf-8");
  });
  // SO_REUSEADDR only: cpp-httplib's default adds SO_REUSEPORT, with which a
  // second process could bind a port in use and share its scrapes.
  m.server.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  if (port == 0) {
    m.port = m.server.bind_to_any_port(m.host);
    if (m.port < 0) throw BackendError(fmt::format("metrics server: cannot listen on {}:0", m.host));
  } else {
    if (!m.server.bind_to_port(m.host, port))
      throw BackendError(fmt::format("metrics server: cannot listen on {}:{} (in use, or no such address)", m.host, port));
    m.port = port;
  }
  m.thread = std::thread([&server = m.server] { server.listen_after_bind(); });
  // stop() is a no-op until the loop runs: wait for it, so that the
  // destructor never joins a thread that has yet to start listening.
  for (int i = 0; i < 5000 && !m.server.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

MetricsServer::~MetricsServer() {
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

const std::string& MetricsServer::host() const { return impl_->host; }
int MetricsServer::port() const { return impl_->port; }
std::string MetricsServer::url() const { return fmt::format("http://{}:{}/metrics", impl_->host, impl_->port); }

}  // namespace pathlock
