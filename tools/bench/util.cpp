// pathlock-bench helpers; see util.hpp. The redis-server launcher picks its
// port by binding 127.0.0.1:0 and reading the port back; another process
// could take it before redis-server binds it, so a server that exits during
// start-up is retried (three times) on a new port.
#include "util.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace pathlock::bench {

// ---- interruption -----------------------------------------------------
namespace {
std::atomic<bool> g_interrupted{false};
extern "C" void on_signal(int) {
  g_interrupted.store(true);
}
}  // namespace

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
}
bool interrupted() {
  return g_interrupted.load(std::memory_order_relaxed);
}
void check_interrupted() {
  if (interrupted()) throw Interrupted();
}

// ---- statistics -------------------------------------------------------
double Latencies::percentile_us(double p) {
  if (v_.empty()) return std::nan("");
  if (!sorted_) {
    std::sort(v_.begin(), v_.end());
    sorted_ = true;
  }
  const double rank = std::ceil(p / 100.0 * static_cast<double>(v_.size()));
  const std::size_t i = std::min(v_.size() - 1, static_cast<std::size_t>(std::max(1.0, rank)) - 1);
  return static_cast<double>(v_[i]) / 1000.0;
}

// ---- CSV ----------------------------------------------------------------
CsvWriter::CsvWriter(const std::string& path) : path_(path) {
  flush();
}

void CsvWriter::row(const std::vector<std::string>& cells) {
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (i) text_ += ',';
    const std::string& c = cells[i];
    if (c.find_first_of(",\"\n") == std::string::npos) {
      text_ += c;
    } else {
      text_ += '"';
      for (char ch : c) text_ += ch == '"' ? std::string("\"\"") : std::string(1, ch);
      text_ += '"';
    }
  }
  text_ += '\n';
  flush();  // rewritten on every row, so an interrupted run keeps what it measured
}

void CsvWriter::flush() {
  std::ofstream out(path_, std::ios::trunc);
  out << text_;
  if (!out) throw std::runtime_error("cannot write " + path_);
}

// ---- Redis --------------------------------------------------------------
RedisAddr parse_url(std::string_view url) {
  RedisAddr a;
  constexpr std::string_view scheme = "redis://";
  if (url.substr(0, scheme.size()) != scheme) throw std::runtime_error("--redis wants redis://host:port[/db]");
  std::string_view rest = url.substr(scheme.size());
  if (const auto at = rest.rfind('@'); at != std::string_view::npos) {
    const std::string_view cred = rest.substr(0, at);
    const auto colon = cred.find(':');
    a.password = std::string(colon == std::string_view::npos ? cred : cred.substr(colon + 1));
    rest = rest.substr(at + 1);
  }
  if (const auto slash = rest.find('/'); slash != std::string_view::npos) {
    if (slash + 1 < rest.size()) a.db = std::stoi(std::string(rest.substr(slash + 1)));
    rest = rest.substr(0, slash);
  }
  if (const auto colon = rest.rfind(':'); colon != std::string_view::npos) {
    a.port = std::stoi(std::string(rest.substr(colon + 1)));
    rest = rest.substr(0, colon);
  }
  if (!rest.empty()) a.host = std::string(rest);
  return a;
}

namespace {
RReply convert(const redisReply& r) {
  RReply out;
  switch (r.type) {
    case REDIS_REPLY_STRING:
      out.type = RReply::Type::string;
      break;
    case REDIS_REPLY_STATUS:
      out.type = RReply::Type::status;
      break;
    case REDIS_REPLY_ERROR:
      out.type = RReply::Type::error;
      break;
    case REDIS_REPLY_INTEGER:
      out.type = RReply::Type::integer;
      break;
    case REDIS_REPLY_ARRAY:
      out.type = RReply::Type::array;
      break;
    default:
      out.type = RReply::Type::nil;
      break;
  }
  if (r.str) out.str.assign(r.str, r.len);
  out.integer = r.integer;
  for (std::size_t i = 0; i < r.elements; ++i) out.elements.push_back(convert(*r.element[i]));
  return out;
}
}  // namespace

RedisConn::RedisConn(const RedisAddr& addr) {
  timeval tv{10, 0};
  ctx_ = redisConnectWithTimeout(addr.host.c_str(), addr.port, tv);
  if (!ctx_ || ctx_->err) {
    const std::string why = ctx_ ? ctx_->errstr : "out of memory";
    if (ctx_) redisFree(ctx_);
    ctx_ = nullptr;
    throw std::runtime_error("cannot connect to redis at " + addr.host + ":" + std::to_string(addr.port) + ": " + why);
  }
  redisSetTimeout(ctx_, timeval{60, 0});  // a scan-baseline request can take seconds
  if (!addr.password.empty()) ok({"AUTH", addr.password});
  if (addr.db) ok({"SELECT", std::to_string(addr.db)});
}

RedisConn::~RedisConn() {
  if (ctx_) redisFree(ctx_);
}

void RedisConn::append(const std::vector<std::string>& argv) {
  std::vector<const char*> ptrs;
  std::vector<std::size_t> lens;
  ptrs.reserve(argv.size());
  lens.reserve(argv.size());
  for (const std::string& a : argv) {
    ptrs.push_back(a.data());
    lens.push_back(a.size());
  }
  if (redisAppendCommandArgv(ctx_, static_cast<int>(argv.size()), ptrs.data(), lens.data()) != REDIS_OK)
    throw std::runtime_error(std::string("redis: ") + ctx_->errstr);
}

RReply RedisConn::get() {
  void* raw = nullptr;
  if (redisGetReply(ctx_, &raw) != REDIS_OK || !raw) throw std::runtime_error(std::string("redis: ") + ctx_->errstr);
  RReply out = convert(*static_cast<redisReply*>(raw));
  freeReplyObject(raw);
  return out;
}

RReply RedisConn::cmd(const std::vector<std::string>& argv) {
  append(argv);
  return get();
}

RReply RedisConn::ok(const std::vector<std::string>& argv) {
  RReply r = cmd(argv);
  if (r.type == RReply::Type::error) throw std::runtime_error("redis " + argv.at(0) + ": " + r.str);
  return r;
}

std::string info_field(RedisConn& c, const std::string& section, const std::string& name) {
  const std::string text = c.ok({"INFO", section}).str;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.size() > name.size() && line.compare(0, name.size(), name) == 0 && line[name.size()] == ':')
      return line.substr(name.size() + 1);
  }
  return {};
}

long long used_memory(RedisConn& c) {
  const std::string v = info_field(c, "memory", "used_memory");
  return v.empty() ? 0 : std::stoll(v);
}

double used_cpu_seconds(RedisConn& c) {
  const std::string text = c.ok({"INFO", "cpu"}).str;
  auto field = [&](const std::string& name) {
    const auto at = text.find("\n" + name + ":");
    return at == std::string::npos ? 0.0 : std::stod(text.substr(at + name.size() + 2));
  };
  return field("used_cpu_user") + field("used_cpu_sys");
}

// ---- redis-server ---------------------------------------------------------
namespace {
int free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  const bool good = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  ::close(fd);
  if (!good) throw std::runtime_error("cannot find a free loopback port");
  return ntohs(addr.sin_port);
}

bool answers_ping(const std::string& url) {
  try {
    RedisConn c(parse_url(url));
    return c.cmd({"PING"}).str == "PONG";
  } catch (const std::exception&) {
    return false;
  }
}
}  // namespace

RedisServer::RedisServer() {
  char tmpl[] = "/tmp/pathlock-bench-redis-XXXXXX";
  if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  const std::string log = dir_ + "/redis.log";
  const char* env = std::getenv("PATHLOCK_REDIS_SERVER");
  const std::string binary = env && *env ? env : "redis-server";
  for (int attempt = 0; attempt < 3; ++attempt) {
    const int port = free_loopback_port();
    std::vector<std::string> args{binary,
                                  "--port",
                                  std::to_string(port),
                                  "--bind",
                                  "127.0.0.1",
                                  "--save",
                                  "",
                                  "--appendonly",
                                  "no",
                                  "--maxmemory-policy",
                                  "noeviction",
                                  "--daemonize",
                                  "no",
                                  "--dir",
                                  dir_,
                                  "--logfile",
                                  log};
    std::vector<char*> cargs;
    for (std::string& a : args) cargs.push_back(a.data());
    cargs.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      ::setpgid(0, 0);  // Ctrl-C reaches us only; we stop the server ourselves
      const int null_fd = ::open("/dev/null", O_RDWR);
      if (null_fd >= 0) {
        ::dup2(null_fd, STDIN_FILENO);
        ::dup2(null_fd, STDOUT_FILENO);
        ::dup2(null_fd, STDERR_FILENO);
      }
      ::execvp(cargs[0], cargs.data());
      cargs[0] = const_cast<char*>("/usr/bin/redis-server");
      ::execv(cargs[0], cargs.data());
      ::_exit(127);
    }
    pid_ = pid;
    url_ = "redis://127.0.0.1:" + std::to_string(port);
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (Clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      if (answers_ping(url_)) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    stop();
  }
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
  throw std::runtime_error("redis-server (" + binary + ") did not start; its log:\n" + text.str());
}

RedisServer::~RedisServer() {
  stop();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void RedisServer::stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  int status = 0;
  while (::waitpid(pid_, &status, WNOHANG) == 0) {
    if (Clock::now() > deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  pid_ = -1;
}

// ---- machine ------------------------------------------------------------
std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown";
}

unsigned cpu_count() {
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<unsigned>(n) : 1U;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return in ? a + " " + b + " " + c : "unknown";
}

std::string shell_join(int argc, char** argv) {
  std::string out;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (i) out += ' ';
    if (!a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@%+,") ==
                          std::string::npos) {
      out += a;
    } else {
      out += '\'';
      for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
      out += '\'';
    }
  }
  return out;
}

}  // namespace pathlock::bench
