// metrics/http/http_guard.hpp (private, not installed: it includes <httplib.h>;
// only with PATHLOCK_WITH_METRICS_SERVER): the HTTP server of pathlock's listening surfaces:
// MetricsServer (inside services) and `pathlock console`, one implementation of what keeps a port
// that a browser or a stranger can reach from being misused or stalled.
//
// GuardedServer is a cpp-httplib Server (its routing, handlers and answers)
// whose connections are accepted and read here rather than by the library's
// own loop and thread pool, so that:
// - each connection is one request (Connection: close) with a deadline for
//   the whole of it, from accept to the last byte of the answer (a client
//   that sends a header line every second is cut off at the deadline, not
//   kept for as long as it trickles);
// - at most `max_connections` are served at once, each on its own thread;
//   one more is answered 503 at once and closed, never queued;
// - a request reads at most `max_head_bytes` plus the body limit, and one
//   without Content-Length or chunks has no body (not one read until close);
// - a Range header naming several ranges is ignored (the whole answer, 200),
//   so no request can ask for a multipart copy of an answer per range;
// - the Host header must be one this server answers to (421 otherwise): the
//   listen address, an IP address literal, `localhost` (those with the port
//   served), or a name of `allowed_hosts` (any port, or NAME:PORT exactly);
//   a page of a DNS-rebinding name (attacker.test resolved to 127.0.0.1)
//   sends its own name and is refused. A request that may change state
//   (anything but GET, HEAD, OPTIONS) with an Origin header must come from
//   the same origin (http:// or https:// and the Host), else 403.
#pragma once

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace pathlock::http {

struct Limits {
  std::size_t max_connections = 32;                   // served at once
  std::chrono::milliseconds request_deadline{10000};  // the whole request and its answer
  std::size_t max_head_bytes = std::size_t{64} << 10;  // request line and headers
  std::size_t max_body_bytes = std::size_t{64} << 10;  // payload_max_length
};

struct GuardOptions {
  std::string what;    // "console", "metrics server": for messages
  std::string listen;  // HOST:PORT (parse_listen_address)
  std::vector<std::string> allowed_hosts;  // NAME or NAME:PORT, besides the listen address and loopback
  Limits limits;
};

// Why an HTTP status was answered, in words ("no such page" for 404).
std::string status_text(int status);

// The host of a listen address as it goes into a URL ("[::1]" for ::1).
std::string url_host(std::string_view host);

// True for localhost and the loopback addresses (127.0.0.0/8, ::1).
bool is_loopback(std::string_view host);

class GuardedServer : public httplib::Server {
 public:
  // Parses the listen address and binds (throws InvalidRequest for a bad
  // address, BackendError when it cannot listen); start() serves.
  explicit GuardedServer(GuardOptions options);
  ~GuardedServer() override;
  GuardedServer(const GuardedServer&) = delete;
  GuardedServer& operator=(const GuardedServer&) = delete;

  // The server's own check of the request, then `next` (the pre-routing
  // handler: use this, not set_pre_routing_handler, which would drop the check).
  void before_routing(HandlerWithResponse next);
  void start();  // the accepting thread
  void stop();   // stops accepting, cuts the connections in progress, waits for them

  const std::string& host() const { return host_; }
  int port() const { return port_; }
  std::string base_url() const;  // "http://HOST:PORT"
  // Whether a Host header names this server.
  bool host_allowed(std::string_view host_header) const;

 private:
  HandlerResponse check(const httplib::Request& req, httplib::Response& res) const;
  void accept_loop();
  void serve(int fd);

  GuardOptions opt_;
  std::string host_;
  int port_ = 0;
  HandlerWithResponse next_;
  std::thread acceptor_;
  std::mutex mu_;
  std::condition_variable idle_;
  std::set<int> active_;  // connections being served
  bool stopping_ = false;
};

}  // namespace pathlock::http
