#include "support/redis_server.hpp"

#include "redis/library.hpp"
#include "support/backends.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>

namespace pathlock::test {

RedisServer& shared_redis_server() {
  static const std::unique_ptr<RedisServer> server = [] {
    const char* url = std::getenv("PATHLOCK_TEST_REDIS_URL");
    if (url && *url) return RedisServer::external(url);
    return std::make_unique<RedisServer>();
  }();
  return *server;
}

ClusterServers& shared_cluster() {
  static const std::unique_ptr<ClusterServers> cluster = std::make_unique<ClusterServers>();
  return *cluster;
}

SentinelServers& shared_sentinel() {
  static const std::unique_ptr<SentinelServers> sentinel = std::make_unique<SentinelServers>();
  return *sentinel;
}

TlsCertificates& shared_tls_certificates() {
  static const std::unique_ptr<TlsCertificates> certs = std::make_unique<TlsCertificates>();
  return *certs;
}

RedisServer& shared_tls_redis_server() {
  static const std::unique_ptr<RedisServer> server =
      std::make_unique<RedisServer>(shared_tls_certificates().server_args(devtools::free_loopback_port()));
  return *server;
}

RedisTlsOptions test_tls_options() {
  RedisTlsOptions tls;
  tls.ca_file = shared_tls_certificates().crt("ca");
  return tls;
}

std::unique_ptr<LockEngine> redis_tls_engine(const std::string& url, const RedisTlsOptions& tls,
                                             Millis connect_timeout) {
  RedisOptions options;
  options.url = url;
  options.tls = tls;
  options.connect_timeout = connect_timeout;
  return make_redis_engine(options);
}

std::unique_ptr<LockEngine> redis_engine(const std::string& url, const MatrixTable* matrix, std::size_t pool_size,
                                         Millis command_timeout) {
  EngineOptions opts;
  opts.backend = Backend::redis;
  opts.redis.url = url;
  opts.matrix = matrix;
  opts.redis.pool_size = pool_size;
  opts.redis.command_timeout = command_timeout;
  return make_engine(opts);
}

TwoMatrices::TwoMatrices(const MatrixTable& other_matrix, const std::string& hint)
    : ns(unique_namespace(hint)),
      shipped(redis_engine(shared_redis_server().url())),
      other(redis_engine(shared_redis_server().url(), &other_matrix)) {}

std::string prefix_of(const std::string& ns) { return "pl:{" + ns + "}:"; }

namespace {
// Does the server at 127.0.0.1:`port` answer a PING within `limit`? A
// connection the kernel accepts for a busy server is answered late.
bool answers_ping_within(int port, std::chrono::milliseconds limit) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return true;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  bool answered = true;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::send(fd, "PING\r\n", 6, MSG_NOSIGNAL) == 6) {
    pollfd p{fd, POLLIN, 0};
    answered = ::poll(&p, 1, static_cast<int>(limit.count())) != 0;
  }
  ::close(fd);
  return answered;
}
}  // namespace

bool until_busy(const RedisServer& server) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < end)
    if (!answers_ping_within(server.port(), std::chrono::milliseconds(100))) return true;
  return false;
}

long long command_calls(const RedisServer& server, const std::string& command) {
  const std::string stats = server.command({"INFO", "commandstats"}).str;
  const std::string key = "cmdstat_" + command + ":calls=";
  const std::size_t at = stats.find(key);
  return at == std::string::npos ? 0 : std::stoll(stats.substr(at + key.size()));
}

long long info_field(const RedisServer& server, const std::string& section, const std::string& field) {
  const std::string info = server.command({"INFO", section}).str;
  const std::size_t at = info.find("\n" + field + ":");
  if (at == std::string::npos) throw std::runtime_error("INFO " + section + " has no field " + field);
  return std::stoll(info.substr(at + field.size() + 2));
}

std::vector<std::string> ns_keys(const RedisServer& server, const std::string& ns) {
  std::vector<std::string> out;
  const std::string prefix = prefix_of(ns);
  for (const std::string& k : server.keys(prefix + "*")) out.push_back(k.substr(prefix.size()));
  return out;
}

RedisReply call_function(RedisConnection& c, const MatrixTable& m, std::string_view function, const std::string& ns,
                         std::vector<std::string> args) {
  const redis::Library lib = redis::library_for(m);
  c.command({"FUNCTION", "LOAD", lib.code});  // "already exists" when loaded: the same text
  const std::vector<std::string> keys = redis::namespace_keys(ns);
  std::vector<std::string> argv{"FCALL", lib.function_prefix + std::string(function), std::to_string(keys.size())};
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), std::make_move_iterator(args.begin()), std::make_move_iterator(args.end()));
  return c.command(argv);
}

}  // namespace pathlock::test
