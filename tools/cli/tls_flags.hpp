// The connection options of the pathlock command (docs/cli.md): --tls-*
// flags into RedisTlsOptions, for demo, shell and admin with a rediss://
// --redis URL, the Redis password kept out of the URL
// (--redis-password-file FILE, or the environment's PATHLOCK_REDIS_PASSWORD),
// and --postgres URL with --postgres-listen URL (the listener's own route).
#pragma once

#include <pathlock/engine.hpp>
#include <pathlock/factory.hpp>
#include <pathlock/redis.hpp>

#include "common/options.hpp"
#include <pathlock/redis_secret.hpp>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

namespace pathlock::cli {

inline constexpr const char* kTlsUsage =
    "TLS (with a rediss:// or rediss-sentinel:// --redis URL): --tls-ca-file FILE | --tls-ca-dir DIR\n"
    "  (default: the system trust store), --tls-cert FILE --tls-key FILE (mutual TLS), --tls-server-name NAME,\n"
    "  --tls-min-version 1.2|1.3, --tls-insecure-skip-verify yes (no certificate check: tests only)\n";

inline constexpr const char* kTlsFlags[] = {"tls-ca-file",     "tls-ca-dir",      "tls-cert",
                                            "tls-key",         "tls-server-name", "tls-min-version",
                                            "tls-insecure-skip-verify"};

inline constexpr const char* kPasswordUsage =
    "Redis password apart from the URL (redis://user@host or redis://host): --redis-password-file FILE,\n"
    "  else the environment's PATHLOCK_REDIS_PASSWORD when the URL has none\n";

inline constexpr const char* kPostgresUsage =
    "PostgreSQL (with --backend postgres): --postgres URL, --postgres-listen URL (the LISTEN connection's own\n"
    "  route, e.g. PostgreSQL itself when --postgres is a PgBouncer in transaction mode; default: --postgres)\n";

// --postgres-listen takes a libpq connection string, as --postgres does: a
// postgresql:// (or postgres://) URL or key=value pairs; anything else is a
// bad command line (2) instead of a listener that never connects.
inline void check_postgres_listen(const std::string& v) {
  const bool uri = v.rfind("postgresql://", 0) == 0 || v.rfind("postgres://", 0) == 0;
  if (!uri && v.find('=') == std::string::npos)
    throw std::invalid_argument("takes a postgresql:// URL or key=value pairs (a libpq connection string), not '" +
                                v + "'");
}

// Adds --postgres and --postgres-listen to a command's option table.
inline options::Options& with_postgres(options::Options& table) {
  return table.value("postgres").value("postgres-listen", check_postgres_listen);
}

// Adds the --tls-* options and --redis-password-file to a command's option
// table; a word not among a TLS option's words is a bad command line (2).
inline options::Options& with_tls(options::Options& table) {
  const auto words = [](std::initializer_list<const char*> ok, const char* what) {
    std::vector<std::string> allowed(ok.begin(), ok.end());
    return options::Check([allowed, what](const std::string& v) {
      for (const std::string& a : allowed)
        if (v == a) return;
      throw std::invalid_argument(std::string(what) + " '" + v + "'");
    });
  };
  for (const char* f : kTlsFlags) {
    const std::string flag = f;
    if (flag == "tls-min-version")
      table.value(f, words({"1.2", "1.3"}, "takes 1.2 or 1.3, not"));
    else if (flag == "tls-insecure-skip-verify")
      table.value(f, words({"yes", "no"}, "takes yes or no, not"));
    else
      table.value(f);
  }
  table.value("redis-password-file");
  return table;
}

// The password of --redis-password-file (its first line), else of the
// environment's PATHLOCK_REDIS_PASSWORD when the --redis URL has none;
// nullopt: none. Throws InvalidRequest for a file that cannot be read or
// is empty.
inline std::optional<std::string> redis_password(const options::Parsed& p) {
  if (p.has("redis-password-file")) {
    const std::string file = p.get("redis-password-file");
    std::ifstream in(file, std::ios::binary);
    std::string line;
    if (!in || !std::getline(in, line))
      throw InvalidRequest("--redis-password-file " + file + ": cannot be read, or is empty");
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) throw InvalidRequest("--redis-password-file " + file + ": the first line is empty");
    return line;
  }
  const char* env = std::getenv("PATHLOCK_REDIS_PASSWORD");
  const bool url_has_password = redis::url_password_span(p.get("redis")).first != std::string::npos;
  if (env && *env && !url_has_password) return std::string(env);
  return std::nullopt;
}

// The words were checked by the option table; files are checked when the
// engine is made.
inline RedisTlsOptions tls_from_flags(const options::Parsed& p) {
  RedisTlsOptions tls;
  tls.ca_file = p.get("tls-ca-file");
  tls.ca_dir = p.get("tls-ca-dir");
  tls.cert_file = p.get("tls-cert");
  tls.key_file = p.get("tls-key");
  tls.server_name = p.get("tls-server-name");
  tls.min_version = p.get("tls-min-version");
  if (p.has("tls-insecure-skip-verify")) {
    tls.insecure_skip_verify = p.get("tls-insecure-skip-verify") == "yes";
  }
  return tls;
}

// The RedisOptions of --redis, the password options and --tls-*, for a
// program that needs one connection (admin, redis load|libraries).
inline RedisOptions redis_options_from(const options::Parsed& p) {
  RedisOptions ro;
  ro.url = p.get("redis");
  ro.password = redis_password(p);
  ro.tls = tls_from_flags(p);
  ro.pool_size = 1;
  return ro;
}

// The engine options of a command line: --backend (default `fallback`),
// --redis with its password and TLS flags, --postgres and --postgres-listen
// (a UsageError unless the backend is postgres). Callers add what is theirs
// (a matrix, metrics, pool sizes).
inline EngineOptions engine_options_from(const options::Parsed& p, Backend fallback) {
  EngineOptions o;
  o.backend = p.has("backend") ? parse_backend(p.get("backend")) : fallback;
  if (p.has("redis")) {
    o.redis.url = p.get("redis");
    o.redis.password = redis_password(p);
  }
  o.redis.tls = tls_from_flags(p);
  if (p.has("postgres")) o.postgres.url = p.get("postgres");
  if (p.has("postgres-listen")) {
    if (o.backend != Backend::postgres) throw options::UsageError("--postgres-listen needs --backend postgres");
    o.postgres.listen_url = p.get("postgres-listen");
  }
  return o;
}

}  // namespace pathlock::cli
