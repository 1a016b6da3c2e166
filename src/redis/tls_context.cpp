// The OpenSSL context of a client, reloaded when its files change; see tls.hpp.
#include "redis/tls.hpp"

#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace pathlock::redis {
namespace {

[[noreturn]] void bad_file(std::string_view what, const std::string& path, const std::string& why) {
  throw BackendError(fmt::format("redis tls: cannot use the {} '{}': {}", what, path, why));
}


void check_readable(std::string_view what, const std::string& path, bool directory) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) bad_file(what, path, std::strerror(errno));
  if (directory != S_ISDIR(st.st_mode)) bad_file(what, path, directory ? "not a directory" : "not a file");
  if (::access(path.c_str(), R_OK) != 0) bad_file(what, path, std::strerror(errno));
}

// Builds a context from the files as they are now. Throws BackendError.
SSL_CTX* build_context(const RedisTlsOptions& o) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (!ctx) throw BackendError("redis tls: cannot create an OpenSSL context: " + ssl_error_text());
  try {
    SSL_CTX_set_min_proto_version(ctx, o.min_version == "1.3" ? TLS1_3_VERSION : TLS1_2_VERSION);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    // A peer that closes without close_notify is a closed connection, as on TCP.
    SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
    if (!o.ca_file.empty()) check_readable("CA file", o.ca_file, false);
    if (!o.ca_dir.empty()) check_readable("CA directory", o.ca_dir, true);
    if (!o.ca_file.empty() || !o.ca_dir.empty()) {
      ERR_clear_error();
      if (SSL_CTX_load_verify_locations(ctx, o.ca_file.empty() ? nullptr : o.ca_file.c_str(),
                                        o.ca_dir.empty() ? nullptr : o.ca_dir.c_str()) != 1)
        bad_file(o.ca_file.empty() ? "CA directory" : "CA file", o.ca_file.empty() ? o.ca_dir : o.ca_file,
                 ssl_error_text());
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
      throw BackendError("redis tls: cannot load the system trust store: " + ssl_error_text());
    }
    if (!o.cert_file.empty()) {
      check_readable("client certificate file", o.cert_file, false);
      check_readable("client key file", o.key_file, false);
      ERR_clear_error();
      if (SSL_CTX_use_certificate_chain_file(ctx, o.cert_file.c_str()) != 1)
        bad_file("client certificate file", o.cert_file, ssl_error_text());
      if (SSL_CTX_use_PrivateKey_file(ctx, o.key_file.c_str(), SSL_FILETYPE_PEM) != 1)
        bad_file("client key file", o.key_file, ssl_error_text());
      if (SSL_CTX_check_private_key(ctx) != 1)
        bad_file("client key file", o.key_file, "it does not match the certificate " + o.cert_file);
    }
    SSL_CTX_set_verify(ctx, o.insecure_skip_verify ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, nullptr);
  } catch (...) {
    SSL_CTX_free(ctx);
    throw;
  }
  return ctx;
}

}  // namespace

TlsContext::TlsContext(RedisTlsOptions options, LogSink log) : options_(std::move(options)), log_(std::move(log)) {
  const RedisTlsOptions& o = options_;
  if (o.min_version != "" && o.min_version != "1.2" && o.min_version != "1.3")
    throw InvalidRequest(fmt::format("tls min_version must be 1.2 or 1.3, not '{}'", o.min_version));
  if (o.cert_file.empty() != o.key_file.empty())
    throw InvalidRequest("tls cert_file and key_file go together (mutual TLS needs both)");
  stamp_ = stamp();
  {
    const OpenSslSection no_fork;  // OpenSSL's first-use initialisation and CA loading
    ctx_ = build_context(o);
  }
  loads_ = 1;
  if (o.insecure_skip_verify)
    warn("redis tls: insecure_skip_verify is set: the server's certificate is NOT checked, anyone on the network "
         "path can read and change the lock traffic");
}

void TlsContext::warn(const std::string& message) const {
  try {
    (log_ ? log_ : LogSink(log_to_stderr))(LogLevel::warning, message, {{"event", "tls"}});
  } catch (...) {  // a sink that throws loses its message, never the caller's call
  }
}

TlsContext::~TlsContext() {
  const OpenSslSection no_fork;
  SSL_CTX_free(ctx_);
}

std::vector<std::string> TlsContext::stamp() const {
  std::vector<std::string> out;
  for (const std::string* path : {&options_.ca_file, &options_.ca_dir, &options_.cert_file, &options_.key_file}) {
    struct stat st {};
    if (path->empty() || ::stat(path->c_str(), &st) != 0) {
      out.emplace_back();
      continue;
    }
    out.push_back(fmt::format("{}:{}:{}.{}", st.st_ino, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec));
  }
  return out;
}

unsigned TlsContext::loads() const {
  std::lock_guard guard(mutex_);
  return loads_;
}

SSL* TlsContext::new_ssl() {
  const OpenSslSection no_fork;  // before mutex_: the order every caller takes them in
  std::lock_guard guard(mutex_);
  if (std::vector<std::string> now = stamp(); now != stamp_) {
    try {
      SSL_CTX* fresh = build_context(options_);
      SSL_CTX_free(ctx_);
      ctx_ = fresh;
      stamp_ = std::move(now);
      ++loads_;
      warned_ = false;
    } catch (const BackendError& e) {
      if (!warned_)
        warn(fmt::format("{}; new connections keep the files loaded before", e.what()));
      warned_ = true;
    }
  }
  return SSL_new(ctx_);
}

std::shared_ptr<TlsContext> make_tls_context(const RedisUrl& url, const RedisTlsOptions& o, LogSink log) {
  if (url.tls) return std::make_shared<TlsContext>(o, std::move(log));
  if (!o.ca_file.empty() || !o.ca_dir.empty() || !o.cert_file.empty() || !o.key_file.empty() ||
      !o.server_name.empty() || !o.min_version.empty() || o.insecure_skip_verify)
    throw InvalidRequest("tls options are set but the redis url is not a TLS one (rediss:// or rediss-sentinel://)");
  return nullptr;
}

}  // namespace pathlock::redis
