// TLS for the Redis client, on OpenSSL (hiredis 0.14 has no TLS).
//
// TlsContext holds the client's OpenSSL context, built from RedisTlsOptions
// (pathlock/redis.hpp): trusted CAs (a file, a directory, else the system
// store), the client certificate and key for mutual TLS, the minimum
// protocol version and the verification mode. It is shared by every
// connection of one client.
//
// Certificate rotation: the files are read when the TlsContext is made (so a
// missing or bad file fails at engine creation) and again by the next
// connection opened after any of them changed (size, modification time or
// inode, checked with stat() at each connect). A reload that fails (a
// certificate replaced before its key) keeps the previous context, warns
// once on stderr and is tried again by the next connection. Open
// connections keep the context they were made with.
//
// Stream is one TCP connection, optionally TLS, with deadlines: the
// transport of Connection (connection.hpp). Non-blocking socket + poll();
// the TLS handshake completes inside open(), before anything (AUTH) is
// written. Writes never raise SIGPIPE.
//
// Thread safety: TlsContext is internally locked; a Stream belongs to one
// thread at a time.
#pragma once

#include "core/process.hpp"

#include <pathlock/redis_url.hpp>

#include <pathlock/metrics.hpp>
#include <pathlock/redis.hpp>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

struct ssl_ctx_st;
struct ssl_st;

namespace pathlock::redis {

class TlsContext {
 public:
  // Checks and loads the options. Throws InvalidRequest for inconsistent
  // options (a certificate without its key, an unknown min_version) and
  // BackendError naming the file for a file that is missing or unusable.
  // Warnings (insecure_skip_verify, a failed reload) go to `log`
  // (nullptr: log_to_stderr).
  TlsContext(RedisTlsOptions options, LogSink log);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // A new SSL object on the current context (reloaded first if a file
  // changed). The caller frees it.
  ssl_st* new_ssl();
  const RedisTlsOptions& options() const { return options_; }
  // How many times the files were (re)loaded successfully, the first
  // load included.
  unsigned loads() const;

 private:
  std::vector<std::string> stamp() const;
  void warn(const std::string& message) const;

  const RedisTlsOptions options_;
  mutable std::mutex mutex_;
  ssl_ctx_st* ctx_ = nullptr;
  std::vector<std::string> stamp_;
  unsigned loads_ = 0;
  bool warned_ = false;
  const LogSink log_;
};

// Every OpenSSL call of the Redis client runs inside an OpenSslSection
// (core/process.hpp; docs/design.md#fork).
using core::OpenSslSection;

// The reasons of the queued OpenSSL errors, oldest first (the queue is
// emptied). Called inside an OpenSslSection. Defined in tls.cpp.
std::string ssl_error_text();

// Throws InvalidRequest when TLS options are given with a plain URL; returns
// the shared context for a TLS URL, null otherwise.
std::shared_ptr<TlsContext> make_tls_context(const RedisUrl& url, const RedisTlsOptions& options, LogSink log);

class Stream {
 public:
  using Clock = std::chrono::steady_clock;
  enum class Io : unsigned char { done, timeout, closed, failed };

  // Connects to `node` (and completes the TLS handshake when `tls` is set)
  // before `deadline`. Throws Unreachable "<name>: cannot connect: ..." or
  // "<name>: TLS handshake failed: <cause>".
  static std::unique_ptr<Stream> open(const Endpoint& node, TlsContext* tls, Clock::time_point deadline,
                                      const std::string& name);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // Writes all of `data` before `deadline`; `why` gets the cause otherwise.
  Io write_all(std::string_view data, Clock::time_point deadline, std::string& why);
  // Appends what can be read to `out`, waiting for something until `deadline`
  // (a deadline in the past: no wait).
  Io read_some(std::string& out, Clock::time_point deadline, std::string& why);
  // Decrypted bytes are buffered inside the TLS layer (poll() would not see them).
  bool pending() const;
  // Waits until read_some would not block, at most `timeout`, or until
  // `wake_fd` (>= 0) is readable. False on timeout.
  bool wait_readable(int timeout_ms, int wake_fd = -1) const;
  // True if the server has sent nothing (no data, no close) on an idle stream.
  bool looks_idle_and_open();
  int fd() const { return fd_; }
  bool tls() const { return ssl_ != nullptr; }

 private:
  Stream(int fd) : fd_(fd) {}
  static std::unique_ptr<Stream> connect_tcp(const Endpoint& node, Clock::time_point deadline, const std::string& name);
  void handshake(Clock::time_point deadline, const std::string& name);
  Io wait(short events, Clock::time_point deadline, int wake_fd = -1) const;
  // What SSL_read's or SSL_write's result n <= 0 means: done, with `events`
  // set to what to poll for, or closed / failed with `why` set.
  Io ssl_wait_for(int n, short& events, std::string& why) const;
  // wait(), with `why` set when it is not done: `on_timeout`, or errno's text.
  Io await(short events, Clock::time_point deadline, const char* on_timeout, std::string& why) const;

  int fd_;
  ssl_st* ssl_ = nullptr;
};

}  // namespace pathlock::redis
