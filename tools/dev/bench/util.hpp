// pathlock-bench helpers, all in one place: latency statistics, a CSV
// writer, INFO readers and a description of the machine. The redis-server
// child and the raw connection come from tools/dev/redis_devtools.
//
// Nothing here measures anything by itself; the subjects, measure.cpp and
// sweeps.cpp do.
// Interruption: SIGINT/SIGTERM set interrupted(); long loops poll it and
// throw Interrupted so destructors (the redis-server child above all) run.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "redis_devtools/redis_server.hpp"
#include "redis_devtools/tls_certs.hpp"

namespace pathlock::bench {

using Clock = std::chrono::steady_clock;

// ---- interruption -----------------------------------------------------
struct Interrupted : std::runtime_error {
  Interrupted() : std::runtime_error("interrupted") {}
};
void install_signal_handlers();
bool interrupted();
void check_interrupted();  // throws Interrupted

// ---- statistics -------------------------------------------------------
// Latencies in nanoseconds; percentile() sorts lazily (nearest rank).
class Latencies {
 public:
  void add(std::int64_t ns) { v_.push_back(ns); }
  void merge(const Latencies& o) { v_.insert(v_.end(), o.v_.begin(), o.v_.end()); }
  void reserve(std::size_t n) { v_.reserve(n); }
  std::size_t size() const { return v_.size(); }
  double percentile_us(double p);  // 0 <= p <= 100; NaN when empty
 private:
  std::vector<std::int64_t> v_;
  bool sorted_ = false;
};

// ---- CSV ----------------------------------------------------------------
// Writes rows of already-formatted cells; quotes a cell only when needed.
class CsvWriter {
 public:
  explicit CsvWriter(const std::string& path);
  void row(const std::vector<std::string>& cells);

 private:
  std::string path_;
  std::string text_;
  void flush();
};

// ---- Redis --------------------------------------------------------------
// The redis-server child and the raw connection are tools/dev/redis_devtools,
// shared with the test suite.
using devtools::RedisConnection;
using devtools::RedisReply;
using devtools::RedisServer;
using devtools::TlsCertificates;

// Runs a command; throws std::runtime_error on an error reply.
RedisReply command_ok(RedisConnection& c, const std::vector<std::string>& argv);

// Field `name` of INFO `section` ("" when absent).
std::string info_field(RedisConnection& c, const std::string& section, const std::string& name);
long long used_memory(RedisConnection& c);
double used_cpu_seconds(RedisConnection& c);  // used_cpu_user + used_cpu_sys of the server process
// SCRIPT LOAD; returns the sha1.
std::string load_script(RedisConnection& c, const std::string& source);

// Sends make(0) .. make(count - 1) on one new connection in pipelined
// batches of 64 and checks every reply (an error reply throws).
template <class MakeCommand>
void pipelined(const std::string& url, std::size_t count, MakeCommand make) {
  RedisConnection c(url);
  constexpr std::size_t kBatch = 64;
  for (std::size_t i = 0; i < count;) {
    check_interrupted();
    const std::size_t n = std::min(kBatch, count - i);
    for (std::size_t j = 0; j < n; ++j) c.append(make(i + j));
    for (std::size_t j = 0; j < n; ++j) {
      const RedisReply r = c.get();
      if (r.is_error()) throw std::runtime_error("fill: " + r.str);
    }
    i += n;
  }
}

// ---- machine ------------------------------------------------------------
std::string cpu_model();                          // /proc/cpuinfo "model name"
unsigned cpu_count();                             // online processors (nproc)
std::string utc_now();                            // 2024-01-31 12:34 UTC
std::string load_average();                       // /proc/loadavg: the 1, 5 and 15 minute load averages
std::string shell_join(int argc, char** argv);    // the command line, quoted for a shell
std::string run_command(const std::string& cmd);  // sh -c cmd; its stdout without the last newline

}  // namespace pathlock::bench
