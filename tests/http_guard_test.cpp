// The HTTP servers' hardening (src/metrics/http/http_guard.hpp), over real
// sockets against a MetricsServer and a ConsoleServer: Host names, Origin
// of a state change, slow clients, bounded connections, multi-range
// requests, request sizes, the words of refusals; and log_escape.
#ifdef PATHLOCK_TEST_WITH_METRICS_SERVER
#include "console_server.hpp"
#include "core/request.hpp"
#include "support/console_setup.hpp"

#include <pathlock/metrics_server.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace pathlock;
using namespace std::chrono_literals;
using json = nlohmann::json;

// A raw TCP connection (IPv4 or IPv6 loopback), closed when destroyed.
class Socket {
 public:
  explicit Socket(int port, bool v6 = false) {
    fd_ = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd_ >= 0);
    int rc = -1;
    if (v6) {
      sockaddr_in6 a{};
      a.sin6_family = AF_INET6;
      a.sin6_port = htons(static_cast<std::uint16_t>(port));
      a.sin6_addr = in6addr_loopback;
      rc = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    } else {
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(static_cast<std::uint16_t>(port));
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      rc = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    }
    REQUIRE(rc == 0);
  }
  ~Socket() { ::close(fd_); }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  bool send(const std::string& s) { return ::send(fd_, s.data(), s.size(), MSG_NOSIGNAL) == ssize_t(s.size()); }
  // Everything until the server closes (at most 30 s: a test's guard, not a timing).
  std::string read_all() {
    std::string out;
    char buf[65536];
    const auto end = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < end) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return out;
      out.append(buf, static_cast<std::size_t>(n));
    }
    FAIL("the server never closed the connection");
    return out;
  }
  // Whether the server has closed (or reset) the connection.
  bool closed_by_server() {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0) return false;
    char c;
    return ::recv(fd_, &c, 1, MSG_PEEK) <= 0;
  }

 private:
  int fd_ = -1;
};

std::string request(int port, const std::string& head, bool v6 = false) {
  Socket s(port, v6);
  REQUIRE(s.send(head));
  return s.read_all();
}

std::string get(int port, const std::string& path, const std::string& host, const std::string& extra = "") {
  return request(port, "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\n" + extra + "\r\n");
}

int status_of(const std::string& answer) {
  return answer.rfind("HTTP/1.1 ", 0) == 0 ? std::stoi(answer.substr(9, 3)) : -1;
}

std::string body_of(const std::string& answer) {
  const std::size_t end = answer.find("\r\n\r\n");
  return end == std::string::npos ? "" : answer.substr(end + 4);
}

std::shared_ptr<Metrics> counted_metrics() {
  auto metrics = std::make_shared<Metrics>();
  for (int i = 0; i < 5; ++i) metrics->count_acquire(default_matrix().op_index("upload"), Outcome::granted);
  return metrics;
}

using Console = test::ConsoleSetup;

}  // namespace

TEST_CASE("http: a MetricsServer answers only its own Host names", "[http][metrics]") {
  const auto metrics = counted_metrics();
  MetricsServer server(metrics);
  const int port = server.port();
  const std::string p = ":" + std::to_string(port);
  for (const std::string& host : std::vector<std::string>{"127.0.0.1" + p, "localhost" + p, "LOCALHOST" + p, "[::1]" + p}) {
    INFO(host);
    const std::string a = get(port, "/metrics", host);
    CHECK(status_of(a) == 200);
    CHECK(body_of(a) == metrics->prometheus());
  }
  // A DNS-rebinding page sends its own name; another port, no Host, junk.
  for (const std::string& host : std::vector<std::string>{"rebind.attacker.test" + p, "localhost:1", "localhost",
                                                         "127.0.0.1", "[::1", "local host" + p}) {
    INFO(host);
    const std::string a = get(port, "/metrics", host);
    CHECK(status_of(a) == 421);
    CHECK(body_of(a).find("pathlock_") == std::string::npos);
  }
  CHECK(status_of(request(port, "GET /metrics HTTP/1.1\r\n\r\n")) == 421);

  MetricsServerOptions o;
  o.allowed_hosts = {"scrape.internal", "pinned.test:81"};
  MetricsServer named(metrics, o);
  const std::string q = ":" + std::to_string(named.port());
  CHECK(status_of(get(named.port(), "/metrics", "scrape.internal" + q)) == 200);
  CHECK(status_of(get(named.port(), "/metrics", "Scrape.Internal")) == 200);
  CHECK(status_of(get(named.port(), "/metrics", "pinned.test:81")) == 200);
  CHECK(status_of(get(named.port(), "/metrics", "pinned.test" + q)) == 421);
  CHECK(status_of(get(named.port(), "/metrics", "rebind.attacker.test" + q)) == 421);
}

TEST_CASE("http: IPv6 listen addresses, bracketed or not, and their URLs", "[http][metrics]") {
  const auto metrics = counted_metrics();
  for (const char* listen : {"[::1]:0", "::1:0"}) {
    INFO(listen);
    MetricsServer server(metrics, listen);
    CHECK(server.host() == "::1");
    CHECK(server.url() == "http://[::1]:" + std::to_string(server.port()) + "/metrics");
    const std::string a =
        request(server.port(), "GET /metrics HTTP/1.1\r\nHost: [::1]:" + std::to_string(server.port()) + "\r\n\r\n",
                true);
    CHECK(status_of(a) == 200);
  }
  CHECK(parse_listen_address("[::1]:9464") == std::pair<std::string, int>{"::1", 9464});
  CHECK_THROWS_AS(parse_listen_address("[]:1"), InvalidRequest);
}

TEST_CASE("http: the console refuses other Host names and cross-origin state changes", "[http][console]") {
  Console c;
  const Grant held = c.hold("ann", "upload", "/f");
  console::ConsoleServer server(*c.engine, c.options(true));
  const int port = server.port();
  const std::string ours = "127.0.0.1:" + std::to_string(port);
  const std::string evil = "rebind.attacker.test:" + std::to_string(port);
  CHECK(status_of(get(port, "/api/info", ours)) == 200);
  for (const char* path : {"/api/info", "/api/locks?ns=web", "/", "/metrics"}) {
    INFO(path);
    const std::string a = get(port, path, evil);
    CHECK(status_of(a) == 421);
    CHECK(body_of(a).find(held.id) == std::string::npos);
  }
  const std::string release = "POST /api/force-release?ns=web&id=" + held.id +
                              " HTTP/1.1\r\nX-Pathlock-Console: 1\r\nContent-Length: 0\r\n";
  CHECK(status_of(request(port, release + "Host: " + evil + "\r\nOrigin: http://" + evil + "\r\n\r\n")) == 421);
  // The right Host (a rebinding page cannot choose it, but a proxy in
  // front could forward it): another Origin is still refused.
  for (const std::string& origin :
       std::vector<std::string>{"http://" + evil, "null", "http://127.0.0.1:1", "https://example.test"}) {
    INFO(origin);
    CHECK(status_of(request(port, release + "Host: " + ours + "\r\nOrigin: " + origin + "\r\n\r\n")) == 403);
  }
  CHECK(c.engine->list("web").size() == 1);
  // Same origin: released.
  const std::string a = request(port, release + "Host: " + ours + "\r\nOrigin: http://" + ours + "\r\n\r\n");
  CHECK(status_of(a) == 200);
  CHECK(json::parse(body_of(a))["released"] == true);
  CHECK(c.engine->list("web").empty());

  console::ConsoleOptions named = c.options(false);
  named.allowed_hosts = {"console.example.test"};
  console::ConsoleServer proxied(*c.engine, named);
  CHECK(status_of(get(proxied.port(), "/api/info", "console.example.test")) == 200);
  CHECK(status_of(get(proxied.port(), "/api/info", evil)) == 421);
}

TEST_CASE("http: slow clients neither stall a scrape nor stay past the deadline", "[http][metrics][console]") {
  const auto metrics = counted_metrics();
  MetricsServerOptions o;
  o.request_deadline = 3s;
  MetricsServer exporter(metrics, o);
  Console c;
  console::ConsoleOptions co = c.options(false);
  co.request_deadline = 3s;
  console::ConsoleServer console(*c.engine, co);
  // Ten clients per server, each sending one header line a second and never
  // ending its request (cpp-httplib's own loop gave them its 8 threads).
  std::vector<std::unique_ptr<Socket>> slow;
  for (const int port : {exporter.port(), console.port()})
    for (int i = 0; i < 10; ++i) {
      slow.push_back(std::make_unique<Socket>(port));
      REQUIRE(slow.back()->send("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\n"));
    }
  std::atomic<bool> done{false};
  std::thread trickle([&] {
    for (int n = 0; !done; ++n) {
      for (auto& s : slow) s->send("X-Slow-" + std::to_string(n) + ": 1\r\n");
      for (int i = 0; i < 10 && !done; ++i) std::this_thread::sleep_for(100ms);
    }
  });
  const std::string scrape = get(exporter.port(), "/metrics", "127.0.0.1:" + std::to_string(exporter.port()));
  CHECK(status_of(scrape) == 200);
  CHECK(body_of(scrape) == metrics->prometheus());
  const std::string page = get(console.port(), "/", "127.0.0.1:" + std::to_string(console.port()));
  CHECK(status_of(page) == 200);
  CHECK(body_of(page).find("/app.js") != std::string::npos);
  // Still sending, each is closed by the server once its deadline passes.
  for (auto& s : slow) {
    const auto end = std::chrono::steady_clock::now() + 30s;
    while (!s->closed_by_server() && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(50ms);
    CHECK(s->closed_by_server());
  }
  done = true;
  trickle.join();
}

TEST_CASE("http: connections beyond the bound are answered 503 at once", "[http][metrics]") {
  const auto metrics = counted_metrics();
  MetricsServerOptions o;
  o.max_connections = 4;
  MetricsServer server(metrics, o);
  const std::string host = "127.0.0.1:" + std::to_string(server.port());
  {
    std::vector<std::unique_ptr<Socket>> idle;  // accepted in order, served (waiting for a request)
    for (int i = 0; i < 4; ++i) idle.push_back(std::make_unique<Socket>(server.port()));
    const std::string refused = get(server.port(), "/metrics", host);
    CHECK(status_of(refused) == 503);
    CHECK(body_of(refused) == "too many connections\n");
  }
  // Closed by their clients: the server serves again.
  std::string a;
  for (int i = 0; i < 600 && status_of(a) != 200; ++i) {
    a = get(server.port(), "/metrics", host);
    if (status_of(a) != 200) std::this_thread::sleep_for(50ms);
  }
  CHECK(status_of(a) == 200);
}

TEST_CASE("http: several ranges get the plain answer, one range still works", "[http][metrics][console]") {
  const auto metrics = counted_metrics();
  MetricsServer exporter(metrics);
  Console c;
  console::ConsoleServer console(*c.engine, c.options(false));
  std::string ranges = "Range: bytes=0-";
  for (int i = 0; i < 700; ++i) ranges += ",0-";
  ranges += "\r\n";
  for (const auto& [port, path] : {std::pair{exporter.port(), "/metrics"}, std::pair{console.port(), "/app.js"}}) {
    INFO(path);
    const std::string host = "127.0.0.1:" + std::to_string(port);
    const std::string whole = body_of(get(port, path, host));
    REQUIRE(whole.size() > 100);
    const std::string many = get(port, path, host, ranges);
    CHECK(status_of(many) == 200);
    CHECK(body_of(many) == whole);
    CHECK(many.size() < whole.size() + 2000);
    const std::string one = get(port, path, host, "Range: bytes=0-9\r\n");
    CHECK(status_of(one) == 206);
    CHECK(body_of(one) == whole.substr(0, 10));
  }
}

TEST_CASE("http: oversized requests are refused in words, not as a missing page", "[http][console]") {
  Console c;
  console::ConsoleServer server(*c.engine, c.options(false));
  const int port = server.port();
  const std::string host = "Host: 127.0.0.1:" + std::to_string(port) + "\r\n";
  // 5 MiB of matrix text announced (the limit is 4 MiB): refused before
  // the body is sent.
  const std::string big = "POST /api/matrix/check HTTP/1.1\r\n" + host +
                          "X-Pathlock-Console: 1\r\nContent-Type: application/json\r\nContent-Length: " +
                          std::to_string(5 << 20) + "\r\n\r\n";
  std::string a = request(port, big);
  CHECK(status_of(a) == 413);
  CHECK(json::parse(body_of(a))["error"] == "HTTP 413: request too large");
  a = request(port, "GARBAGE\r\n\r\n");
  CHECK(status_of(a) == 400);
  CHECK(json::parse(body_of(a))["error"] == "HTTP 400: malformed request");
  a = get(port, "/no/such/page", "127.0.0.1:" + std::to_string(port));
  CHECK(json::parse(body_of(a))["error"] == "HTTP 404: no such page");
  // 200 KiB of headers: cut at the head limit, never read to the end.
  std::string head = "GET / HTTP/1.1\r\n" + host;
  for (int i = 0; i < 2000; ++i) head += "X-Pad-" + std::to_string(i) + ": " + std::string(100, 'p') + "\r\n";
  Socket s(port);
  s.send(head);  // the server may close before all of it is sent
  a = s.read_all();
  CHECK(status_of(a) != 200);
}

TEST_CASE("http: force-release ids are checked and audit lines escaped", "[http][console]") {
  Console c;
  console::ConsoleServer server(*c.engine, c.options(true));
  const int port = server.port();
  const auto release = [&](const std::string& query) {
    return request(port, "POST /api/force-release?" + query + " HTTP/1.1\r\nHost: 127.0.0.1:" +
                             std::to_string(port) + "\r\nX-Pathlock-Console: 1\r\nContent-Length: 0\r\n\r\n");
  };
  for (const std::string& id :
       std::vector<std::string>{std::string("id="), "id=" + std::string(65, 'a'), std::string("id=zz%0Apathlock:%20warning%1B%5B2J"),
        std::string("id=a%20b")}) {
    INFO(id);
    const std::string a = release("ns=web&" + id);
    CHECK(status_of(a) == 400);
    CHECK(json::parse(body_of(a))["error"] == "id must be 1..64 characters of [A-Za-z0-9-]");
  }
  CHECK(c.log().empty());
  // A well-formed id: one line, its values escaped (log_escape, below).
  CHECK(status_of(release("ns=web&id=abc")) == 200);
  const auto log = c.log();
  REQUIRE(log.size() == 1);
  CHECK(log[0] == "console: force-release of lock abc in namespace web from 127.0.0.1: no such live lock");
}

TEST_CASE("http: --admin beyond loopback is warned about", "[http][console]") {
  for (const auto& [listen, admin, warned] : {std::tuple{"0.0.0.0:0", true, true}, std::tuple{"127.0.0.1:0", true, false},
                                              std::tuple{"[::1]:0", true, false}, std::tuple{"0.0.0.0:0", false, false}}) {
    INFO(listen << " admin " << admin);
    Console c;
    console::ConsoleOptions o = c.options(admin);
    o.listen = listen;
    console::ConsoleServer server(*c.engine, o);
    const auto log = c.log();
    CHECK((log.size() == 1 && log[0].find("beyond loopback, with --admin") != std::string::npos) == warned);
  }
}

TEST_CASE("log_escape: control characters, backslashes and invalid UTF-8 written as hex escapes", "[http]") {
  CHECK(core::log_escape("plain /p/A b.txt") == "plain /p/A b.txt");
  CHECK(core::log_escape("zz\npathlock: warning: x released\x1b[2J") ==
        "zz\\x0apathlock: warning: x released\\x1b[2J");
  CHECK(core::log_escape("a\\b\r\t\x7f") == "a\\x5cb\\x0d\\x09\\x7f");
  CHECK(core::log_escape("caf\xc3\xa9 \xe6\x96\x87") == "caf\xc3\xa9 \xe6\x96\x87");  // UTF-8 kept
  CHECK(core::log_escape("\xc2\x9b" "2J \xff\xc3") == "\\xc2\\x9b2J \\xff\\xc3");     // C1 CSI, invalid bytes
}
#endif
