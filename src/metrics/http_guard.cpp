// GuardedServer (http_guard.hpp): cpp-httplib's request parsing, routing and
// answers (Server::process_request), over connections accepted and read
// here: a Stream whose every read and write waits at most until the
// request's deadline and whose reads stop at the request's byte budget.
#include "metrics/http/http_guard.hpp"

#include <pathlock/engine.hpp>
#include <pathlock/metrics_server.hpp>  // parse_listen_address

#include <fmt/format.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>

namespace pathlock::http {
namespace {

using Clock = std::chrono::steady_clock;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool is_ip_literal(const std::string& host) {
  std::array<unsigned char, sizeof(in6_addr)> buf{};
  return ::inet_pton(AF_INET, host.c_str(), buf.data()) == 1 || ::inet_pton(AF_INET6, host.c_str(), buf.data()) == 1;
}

// "name:port", "[v6]:port", "name" -> name (lowercased, no brackets) and
// port (-1: none; -2: malformed).
std::pair<std::string, int> split_host(std::string_view h) {
  std::string_view name = h, port;
  if (!h.empty() && h.front() == '[') {
    const std::size_t close = h.find(']');
    if (close == std::string_view::npos) return {"", -2};
    name = h.substr(1, close - 1);
    if (close + 1 < h.size()) {
      if (h[close + 1] != ':') return {"", -2};
      port = h.substr(close + 2);
    }
  } else if (const std::size_t colon = h.find(':'); colon != std::string_view::npos) {
    name = h.substr(0, colon);
    port = h.substr(colon + 1);
  }
  int p = -1;
  if (!port.empty() || (h.size() > name.size() && h.back() == ':')) {
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
    if (port.empty() || ec != std::errc() || end != port.data() + port.size() || p < 0 || p > 65535) return {"", -2};
  }
  return {lower(name), p};
}

std::string peer_text(const sockaddr_storage& a, int& port) {
  char buf[INET6_ADDRSTRLEN] = "";
  if (a.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(a);
    ::inet_ntop(AF_INET, &v4.sin_addr, buf, sizeof buf);
    port = ntohs(v4.sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(a);
    ::inet_ntop(AF_INET6, &v6.sin6_addr, buf, sizeof buf);
    port = ntohs(v6.sin6_port);
  }
  return buf;
}

// A connection's stream: every wait ends at the deadline, reads stop at
// the byte budget (a read past it fails, as a closed connection does).
class DeadlineStream final : public httplib::Stream {
 public:
  DeadlineStream(int fd, Clock::time_point deadline, std::size_t budget)
      : fd_(fd), deadline_(deadline), budget_(budget) {}

  bool is_readable() const override { return off_ < len_ || wait(POLLIN); }
  bool is_writable() const override { return wait(POLLOUT); }

  ssize_t read(char* ptr, size_t size) override {
    if (off_ == len_) {
      if (budget_ == 0 || !wait(POLLIN)) return -1;
      const ssize_t got = ::recv(fd_, buf_.data(), std::min(buf_.size(), budget_), 0);
      if (got <= 0) return got;
      budget_ -= static_cast<std::size_t>(got);
      off_ = 0;
      len_ = static_cast<std::size_t>(got);
    }
    const std::size_t n = std::min(size, len_ - off_);
    std::memcpy(ptr, buf_.data() + off_, n);
    off_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!wait(POLLOUT)) return -1;
    return ::send(fd_, ptr, size, MSG_NOSIGNAL);
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override { address(::getpeername, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { address(::getsockname, ip, port); }
  socket_t socket() const override { return fd_; }

 private:
  bool wait(short events) const {
    for (;;) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline_ - Clock::now()).count();
      if (left <= 0) return false;
      pollfd p{fd_, events, 0};
      const int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 60000)));
      if (r > 0) return true;
      if (r < 0 && errno != EINTR) return false;
    }
  }
  void address(int (*get)(int, sockaddr*, socklen_t*), std::string& ip, int& port) const {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    port = 0;
    if (get(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) ip = peer_text(a, port);
  }

  int fd_;
  Clock::time_point deadline_;
  std::size_t budget_;
  std::array<char, 4096> buf_{};
  std::size_t off_ = 0, len_ = 0;
};

bool changes_state(const std::string& method) { return method != "GET" && method != "HEAD" && method != "OPTIONS"; }

void refuse(httplib::Response& res, int status, const std::string& why) {
  res.status = status;
  res.set_content(why + "\n", "text/plain; charset=utf-8");
}

}  // namespace

std::string status_text(int status) {
  switch (status) {
    case 400: return "malformed request";
    case 403: return "forbidden";
    case 404: return "no such page";
    case 405: return "method not allowed";
    case 413: return "request too large";
    case 414: return "request line too long";
    case 416: return "range not satisfiable";
    case 421: return "not a host name this server answers to";
    case 503: return "too many connections";
    default: return status >= 500 ? "server error" : "refused";
  }
}

std::string url_host(std::string_view host) {
  return host.find(':') != std::string_view::npos ? fmt::format("[{}]", host) : std::string(host);
}

bool is_loopback(std::string_view host) {
  const std::string h = lower(host);
  in_addr v4{};
  if (::inet_pton(AF_INET, h.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (::inet_pton(AF_INET6, h.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return h == "localhost";
}

GuardedServer::GuardedServer(GuardOptions options) : opt_(std::move(options)) {
  auto [host, port] = parse_listen_address(opt_.listen);
  host_ = std::move(host);
  set_payload_max_length(opt_.limits.max_body_bytes);
  set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) { return check(req, res); });
  set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty()) refuse(res, res.status, fmt::format("HTTP {}: {}", res.status, status_text(res.status)));
  });
  // SO_REUSEADDR only: cpp-httplib's default adds SO_REUSEPORT, with which a
  // second process could bind a port in use and share its requests.
  set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  if (port == 0) {
    port_ = bind_to_any_port(host_);
    if (port_ < 0) throw BackendError(fmt::format("{}: cannot listen on {}:0", opt_.what, url_host(host_)));
  } else {
    if (!bind_to_port(host_, port))
      throw BackendError(fmt::format("{}: cannot listen on {}:{} (in use, or no such address)", opt_.what,
                                     url_host(host_), port));
    port_ = port;
  }
}

GuardedServer::~GuardedServer() { stop(); }

void GuardedServer::before_routing(HandlerWithResponse next) { next_ = std::move(next); }

std::string GuardedServer::base_url() const { return fmt::format("http://{}:{}", url_host(host_), port_); }

bool GuardedServer::host_allowed(std::string_view host_header) const {
  const auto [name, port] = split_host(host_header);
  if (port == -2 || name.empty()) return false;
  for (const std::string& extra : opt_.allowed_hosts) {
    const auto [n, p] = split_host(extra);
    if (n == name && (p == -1 || p == port)) return true;
  }
  const bool ours = name == lower(host_) || name == "localhost" || is_ip_literal(name);
  return ours && (port == -1 ? port_ == 80 : port == port_);
}

httplib::Server::HandlerResponse GuardedServer::check(const httplib::Request& req, httplib::Response& res) const {
  const std::string host = req.get_header_value("Host");
  if (!host_allowed(host)) {
    refuse(res, 421,
           fmt::format("{}: Host '{}' is not a name this server answers to (its address, localhost, or one it was "
                       "told to allow)",
                       opt_.what, host));
    return HandlerResponse::Handled;
  }
  // A body over the limit is refused before it is read (the error handler
  // words it): the client learns it at once, not after sending it all.
  if (req.has_header("Content-Length")) {
    const std::string length = req.get_header_value("Content-Length");
    std::size_t n = 0;
    const auto [end, ec] = std::from_chars(length.data(), length.data() + length.size(), n);
    if (ec != std::errc() || end != length.data() + length.size()) {
      res.status = 400;
      return HandlerResponse::Handled;
    }
    if (n > opt_.limits.max_body_bytes) {
      res.status = 413;
      return HandlerResponse::Handled;
    }
  }
  if (changes_state(req.method) && req.has_header("Origin")) {
    const std::string origin = lower(req.get_header_value("Origin"));
    if (origin != "http://" + lower(host) && origin != "https://" + lower(host)) {
      refuse(res, 403, fmt::format("{}: a request from another origin may not change anything", opt_.what));
      return HandlerResponse::Handled;
    }
  }
  return next_ ? next_(req, res) : HandlerResponse::Unhandled;
}

void GuardedServer::start() {
  acceptor_ = std::thread([this] { accept_loop(); });
}

void GuardedServer::accept_loop() {
  for (;;) {
    const socket_t listener = svr_sock_;
    if (listener == INVALID_SOCKET) return;
    const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        continue;
      }
      return;  // stop() shut the listener
    }
    std::lock_guard lock(mu_);
    if (stopping_ || active_.size() >= opt_.limits.max_connections) {
      static constexpr std::string_view busy =
          "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: "
          "21\r\n\r\ntoo many connections\n";
      (void)!::send(fd, busy.data(), busy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      ::close(fd);
      continue;
    }
    active_.insert(fd);
    std::thread([this, fd] { serve(fd); }).detach();
  }
}

void GuardedServer::serve(int fd) {
  try {
    DeadlineStream stream(fd, Clock::now() + opt_.limits.request_deadline,
                          opt_.limits.max_head_bytes + opt_.limits.max_body_bytes);
    bool closed = false;
    process_request(stream, true, closed, [](httplib::Request& req) {
      if (req.ranges.size() > 1) req.ranges.clear();  // no multipart answers
      // A request with neither length nor chunks has no body (RFC 9112
      // 6.3), rather than one read until the connection closes.
      if (!req.has_header("Content-Length") && !req.has_header("Transfer-Encoding"))
        req.set_header("Content-Length", "0");
    });
  } catch (...) {  // nothing of a request may end the process
  }
  ::shutdown(fd, SHUT_RDWR);
  std::lock_guard lock(mu_);
  ::close(fd);
  active_.erase(fd);
  idle_.notify_all();
}

void GuardedServer::stop() {
  // Shut first (accept() returns), join, then close: the acceptor never
  // calls accept() on a descriptor number reused meanwhile.
  if (const socket_t listener = svr_sock_; listener != INVALID_SOCKET) ::shutdown(listener, SHUT_RDWR);
  if (acceptor_.joinable()) acceptor_.join();
  if (const socket_t listener = svr_sock_.exchange(INVALID_SOCKET); listener != INVALID_SOCKET) ::close(listener);
  std::unique_lock lock(mu_);
  stopping_ = true;
  for (const int fd : active_) ::shutdown(fd, SHUT_RDWR);
  idle_.wait(lock, [&] { return active_.empty(); });
}

}  // namespace pathlock::http
