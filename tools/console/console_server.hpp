// pathlock console (docs/console.md): a web page over a LockEngine for
// operators: namespaces, the lock tree with its waiters, "why is this
// blocked", force-release (admin only), the console's own metrics and the
// refusal counts of the engines it scrapes.
//
// Design: one cpp-httplib server (the library of MetricsServer) serving
// pages embedded at build time (tools/console/assets, no network at run
// time) and a small JSON API they call, on the GuardedServer of
// MetricsServer (src/metrics/http/http_guard.hpp: only its own Host names, same
// origin for a state change, a deadline per request, bounded connections).
// Read-only unless `admin`: every
// request other than GET/HEAD is refused with 403 then, and a
// state-changing request must carry the header X-Pathlock-Console (a form
// or an image on another site cannot send it). Bad input (unknown
// namespace or operation, malformed path, bad number) is 400 with
// {"error": MESSAGE}. Every answer carries a Content-Security-Policy that
// allows only the console's own scripts, so text that slipped through as
// HTML still could not run.
#pragma once

#include "matrix_editor.hpp"

#include <pathlock/engine.hpp>
#include <pathlock/metrics.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace pathlock::console {

struct ConsoleOptions {
  std::string listen = "127.0.0.1:0";  // HOST:PORT or [V6]:PORT; port 0: any free port
  // Host header names answered besides the listen address, IP address
  // literals and localhost (`--allow-host`, e.g. the name of a proxy in
  // front): NAME (any port) or NAME:PORT. Any other Host: 421.
  std::vector<std::string> allowed_hosts;
  // Connections served at once (one more: 503, closed) and the deadline of
  // a whole request (src/metrics/http/http_guard.hpp).
  std::size_t max_connections = 64;
  std::chrono::milliseconds request_deadline{10000};
  bool admin = false;                   // allow force-release
  std::string backend = "memory";       // shown on the page
  // The namespaces to list, sorted, each once (the console pages them).
  std::function<std::vector<std::string>()> namespaces;
  // The console's own counters (its engine counts into them; its dry runs
  // count their first blocker as a refusal). Must fit the engine's matrix.
  std::shared_ptr<Metrics> metrics;
  // Where force-releases are logged (besides nothing else): the engine's
  // log sink. nullptr: log_to_stderr.
  LogSink log;
  // The matrix file the Matrix page opens (matrix_editor.hpp): the
  // --matrix file the engine enforces, or the shipped matrix's JSON (the
  // engine then enforces the table compiled from it at build time).
  EditorOptions matrix_file;
  // Exporters of other engines to pull (`--scrape`, scrape.hpp), each
  // http://HOST[:PORT][/PATH] (path default /metrics); the constructor
  // throws InvalidRequest for a bad one, or one given twice. With any,
  // /api/grid draws their refusal counts, summed by operation name,
  // instead of the console's own.
  std::vector<std::string> scrape;
  std::chrono::milliseconds scrape_every{5000};  // each source is pulled this often
  // /api/grid first pulls anew a source whose last pull is older than this
  // (waiting for it at most 1.5 s).
  std::chrono::milliseconds scrape_fresh{2000};
};

class ConsoleServer {
 public:
  // Listens at once (throws InvalidRequest for a malformed address,
  // BackendError when it cannot listen) and serves on a background thread.
  ConsoleServer(LockEngine& engine, ConsoleOptions options);
  ~ConsoleServer();
  ConsoleServer(const ConsoleServer&) = delete;
  ConsoleServer& operator=(const ConsoleServer&) = delete;

  int port() const;
  std::string url() const;  // "http://HOST:PORT/"
  // Blocks until stop() (from another thread or a signal handler's thread).
  void wait();
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pathlock::console
