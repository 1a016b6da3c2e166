// The socket/TLS stream; see tls.hpp (the context: tls_context.cpp).
#include "redis/tls.hpp"

#include "redis/connection.hpp"

#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace pathlock::redis {
namespace {

// A socket BIO that writes with MSG_NOSIGNAL: a peer that went away is an
// error, never a SIGPIPE.
int bio_write(BIO* b, const char* data, int len) {
  BIO_clear_retry_flags(b);
  const int fd = static_cast<int>(reinterpret_cast<std::intptr_t>(BIO_get_data(b)));
  const ssize_t n = ::send(fd, data, static_cast<std::size_t>(len), MSG_NOSIGNAL);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_write(b);
  return static_cast<int>(n);
}

int bio_read(BIO* b, char* data, int len) {
  BIO_clear_retry_flags(b);
  const int fd = static_cast<int>(reinterpret_cast<std::intptr_t>(BIO_get_data(b)));
  const ssize_t n = ::recv(fd, data, static_cast<std::size_t>(len), 0);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_read(b);
  return static_cast<int>(n);
}

long bio_ctrl(BIO*, int cmd, long, void*) { return cmd == BIO_CTRL_FLUSH ? 1 : 0; }

int bio_create(BIO* b) {
  BIO_set_init(b, 1);
  return 1;
}

BIO* socket_bio(int fd) {
  static BIO_METHOD* const method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "pathlock socket");
    BIO_meth_set_write(m, bio_write);
    BIO_meth_set_read(m, bio_read);
    BIO_meth_set_ctrl(m, bio_ctrl);
    BIO_meth_set_create(m, bio_create);
    return m;
  }();
  BIO* b = BIO_new(method);
  if (b) BIO_set_data(b, reinterpret_cast<void*>(static_cast<std::intptr_t>(fd)));
  return b;
}

bool is_ip_address(const std::string& host) {
  in6_addr a6{};
  in_addr a4{};
  return ::inet_pton(AF_INET, host.c_str(), &a4) == 1 || ::inet_pton(AF_INET6, host.c_str(), &a6) == 1;
}

int remaining_ms(Stream::Clock::time_point deadline) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Stream::Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, INT_MAX));
}

void set_socket_options(int fd) {
  const int one = 1, idle = 15, interval = 5, count = 3;  // as hiredis's redisEnableKeepAlive
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
}

// Why a handshake failed, with a hint at the usual mistakes.
std::string handshake_failure(SSL* ssl, int result, const std::string& openssl_reason) {
  const long verify = SSL_get_verify_result(ssl);
  if (verify != X509_V_OK) {
    std::string hint;
    if (verify == X509_V_ERR_HOSTNAME_MISMATCH || verify == X509_V_ERR_IP_ADDRESS_MISMATCH)
      hint = " (the certificate names another host; see tls server_name)";
    else if (verify == X509_V_ERR_CERT_HAS_EXPIRED)
      hint = " (renew the server's certificate)";
    else if (verify == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY || verify == X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN ||
             verify == X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT || verify == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT)
      hint = " (the server's certificate is not signed by a trusted CA; see tls ca_file)";
    return fmt::format("server certificate verify failed: {}{}", X509_verify_cert_error_string(verify), hint);
  }
  std::string why = openssl_reason;
  if (why.empty()) why = result == 0 || errno == 0 ? "the server closed the connection" : std::strerror(errno);
  if (why.find("wrong version number") != std::string::npos || why.find("packet length too long") != std::string::npos ||
      why.find("record layer failure") != std::string::npos || why == "the server closed the connection")
    why += " (is it a plain TCP port? a redis:// URL for that)";
  else if (why.find("protocol version") != std::string::npos || why.find("unsupported protocol") != std::string::npos)
    why += " (the server and tls min_version have no TLS version in common)";
  return why;
}

}  // namespace

std::string ssl_error_text() {
  std::string out;
  for (unsigned long e; (e = ERR_get_error()) != 0;) {
    const char* reason = ERR_reason_error_string(e);
    char buf[256];
    if (!reason) {
      ERR_error_string_n(e, buf, sizeof buf);
      reason = buf;
    }
    if (out.find(reason) == std::string::npos) out += (out.empty() ? "" : ": ") + std::string(reason);
  }
  return out;
}

// A TCP connection to the first of `node`'s addresses that answers before
// `deadline`. Throws Unreachable.
std::unique_ptr<Stream> Stream::connect_tcp(const Endpoint& node, Clock::time_point deadline, const std::string& name) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(node.port);
  if (const int rc = ::getaddrinfo(node.host.c_str(), port.c_str(), &hints, &found); rc != 0)
    throw Unreachable(fmt::format("{}: cannot connect: cannot resolve {}: {}", name, node.host, ::gai_strerror(rc)));
  std::unique_ptr<Stream> s;
  std::string why = "no address";
  for (addrinfo* ai = found; ai && !s; ai = ai->ai_next) {
    const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    std::unique_ptr<Stream> candidate(new Stream(fd));
    if (::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) {
        why = std::strerror(errno);
        continue;
      }
      if (candidate->wait(POLLOUT, deadline) != Io::done) {
        why = "Connection timed out";
        continue;
      }
      int err = 0;
      socklen_t len = sizeof err;
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) {
        why = std::strerror(err);
        continue;
      }
    }
    s = std::move(candidate);
  }
  ::freeaddrinfo(found);
  if (!s) throw Unreachable(fmt::format("{}: cannot connect: {}", name, why));
  set_socket_options(s->fd_);
  return s;
}

std::unique_ptr<Stream> Stream::open(const Endpoint& node, TlsContext* tls, Clock::time_point deadline,
                                     const std::string& name) {
  std::unique_ptr<Stream> s = connect_tcp(node, deadline, name);
  if (!tls) return s;
  // OpenSSL's global locks and first-use set-up (BIO method, providers) are
  // taken from here to the end of the handshake: a fork waits for it.
  const OpenSslSection no_fork;
  // TLS: SNI and the name checked are the server_name option, else the host
  // connected to (an IP address is checked against the certificate's IP SANs).
  ERR_clear_error();
  s->ssl_ = tls->new_ssl();
  BIO* bio = s->ssl_ ? socket_bio(s->fd_) : nullptr;
  if (!bio) throw Unreachable(fmt::format("{}: TLS set-up failed: {}", name, ssl_error_text()));
  SSL_set_bio(s->ssl_, bio, bio);
  const RedisTlsOptions& o = tls->options();
  const std::string& expected = o.server_name.empty() ? node.host : o.server_name;
  const bool ip = is_ip_address(expected);
  if (!ip) SSL_set_tlsext_host_name(s->ssl_, expected.c_str());
  if (!o.insecure_skip_verify) {
    X509_VERIFY_PARAM* param = SSL_get0_param(s->ssl_);
    const int ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(param, expected.c_str())
                      : X509_VERIFY_PARAM_set1_host(param, expected.c_str(), 0);
    if (ok != 1) throw Unreachable(fmt::format("{}: TLS set-up failed: bad server name '{}'", name, expected));
  }
  s->handshake(deadline, name);
  return s;
}

// SSL_connect until it is done or fails, waiting for the socket in between.
void Stream::handshake(Clock::time_point deadline, const std::string& name) {
  while (true) {
    ERR_clear_error();
    errno = 0;
    const int rc = SSL_connect(ssl_);
    if (rc == 1) return;
    const int err = SSL_get_error(ssl_, rc);
    const short events = err == SSL_ERROR_WANT_READ ? POLLIN : err == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
    if (events == 0)
      throw Unreachable(fmt::format("{}: TLS handshake failed: {}", name, handshake_failure(ssl_, rc, ssl_error_text())));
    const Io w = wait(events, deadline);
    if (w == Io::timeout)
      throw Unreachable(fmt::format(
          "{}: TLS handshake failed: no answer within the connect timeout (is it a plain TCP port? a redis:// URL "
          "for that)",
          name));
    if (w != Io::done) throw Unreachable(fmt::format("{}: TLS handshake failed: {}", name, std::strerror(errno)));
  }
}

Stream::~Stream() {
  if (ssl_) {
    const OpenSslSection no_fork;
    SSL_free(ssl_);
  }  // no close_notify: the socket is closed right after, as hiredis does
  ::close(fd_);
}

Stream::Io Stream::wait(short events, Clock::time_point deadline, int wake_fd) const {
  while (true) {
    pollfd p[2]{};
    p[0].fd = fd_;
    p[0].events = events;
    p[1].fd = wake_fd;
    p[1].events = POLLIN;
    const int n = ::poll(p, wake_fd >= 0 ? 2 : 1, remaining_ms(deadline));
    if (n > 0) return Io::done;
    if (n == 0) return Io::timeout;
    if (errno != EINTR) return Io::failed;
  }
}

Stream::Io Stream::write_all(std::string_view data, Clock::time_point deadline, std::string& why) {
  std::size_t done = 0;
  while (done < data.size()) {
    short events = POLLOUT;
    if (ssl_) {
      const OpenSslSection no_fork;  // not across the wait below: a fork waits only for the call
      ERR_clear_error();
      errno = 0;
      const int n = SSL_write(ssl_, data.data() + done, static_cast<int>(std::min<std::size_t>(data.size() - done, INT_MAX)));
      if (n > 0) {
        done += static_cast<std::size_t>(n);
        continue;
      }
      if (const Io io = ssl_wait_for(n, events, why); io != Io::done) return Io::failed;
    } else {
      const ssize_t n = ::send(fd_, data.data() + done, data.size() - done, MSG_NOSIGNAL);
      if (n >= 0) {
        done += static_cast<std::size_t>(n);
        continue;
      }
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        why = std::strerror(errno);
        return Io::failed;
      }
    }
    if (const Io w = await(events, deadline, "write timed out", why); w != Io::done) return w;
  }
  return Io::done;
}

Stream::Io Stream::ssl_wait_for(int n, short& events, std::string& why) const {
  const int err = SSL_get_error(ssl_, n);
  if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
    events = err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
    return Io::done;
  }
  if (err == SSL_ERROR_ZERO_RETURN) {
    why = "connection closed by the server";
    return Io::closed;
  }
  why = ssl_error_text();
  if (why.empty()) why = errno ? std::strerror(errno) : "connection closed by the server";
  return Io::failed;
}

Stream::Io Stream::await(short events, Clock::time_point deadline, const char* on_timeout, std::string& why) const {
  const Io w = wait(events, deadline);
  if (w == Io::timeout) why = on_timeout;
  else if (w != Io::done) why = std::strerror(errno);
  return w;
}

Stream::Io Stream::read_some(std::string& out, Clock::time_point deadline, std::string& why) {
  char buf[16384];
  while (true) {
    short events = POLLIN;
    if (ssl_) {
      const OpenSslSection no_fork;  // not across the wait below
      ERR_clear_error();
      errno = 0;
      const int n = SSL_read(ssl_, buf, sizeof buf);
      if (n > 0) {
        out.append(buf, static_cast<std::size_t>(n));
        return Io::done;
      }
      if (const Io io = ssl_wait_for(n, events, why); io != Io::done) return io;
    } else {
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n > 0) {
        out.append(buf, static_cast<std::size_t>(n));
        return Io::done;
      }
      if (n == 0) {
        why = "connection closed by the server";
        return Io::closed;
      }
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        why = std::strerror(errno);
        return Io::failed;
      }
    }
    if (const Io w = await(events, deadline, "Resource temporarily unavailable", why); w != Io::done) return w;
  }
}

bool Stream::pending() const {
  if (!ssl_) return false;
  const OpenSslSection no_fork;
  return SSL_pending(ssl_) > 0;
}

bool Stream::wait_readable(int timeout_ms, int wake_fd) const {
  if (pending()) return true;
  return wait(POLLIN, Clock::now() + std::chrono::milliseconds(timeout_ms), wake_fd) != Io::timeout;
}

bool Stream::looks_idle_and_open() {
  if (pending()) return false;
  pollfd p{};
  p.fd = fd_;
  p.events = POLLIN;
  if (::poll(&p, 1, 0) == 0) return true;
  if (!ssl_) return false;
  // TLS: records that are not data (a session ticket, a key update) also
  // wake poll(); open as long as no data and no close arrives.
  char c;
  const OpenSslSection no_fork;
  ERR_clear_error();
  const int n = SSL_peek(ssl_, &c, 1);
  if (n > 0) return false;
  const int err = SSL_get_error(ssl_, n);
  ERR_clear_error();
  return err == SSL_ERROR_WANT_READ;
}

}  // namespace pathlock::redis
