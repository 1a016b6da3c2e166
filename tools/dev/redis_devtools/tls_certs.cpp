// Test certificates made with the openssl command (make_test_certs.sh); see tls_certs.hpp.
#include "redis_devtools/tls_certs.hpp"

#include "redis_devtools/redis_server.hpp"

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace pathlock::devtools {

TlsCertificates::TlsCertificates() {
  char tmpl[] = "/tmp/pathlock-tls-XXXXXX";
  if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  std::string output;
  if (run_program({"sh", PATHLOCK_MAKE_TEST_CERTS, dir_}, output) != 0) {
    std::filesystem::remove_all(dir_);
    throw std::runtime_error("making test certificates with openssl failed:\n" + output);
  }
}

TlsCertificates::~TlsCertificates() {
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::vector<std::string> TlsCertificates::server_args(int tls_port, bool require_client_cert,
                                                      const std::string& server) const {
  return {"--tls-port",         std::to_string(tls_port),
          "--tls-cert-file",    crt(server),
          "--tls-key-file",     key(server),
          "--tls-ca-cert-file", crt("ca"),
          "--tls-auth-clients", require_client_cert ? "yes" : "optional"};
}

}  // namespace pathlock::devtools
