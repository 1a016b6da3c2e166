// pathlock-bench helpers, all in one place: latency statistics, a CSV
// writer, a minimal hiredis connection (commands and pipelines), a
// redis-server child process (RAII) and a description of the machine.
//
// Nothing here measures anything by itself; series.cpp and main.cpp do.
// Interruption: SIGINT/SIGTERM set interrupted(); long loops poll it and
// throw Interrupted so destructors (the redis-server child above all) run.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

struct redisContext;

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
struct RedisAddr {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string password;  // empty: no AUTH
  int db = 0;
};
// Accepts redis://[[user]:password@]host[:port][/db] (user is ignored).
RedisAddr parse_url(std::string_view url);

struct RReply {
  enum class Type : std::uint8_t { nil, string, integer, array, status, error };
  Type type = Type::nil;
  std::string str;
  long long integer = 0;
  std::vector<RReply> elements;
};

// One blocking connection. Error replies are returned, transport failures
// throw std::runtime_error.
class RedisConn {
 public:
  explicit RedisConn(const RedisAddr& addr);
  ~RedisConn();
  RedisConn(const RedisConn&) = delete;
  RedisConn& operator=(const RedisConn&) = delete;

  RReply cmd(const std::vector<std::string>& argv);   // one round trip
  void append(const std::vector<std::string>& argv);  // pipeline: queue
  RReply get();                                       // pipeline: next reply
  RReply ok(const std::vector<std::string>& argv);    // cmd; throws on error reply

 private:
  redisContext* ctx_ = nullptr;
};

// Field `name` of INFO `section` ("" when absent).
std::string info_field(RedisConn& c, const std::string& section, const std::string& name);
long long used_memory(RedisConn& c);
double used_cpu_seconds(RedisConn& c);  // used_cpu_user + used_cpu_sys

// A private redis-server on a free loopback port: bind 127.0.0.1:0 to learn
// one, start `redis-server --port P --save "" --appendonly no
// --maxmemory-policy noeviction`, wait for PING. The destructor stops it
// (SIGTERM, then SIGKILL after 5 s) and removes its directory; the child
// also gets PR_SET_PDEATHSIG so it dies with us if we are killed.
class RedisServer {
 public:
  RedisServer();
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;
  const std::string& url() const { return url_; }

 private:
  void stop();
  pid_t pid_ = -1;
  std::string url_;
  std::string dir_;
};

// ---- machine ------------------------------------------------------------
std::string cpu_model();                        // /proc/cpuinfo "model name"
unsigned cpu_count();                           // online processors (nproc)
std::string utc_now();                          // 2024-01-31 12:34 UTC
std::string load_average();                     // /proc/loadavg: the 1, 5 and 15 minute load averages
std::string shell_join(int argc, char** argv);  // the command line, quoted for a shell

}  // namespace pathlock::bench
