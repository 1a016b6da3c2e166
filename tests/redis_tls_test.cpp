// TLS to Redis (rediss://): against real redis-servers serving TLS with
// certificates made at test time (support/redis_server.hpp,
// redis_devtools/tls_certs.hpp). The conformance suite runs on a TLS server
// too (the "tls" row of support/backends.cpp, ctest conformance_on_tls).
#include "support/admin_status.hpp"
#include "support/backends.hpp"
#include "support/redis_server.hpp"

#include "redis/connection.hpp"
#include "redis/tls.hpp"

#include <pathlock/engine.hpp>
#include <pathlock/metrics.hpp>
#include <pathlock/redis.hpp>

#include <catch2/catch.hpp>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <sstream>
#include <atomic>
#include <thread>
#include <fstream>

using namespace pathlock;
using namespace std::chrono_literals;
using namespace pathlock::test;  // servers, engines and key helpers of support/

namespace {

// A grant and its release through `engine`, on a namespace of its own.
void lock_and_unlock(LockEngine& engine) {
  const std::string ns = unique_namespace("tls");
  const AcquireResult r = engine.acquire(one_target_request(ns, "alice", "upload", "/a/b"));
  REQUIRE(r.granted());
  CHECK(engine.release(ns, r.grant.id, r.grant.token));
}

// Connected clients of `server` other than the one asking.
long long other_clients(const RedisServer& server) {
  const std::string info = server.command({"INFO", "clients"}).str;
  const std::size_t at = info.find("connected_clients:");
  REQUIRE(at != std::string::npos);
  return std::stoll(info.substr(at + 18)) - 1;
}

void copy_file(const std::string& from, const std::string& to) {
  std::filesystem::copy_file(from, to, std::filesystem::copy_options::overwrite_existing);
}

}  // namespace

// The test CA and the client's certificate and key (mutual TLS).
RedisTlsOptions mutual_tls_options() {
  RedisTlsOptions tls = test_tls_options();
  tls.cert_file = shared_tls_certificates().crt("client");
  tls.key_file = shared_tls_certificates().key("client");
  return tls;
}

TEST_CASE("rediss:// locks over TLS, with the password sent inside it", "[redis][tls]") {
  auto engine = redis_tls_engine(shared_tls_redis_server().tls_url(), test_tls_options());
  lock_and_unlock(*engine);

  // AUTH after the handshake: a password-protected TLS server.
  TlsCertificates& certs = shared_tls_certificates();
  RedisServer server(
      [&] {
        auto args = certs.server_args(devtools::free_loopback_port());
        args.insert(args.end(), {"--requirepass", "s3cret"});
        return args;
      }());
  const std::string url = "rediss://:s3cret@127.0.0.1:" + std::to_string(server.tls_port());
  lock_and_unlock(*redis_tls_engine(url, test_tls_options()));
  CHECK_THROWS_WITH(redis_tls_engine("rediss://:wrong@127.0.0.1:" + std::to_string(server.tls_port()),
                                     test_tls_options()),
                    Catch::Contains("AUTH failed"));

  // The name checked may be set (SNI too): "localhost" is in the certificate.
  RedisTlsOptions named = test_tls_options();
  named.server_name = "localhost";
  lock_and_unlock(*redis_tls_engine(shared_tls_redis_server().tls_url(), named));
  // The CA from a hashed directory instead of a file.
  const std::string ca_dir = certs.dir() + "/ca-dir";
  std::filesystem::create_directories(ca_dir);
  copy_file(certs.crt("ca"), ca_dir + "/test-ca.pem");
  std::string output;
  REQUIRE(devtools::run_program({"openssl", "rehash", ca_dir}, output) == 0);
  RedisTlsOptions by_dir;
  by_dir.ca_dir = ca_dir;
  lock_and_unlock(*redis_tls_engine(shared_tls_redis_server().tls_url(), by_dir));
  // No CA given: the system trust store, which does not know the test CA.
  CHECK_THROWS_WITH(redis_tls_engine(shared_tls_redis_server().tls_url(), RedisTlsOptions{}),
                    Catch::Contains("verify failed"));

  RedisTlsOptions tls13 = test_tls_options();
  tls13.min_version = "1.3";
  lock_and_unlock(*redis_tls_engine(shared_tls_redis_server().tls_url(), tls13));
}

TEST_CASE("pathlock admin over TLS: the --tls-* options", "[redis][tls][admin]") {
  TlsCertificates& certs = shared_tls_certificates();
  RedisServer server(certs.server_args(devtools::free_loopback_port(), /*require_client_cert=*/true));
  const RedisTlsOptions tls = mutual_tls_options();
  auto engine = redis_tls_engine(server.tls_url(), tls);
  const std::string ns = unique_namespace("tls-admin");
  REQUIRE(engine->acquire(one_target_request(ns, "alice", "upload", "/a")).granted());
  const auto lines = admin_status({"status", "--redis", server.tls_url(), "--namespace", ns, "--tls-ca-file",
                                   certs.crt("ca"), "--tls-cert", certs.crt("client"), "--tls-key",
                                   certs.key("client"), "--tls-server-name", "localhost"});
  REQUIRE(lines.size() == 1);
  CHECK(lines[0]["namespace"] == ns);
  CHECK(lines[0]["matrices"][0]["locks"] == 1);
}

TEST_CASE("mutual TLS: a server that wants client certificates gets ours", "[redis][tls]") {
  TlsCertificates& certs = shared_tls_certificates();
  RedisServer server(certs.server_args(devtools::free_loopback_port(), /*require_client_cert=*/true));
  RedisTlsOptions tls = mutual_tls_options();
  lock_and_unlock(*redis_tls_engine(server.tls_url(), tls));

  // Without one: refused, and said so.
  try {
    redis_tls_engine(server.tls_url(), test_tls_options());
    FAIL("connected without a client certificate");
  } catch (const BackendError& e) {
    CHECK_THAT(e.what(), Catch::Contains("client certificate") && Catch::Contains("cert_file"));
  }
  // A client certificate of another CA: refused by the server.
  RedisTlsOptions foreign = test_tls_options();
  foreign.cert_file = certs.crt("other-ca");
  foreign.key_file = certs.key("other-ca");
  CHECK_THROWS_WITH(redis_tls_engine(server.tls_url(), foreign), Catch::Contains("client certificate"));
  CHECK(other_clients(server) == 0);
}

TEST_CASE("TLS failures are BackendErrors that name the cause, and leave nothing behind", "[redis][tls]") {
  TlsCertificates& certs = shared_tls_certificates();
  RedisServer& good = shared_tls_redis_server();

  SECTION("a server certificate of another CA") {
    RedisTlsOptions tls = test_tls_options();
    tls.ca_file = certs.crt("other-ca");
    CHECK_THROWS_WITH(redis_tls_engine(good.tls_url(), tls),
                      Catch::Contains("TLS handshake failed") && Catch::Contains("verify failed") &&
                          Catch::Contains("trusted CA"));
  }
  SECTION("an expired server certificate") {
    RedisServer expired(certs.server_args(devtools::free_loopback_port(), false, "expired"));
    CHECK_THROWS_WITH(redis_tls_engine(expired.tls_url(), test_tls_options()),
                      Catch::Contains("certificate has expired"));
    CHECK(other_clients(expired) == 0);
  }
  SECTION("a certificate for another host") {
    RedisServer other(certs.server_args(devtools::free_loopback_port(), false, "wrongname"));
    CHECK_THROWS_WITH(redis_tls_engine(other.tls_url(), test_tls_options()), Catch::Contains("mismatch"));
    RedisTlsOptions named = test_tls_options();
    named.server_name = "db.example";  // neither is this name in the good certificate
    CHECK_THROWS_WITH(redis_tls_engine(good.tls_url(), named),
                      Catch::Contains("hostname mismatch") && Catch::Contains("server_name"));
    CHECK(other_clients(other) == 0);
    // ... unless told to accept any certificate.
    RedisTlsOptions insecure;
    insecure.insecure_skip_verify = true;
    lock_and_unlock(*redis_tls_engine(other.tls_url(), insecure));
    // The loud warning goes through the service's log, never straight to stderr.
    std::vector<std::string> logged;
    RedisOptions loud;
    loud.url = other.tls_url();
    loud.tls = insecure;
    loud.observe.log = [&](LogLevel, std::string_view message, const std::vector<LogField>&) {
      logged.emplace_back(message);
    };
    lock_and_unlock(*make_redis_engine(loud));
    REQUIRE_FALSE(logged.empty());
    CHECK(logged[0].find("insecure_skip_verify is set") != std::string::npos);
  }
  SECTION("a server below the minimum TLS version") {
    RedisServer old([&] {
      auto args = certs.server_args(devtools::free_loopback_port());
      args.insert(args.end(), {"--tls-protocols", "TLSv1.2"});
      return args;
    }());
    RedisTlsOptions tls13 = test_tls_options();
    tls13.min_version = "1.3";
    CHECK_THROWS_WITH(redis_tls_engine(old.tls_url(), tls13),
                      Catch::Contains("TLS handshake failed") && Catch::Contains("min_version"));
    lock_and_unlock(*redis_tls_engine(old.tls_url(), test_tls_options()));  // 1.2 is the default minimum
  }
  SECTION("a plain client on a TLS port") {
    const std::string plain_on_tls = "redis://127.0.0.1:" + std::to_string(good.tls_port());
    CHECK_THROWS_WITH(redis_engine(plain_on_tls), Catch::Contains("rediss://"));
  }
  SECTION("a TLS client on a plain port") {
    const std::string tls_on_plain = "rediss://127.0.0.1:" + std::to_string(good.port());
    CHECK_THROWS_WITH(redis_tls_engine(tls_on_plain, test_tls_options(), 500ms),
                      Catch::Contains("TLS handshake failed") && Catch::Contains("plain TCP port"));
  }
  SECTION("bad options: InvalidRequest, or BackendError naming the file, before any connection") {
    RedisTlsOptions missing = test_tls_options();
    missing.ca_file = certs.dir() + "/no-such-ca.crt";
    CHECK_THROWS_WITH(redis_tls_engine(good.tls_url(), missing), Catch::Contains("no-such-ca.crt"));
    RedisTlsOptions no_key = test_tls_options();
    no_key.cert_file = certs.crt("client");
    CHECK_THROWS_AS(redis_tls_engine(good.tls_url(), no_key), InvalidRequest);
    RedisTlsOptions wrong_key = test_tls_options();
    wrong_key.cert_file = certs.crt("client");
    wrong_key.key_file = certs.key("server");
    CHECK_THROWS_WITH(redis_tls_engine(good.tls_url(), wrong_key), Catch::Contains("server.key") && Catch::Contains("mismatch"));
    RedisTlsOptions not_pem = test_tls_options();
    not_pem.ca_file = certs.dir() + "/ca.cnf";
    CHECK_THROWS_AS(redis_tls_engine(good.tls_url(), not_pem), BackendError);
    RedisTlsOptions version = test_tls_options();
    version.min_version = "1.1";
    CHECK_THROWS_AS(redis_tls_engine(good.tls_url(), version), InvalidRequest);
    // TLS options with a plain URL are a mistake, not ignored.
    CHECK_THROWS_AS(redis_tls_engine(good.url(), test_tls_options()), InvalidRequest);
  }
}

TEST_CASE("renewed certificate files are read by the next connection", "[redis][tls]") {
  TlsCertificates& certs = shared_tls_certificates();
  RedisServer& server = shared_tls_redis_server();
  const std::string dir = certs.dir() + "/rotation";
  std::filesystem::create_directories(dir);
  RedisTlsOptions options;
  options.ca_file = dir + "/ca.crt";
  options.cert_file = dir + "/client.crt";
  options.key_file = dir + "/client.key";
  copy_file(certs.crt("ca"), options.ca_file);
  copy_file(certs.crt("client"), options.cert_file);
  copy_file(certs.key("client"), options.key_file);

  redis::ConnectionSettings settings;
  settings.tls = std::make_shared<redis::TlsContext>(options, nullptr);
  redis::Warnings warnings;
  const redis::Endpoint node{"127.0.0.1", server.tls_port()};
  const auto open = [&] { return redis::Connection::open(node, settings, redis::Connection::Role::probe, warnings); };
  auto first = open();
  CHECK(first->tls());
  CHECK(settings.tls->loads() == 1);

  // The CA file now trusts another CA only: the next connection reads it and
  // refuses the server; the open one is not affected.
  copy_file(certs.crt("other-ca"), options.ca_file);
  CHECK_THROWS_WITH(open(), Catch::Contains("verify failed"));
  CHECK(settings.tls->loads() == 2);
  CHECK(first->exchange({"PING"}).str == "PONG");
  copy_file(certs.crt("ca"), options.ca_file);
  CHECK(open()->exchange({"PING"}).str == "PONG");
  CHECK(settings.tls->loads() == 3);

  // A renewal caught half-way (a certificate that is not PEM yet): the files
  // loaded before stay in use.
  std::ofstream(options.cert_file) << "not yet\n";
  CHECK(open()->exchange({"PING"}).str == "PONG");
  CHECK(settings.tls->loads() == 3);
  copy_file(certs.crt("client"), options.cert_file);
  CHECK(open()->exchange({"PING"}).str == "PONG");
  CHECK(settings.tls->loads() == 4);
}

TEST_CASE("a Redis Cluster over TLS: every master, MOVED to TLS ports, wake-ups", "[cluster][tls]") {
  TlsCertificates& certs = shared_tls_certificates();
  ClusterServers cluster(&certs);
  auto engine = redis_tls_engine(cluster.tls_url(), test_tls_options());

  // Namespaces until every master served one: the nodes come from CLUSTER
  // SLOTS asked over TLS, which names the TLS ports.
  std::set<std::size_t> served;
  std::set<int> used_slots;
  for (int i = 0; served.size() < cluster.masters().size(); ++i) {
    REQUIRE(i < 1000);
    const std::string ns = unique_namespace("tls-cluster");
    const int slot = cluster.keyslot(prefix_of(ns));
    used_slots.insert(slot);
    served.insert(cluster.master_of(slot));
    const AcquireResult r = engine->acquire(one_target_request(ns, "alice", "upload", "/a"));
    REQUIRE(r.granted());
    CHECK(engine->release(ns, r.grant.id, r.grant.token));
  }

  // A slot moves (empty: no MIGRATE needed): the engine's map is stale, the
  // old master answers MOVED with the new one's TLS port, the call follows.
  std::string moved_ns;
  int slot = -1;
  do {
    moved_ns = unique_namespace("tls-moved");
    slot = cluster.keyslot(prefix_of(moved_ns));
  } while (used_slots.count(slot));
  const std::size_t from = cluster.master_of(slot);
  std::size_t to = from;
  for (const std::size_t m : cluster.masters())
    if (m != from) to = m;
  cluster.move_slot(slot, to);
  const AcquireResult held = engine->acquire(one_target_request(moved_ns, "alice", "upload", "/a"));
  REQUIRE(held.granted());
  CHECK(cluster.master_of(slot) == to);
  CHECK_FALSE(cluster.node(to).keys(prefix_of(moved_ns) + "*").empty());

  // A waiting call is woken by the release through its TLS subscription
  // (a delete_folder: an upload would not wait for alice's upload).
  std::atomic<bool> in_line{false};
  std::thread releaser([&] {
    try {
      devtools::wait_for("tls test", "bob to wait in line", [&] { return engine->waiters(moved_ns).size() == 1; });
      in_line = true;
    } catch (const std::exception&) {  // (the CHECK below says so)
    }
    engine->release(moved_ns, held.grant.id, held.grant.token);
  });
  const AcquireResult waited = engine->acquire(one_target_request(moved_ns, "bob", "delete_folder", "/a", 20000ms));
  releaser.join();
  CHECK(in_line);
  CHECK(waited.granted());

  // Every connection this process holds to any node came in on its TLS port.
  const std::string name = "name=pathlock-" + std::to_string(::getpid()) + " ";
  std::size_t seen = 0;
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    const std::string clients = cluster.node(i).command({"CLIENT", "LIST", "TYPE", "normal"}).str;
    std::istringstream lines(clients);
    for (std::string line; std::getline(lines, line);) {
      if (line.find(name) == std::string::npos) continue;
      ++seen;
      CHECK_THAT(line, Catch::Contains("laddr=127.0.0.1:" + std::to_string(cluster.node(i).tls_port()) + " "));
    }
  }
  CHECK(seen >= cluster.masters().size());
}

TEST_CASE("Sentinel over TLS: the sentinels, the master they name, WAIT, and the next master", "[sentinel][tls]") {
  TlsCertificates& certs = shared_tls_certificates();
  SentinelServers deployment(&certs);
  auto engine = redis_tls_engine(deployment.tls_url(), test_tls_options());
  lock_and_unlock(*engine);
  const std::size_t before = deployment.master().keys("pl:*").size();
  CHECK(before > 0);  // the data went to the master through its TLS port
  // WAIT over TLS: the replica (replicating over TLS) acknowledges the grant.
  RedisOptions replicated;
  replicated.url = deployment.tls_url();
  replicated.tls = test_tls_options();
  replicated.replicas = 1;
  replicated.command_timeout = 5000ms;
  lock_and_unlock(*make_redis_engine(replicated));
  deployment.failover();
  lock_and_unlock(*engine);  // READONLY from the old master, the sentinels asked again over TLS
}

TEST_CASE("over TLS as over TCP: a late reply is never retried, a closed connection is replaced",
          "[redis][tls][connection]") {
  TlsCertificates& certs = shared_tls_certificates();
  RedisServer server([&] {
    auto args = certs.server_args(devtools::free_loopback_port());
    args.insert(args.end(), {"--enable-debug-command", "yes"});
    return args;
  }());
  RedisOptions options;
  options.url = server.tls_url();
  options.tls = test_tls_options();
  options.pool_size = 2;
  options.command_timeout = 150ms;
  auto engine = make_redis_engine(options);
  const std::string ns = unique_namespace("tls-slow");
  REQUIRE(engine->acquire(one_target_request(ns, "o", "upload", "/warm")).granted());

  // Idle connections closed by the server: the pool sees it (a TLS close or
  // EOF) and the next call goes on a fresh connection.
  const RedisReply killed = server.command({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"});
  CHECK(killed.integer >= 1);
  CHECK(engine->acquire(one_target_request(ns, "o", "upload", "/after-kill")).granted());

  // A reply that does not come within the command timeout: BackendError, not retried.
  const auto fcalls = [&] { return command_calls(server, "fcall"); };  // FCALLs the server ran so far
  const long long before = fcalls();
  std::thread sleeper([&] { server.command({"DEBUG", "SLEEP", "1.5"}); });
  REQUIRE(test::until_busy(server));  // the server is busy sleeping now
  CHECK_THROWS_WITH(engine->acquire(one_target_request(ns, "late", "upload", "/late")),
                    Catch::Contains("no reply") && Catch::Contains("effect is unknown"));
  sleeper.join();
  // It ran once, when the server woke up, after its deadline: nothing granted.
  devtools::wait_for("tls test", "the late call to run", [&] { return fcalls() > before; });
  CHECK(fcalls() == before + 1);
  CHECK(engine->list(ns, "/late").empty());
}
