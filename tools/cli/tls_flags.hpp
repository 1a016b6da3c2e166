// The TLS options of the pathlock command (docs/cli.md): --tls-* flags into
// RedisTlsOptions, for demo, shell and admin with a rediss:// --redis URL.
#pragma once

#include <pathlock/engine.hpp>
#include <pathlock/redis.hpp>

#include "common/options.hpp"

#include <string>

namespace pathlock::cli {

inline constexpr const char* kTlsUsage =
    "TLS (with a rediss:// or rediss-sentinel:// --redis URL): --tls-ca-file FILE | --tls-ca-dir DIR\n"
    "  (default: the system trust store), --tls-cert FILE --tls-key FILE (mutual TLS), --tls-server-name NAME,\n"
    "  --tls-min-version 1.2|1.3, --tls-insecure-skip-verify yes (no certificate check: tests only)\n";

inline constexpr const char* kTlsFlags[] = {"tls-ca-file",     "tls-ca-dir",      "tls-cert",
                                            "tls-key",         "tls-server-name", "tls-min-version",
                                            "tls-insecure-skip-verify"};

// Adds the --tls-* options to a command's option table.
inline options::Options& with_tls(options::Options& table) {
  for (const char* f : kTlsFlags) table.value(f);
  return table;
}

// Throws InvalidRequest for a bad --tls-insecure-skip-verify value; the
// rest is checked when the engine is made.
inline RedisTlsOptions tls_from_flags(const options::Parsed& p) {
  RedisTlsOptions tls;
  tls.ca_file = p.get("tls-ca-file");
  tls.ca_dir = p.get("tls-ca-dir");
  tls.cert_file = p.get("tls-cert");
  tls.key_file = p.get("tls-key");
  tls.server_name = p.get("tls-server-name");
  tls.min_version = p.get("tls-min-version");
  if (p.has("tls-insecure-skip-verify")) {
    const std::string v = p.get("tls-insecure-skip-verify");
    if (v != "yes" && v != "no") throw InvalidRequest("--tls-insecure-skip-verify takes yes or no, not '" + v + "'");
    tls.insecure_skip_verify = v == "yes";
  }
  return tls;
}

}  // namespace pathlock::cli
