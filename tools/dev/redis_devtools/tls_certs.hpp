// Certificates for TLS tests and benchmarks, made at run time with the
// `openssl` command into a scratch directory (never committed keys), and
// the redis-server arguments that serve them.
//
// The set: a CA, another CA (that signed nothing we use), and, signed by the
// CA: server (SAN localhost and 127.0.0.1), client (for mutual TLS),
// wrongname (SAN other.example only) and expired (valid on 2020-01-01 only).
// Keys are P-256, certificates valid for two days. The directory is removed
// by the destructor.
#pragma once

#include <string>
#include <vector>

namespace pathlock::devtools {

class TlsCertificates {
 public:
  // Throws std::runtime_error with openssl's output if it fails.
  TlsCertificates();
  ~TlsCertificates();
  TlsCertificates(const TlsCertificates&) = delete;
  TlsCertificates& operator=(const TlsCertificates&) = delete;

  const std::string& dir() const { return dir_; }
  // dir/NAME.crt and dir/NAME.key for NAME in ca, other-ca, server, client,
  // wrongname, expired.
  std::string crt(const std::string& name) const { return dir_ + "/" + name + ".crt"; }
  std::string key(const std::string& name) const { return dir_ + "/" + name + ".key"; }

  // redis-server arguments: TLS on `tls_port` with certificate `server`,
  // trusting the CA for client certificates, which are optional unless
  // `require_client_cert`. The plain port stays open (the devtools'
  // RedisConnection, which has no TLS, watches the server through it).
  std::vector<std::string> server_args(int tls_port, bool require_client_cert = false,
                                       const std::string& server = "server") const;

 private:
  std::string dir_;
};

}  // namespace pathlock::devtools
