// The TLS options of the pathlock command (docs/cli.md): --tls-* flags into
// RedisTlsOptions, for demo, shell and admin with a rediss:// --redis URL.
#pragma once

#include <pathlock/engine.hpp>
#include <pathlock/redis.hpp>

#include <initializer_list>
#include <map>
#include <string>

namespace pathlock::cli {

inline constexpr const char* kTlsUsage =
    "TLS (with a rediss:// or rediss-sentinel:// --redis URL): --tls-ca-file FILE | --tls-ca-dir DIR\n"
    "  (default: the system trust store), --tls-cert FILE --tls-key FILE (mutual TLS), --tls-server-name NAME,\n"
    "  --tls-min-version 1.2|1.3, --tls-insecure-skip-verify yes (no certificate check: tests only)\n";

inline constexpr std::initializer_list<const char*> kTlsFlags = {
    "tls-ca-file", "tls-ca-dir", "tls-cert", "tls-key", "tls-server-name", "tls-min-version",
    "tls-insecure-skip-verify"};

inline bool is_tls_flag(const std::string& name) {
  for (const char* f : kTlsFlags)
    if (name == f) return true;
  return false;
}

// Throws InvalidRequest for a bad --tls-insecure-skip-verify value; the
// rest is checked when the engine is made.
inline RedisTlsOptions tls_from_flags(const std::map<std::string, std::string>& options) {
  RedisTlsOptions tls;
  const auto get = [&](const char* name, std::string& into) {
    if (const auto it = options.find(name); it != options.end()) into = it->second;
  };
  get("tls-ca-file", tls.ca_file);
  get("tls-ca-dir", tls.ca_dir);
  get("tls-cert", tls.cert_file);
  get("tls-key", tls.key_file);
  get("tls-server-name", tls.server_name);
  get("tls-min-version", tls.min_version);
  if (const auto it = options.find("tls-insecure-skip-verify"); it != options.end()) {
    if (it->second != "yes" && it->second != "no")
      throw InvalidRequest("--tls-insecure-skip-verify takes yes or no, not '" + it->second + "'");
    tls.insecure_skip_verify = it->second == "yes";
  }
  return tls;
}

}  // namespace pathlock::cli
