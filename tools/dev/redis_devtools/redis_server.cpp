// A redis-server child process and a raw connection; see redis_server.hpp.
//
// Port choice: bind 127.0.0.1:0, read the port the kernel picked, close the
// socket and hand the port to redis-server. Another process could take it in
// between, so a server that exits during start-up is retried on a new port.
// A server started from the main thread also gets PR_SET_PDEATHSIG, so it
// dies with the test process even when that process crashes.
#include "redis_server.hpp"

#include "cmake/pathlock_child_process.hpp"
#include <pathlock/redis_url.hpp>

#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <thread>

namespace pathlock::devtools {
namespace {

RedisReply convert(const redisReply& r) {
  RedisReply out;
  switch (r.type) {
    case REDIS_REPLY_STRING: out.type = RedisReply::Type::string; break;
    case REDIS_REPLY_STATUS: out.type = RedisReply::Type::status; break;
    case REDIS_REPLY_ERROR: out.type = RedisReply::Type::error; break;
    case REDIS_REPLY_INTEGER: out.type = RedisReply::Type::integer; break;
    case REDIS_REPLY_ARRAY: out.type = RedisReply::Type::array; break;
    default: out.type = RedisReply::Type::nil; break;
  }
  if (r.str) out.str.assign(r.str, r.len);
  out.integer = r.integer;
  for (std::size_t i = 0; i < r.elements; ++i) out.elements.push_back(convert(*r.element[i]));
  return out;
}

// hiredis's view of a command (pointers into `argv`, which must outlive it).
struct HiredisArgv {
  explicit HiredisArgv(const std::vector<std::string>& argv) {
    for (const std::string& a : argv) {
      ptrs.push_back(a.data());
      lens.push_back(a.size());
    }
  }
  int count() const { return static_cast<int>(ptrs.size()); }
  std::vector<const char*> ptrs;
  std::vector<std::size_t> lens;
};

}  // namespace

int free_loopback_port() {
  const int port = child_process::free_loopback_port();
  if (port < 0) throw std::runtime_error("cannot find a free loopback port");
  return port;
}

int free_loopback_port_below(int limit) {
  for (int attempt = 0; attempt < 200; ++attempt) {
    const int port = free_loopback_port();
    if (port <= limit) return port;
  }
  throw std::runtime_error("cannot find a free loopback port at most " + std::to_string(limit));
}

int node_port_for(const std::vector<std::string>& args) {
  bool cluster = false, bus_given = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--cluster-enabled" && i + 1 < args.size() && args[i + 1] == "yes") cluster = true;
    if (args[i] == "--cluster-port") bus_given = true;
    if (args[i] == "--sentinel") cluster = true;  // (room kept as for a node: a Sentinel's port must be valid too)
  }
  return cluster && !bus_given ? free_loopback_port_below(kMaxNodePort) : free_loopback_port();
}

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// True once the server answers as process `pid`: "PONG", then INFO names
// that process (another test's server may hold the port this one failed to
// bind: it answered for this one before), or, where this server wants a
// password (`wants_password`), "NOAUTH ..." (its INFO cannot be read).
bool answers_as(const std::string& url, pid_t pid, bool wants_password) {
  try {
    RedisConnection c(url);
    const RedisReply r = c.command({"PING"});
    if (r.is_error()) return wants_password;
    if (r.str != "PONG") return false;
    const RedisReply info = c.command({"INFO", "server"});
    if (info.is_error()) return true;  // INFO renamed away by the test: PONG is all it can say
    return info.str.find("process_id:" + std::to_string(pid) + "\r") != std::string::npos;
  } catch (const std::exception&) {
    return false;
  }
}

bool wants_password(const std::vector<std::string>& args, bool config_file) {
  if (config_file) return true;  // (a sentinel's or a test's own configuration may set one)
  for (const std::string& a : args)
    if (a == "--requirepass" || a == "--aclfile" || a == "--user") return true;
  return false;
}

// execv()'s view of `args` (which must outlive it): pointers, then nullptr.
std::vector<char*> exec_argv(std::vector<std::string>& args) {
  std::vector<char*> out;
  for (std::string& a : args) out.push_back(a.data());
  out.push_back(nullptr);
  return out;
}

pid_t fork_or_throw() {
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  return pid;
}

// Forks and execs redis-server with `args` (args[0] is the binary) and this
// process's environment plus `environment`.
pid_t launch(std::vector<std::string> args, bool main_thread, const std::vector<std::string>& environment) {
  std::vector<char*> cargs = exec_argv(args);
  std::vector<std::string> env = environment_with(environment);
  std::vector<char*> cenv = exec_argv(env);  // made before the fork: the child only execs
  const pid_t pid = fork_or_throw();
  if (pid == 0) {
    if (main_thread) ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    ::setpgid(0, 0);  // a Ctrl-C to the parent does not reach the server
    const int null_fd = ::open("/dev/null", O_RDWR);
    if (null_fd >= 0) {
      ::dup2(null_fd, STDIN_FILENO);
      ::dup2(null_fd, STDOUT_FILENO);
      ::dup2(null_fd, STDERR_FILENO);
    }
    ::execvpe(cargs[0], cargs.data(), cenv.data());
    cargs[0] = const_cast<char*>("/usr/bin/redis-server");
    ::execve(cargs[0], cargs.data(), cenv.data());
    ::_exit(127);
  }
  return pid;
}

}  // namespace

RedisConnection::RedisConnection(const std::string& url) {
  const redis::RedisUrl u = redis::parse_redis_url(url);
  timeval tv{5, 0};
  ctx_ = redisConnectWithTimeout(u.host.c_str(), u.port, tv);
  if (!ctx_ || ctx_->err) {
    const std::string why = ctx_ ? ctx_->errstr : "out of memory";
    if (ctx_) redisFree(ctx_);
    ctx_ = nullptr;
    throw std::runtime_error("cannot connect to " + url + ": " + why);
  }
  redisSetTimeout(ctx_, tv);
  if (u.password) {
    const RedisReply r = u.user ? command({"AUTH", *u.user, *u.password}) : command({"AUTH", *u.password});
    if (r.is_error()) throw std::runtime_error("AUTH failed: " + r.str);
  }
  if (u.db) command({"SELECT", std::to_string(u.db)});
}

RedisConnection::~RedisConnection() {
  if (ctx_) redisFree(ctx_);
}

RedisReply RedisConnection::command(const std::vector<std::string>& argv) {
  HiredisArgv args(argv);
  auto* raw = static_cast<redisReply*>(redisCommandArgv(ctx_, args.count(), args.ptrs.data(), args.lens.data()));
  if (!raw) throw std::runtime_error(std::string("redis command failed: ") + ctx_->errstr);
  RedisReply out = convert(*raw);
  freeReplyObject(raw);
  return out;
}

void RedisConnection::append(const std::vector<std::string>& argv) {
  HiredisArgv args(argv);
  if (redisAppendCommandArgv(ctx_, args.count(), args.ptrs.data(), args.lens.data()) != REDIS_OK)
    throw std::runtime_error(std::string("redis pipeline failed: ") + ctx_->errstr);
}

RedisReply RedisConnection::get() {
  void* raw = nullptr;
  if (redisGetReply(ctx_, &raw) != REDIS_OK || !raw)
    throw std::runtime_error(std::string("redis pipeline failed: ") + ctx_->errstr);
  RedisReply out = convert(*static_cast<redisReply*>(raw));
  freeReplyObject(raw);
  return out;
}

RedisServer::RedisServer(const std::vector<std::string>& extra_args) { start(extra_args, {}); }

RedisServer::RedisServer(const std::vector<std::string>& extra_args, const std::string& config) {
  start(extra_args, config);
}

RedisServer::RedisServer(const std::vector<std::string>& extra_args, const std::string& config,
                         const std::vector<std::string>& environment)
    : environment_(environment) {
  start(extra_args, config);
}

void RedisServer::start(const std::vector<std::string>& extra_args, const std::string& config) {
  char tmpl[] = "/tmp/pathlock-redis-XXXXXX";
  if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  std::string config_file;
  if (!config.empty()) {
    config_file = dir_ + "/redis.conf";
    std::ofstream(config_file) << config;
  }
  const std::string log = dir_ + "/redis.log";
  const char* env_binary = std::getenv("PATHLOCK_REDIS_SERVER");
  const std::string binary = env_binary && *env_binary ? env_binary : "redis-server";
  const bool main_thread = ::getpid() == static_cast<pid_t>(::syscall(SYS_gettid));

  std::string last_log;
  const bool password = wants_password(extra_args, !config_file.empty());
  for (int attempt = 0; attempt < 3; ++attempt) {
    const int port = node_port_for(extra_args);
    std::vector<std::string> args{binary};
    if (!config_file.empty()) args.push_back(config_file);
    args.insert(args.end(), {                     "--port",       std::to_string(port),  "--bind",
                                  "127.0.0.1",    "--save",       "",                    "--appendonly",
                                  "no",           "--maxmemory-policy", "noeviction",   "--daemonize",
                                  "no",           "--dir",        dir_,                  "--logfile",
                                  log});
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    const pid_t pid = launch(args, main_thread, environment_);
    args_ = args;
    pid_ = pid;
    port_ = port;
    url_ = "redis://127.0.0.1:" + std::to_string(port);
    const auto startup =
        child_process::wait_until_ready(pid_, [&] { return answers_as(url_, pid, password); },
                                        std::chrono::milliseconds(20));
    if (startup == child_process::Startup::ready) return;
    const bool exited = startup == child_process::Startup::exited;
    if (exited) pid_ = -1;
    last_log = read_file(log);
    if (!exited) {
      stop();
      break;
    }
  }
  std::filesystem::remove_all(dir_);
  throw std::runtime_error("redis-server (" + binary + ") did not start; its log:\n" + last_log);
}

RedisServer::RedisServer(External, std::string url) : url_(std::move(url)) {}

std::unique_ptr<RedisServer> RedisServer::external(const std::string& url) {
  return std::unique_ptr<RedisServer>(new RedisServer(External{}, url));
}

RedisServer::~RedisServer() {
  stop();
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

void RedisServer::stop() {
  if (pid_ <= 0) return;
  child_process::stop(pid_);
  pid_ = -1;
}

std::vector<std::string> environment_with(const std::vector<std::string>& vars) {
  const auto name_of = [](std::string_view v) { return v.substr(0, v.find('=')); };
  std::vector<std::string> out;
  for (char** e = environ; *e; ++e) {
    const std::string_view name = name_of(*e);
    if (std::none_of(vars.begin(), vars.end(), [&](const std::string& v) { return name_of(v) == name; }))
      out.emplace_back(*e);
  }
  out.insert(out.end(), vars.begin(), vars.end());
  return out;
}

int run_program(const std::vector<std::string>& argv, std::string& output, int timeout_ms) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) throw std::runtime_error("pipe failed");
  std::vector<std::string> args = argv;
  std::vector<char*> cargs = exec_argv(args);
  const pid_t pid = fork_or_throw();
  if (pid == 0) {
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    ::dup2(pipe_fds[1], STDOUT_FILENO);
    ::dup2(pipe_fds[1], STDERR_FILENO);
    ::close(pipe_fds[0]);
    ::execvp(cargs[0], cargs.data());
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  ::fcntl(pipe_fds[0], F_SETFL, O_NONBLOCK);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  int status = 0;
  bool done = false;
  while (!done) {
    char buf[4096];
    for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof buf)) > 0;) output.append(buf, static_cast<std::size_t>(n));
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      done = true;
    } else if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      done = true;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  char buf[4096];
  for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof buf)) > 0;) output.append(buf, static_cast<std::size_t>(n));
  ::close(pipe_fds[0]);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int RedisServer::tls_port() const {
  for (std::size_t i = 0; i + 1 < args_.size(); ++i)
    if (args_[i] == "--tls-port") return std::stoi(args_[i + 1]);
  return 0;
}

RedisReply RedisServer::command(const std::vector<std::string>& argv) const {
  RedisConnection c(url_);
  return c.command(argv);
}

std::vector<std::string> RedisServer::keys(const std::string& pattern) const {
  RedisConnection c(url_);
  std::vector<std::string> out;
  std::string cursor = "0";
  do {
    const RedisReply r = c.command({"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"});
    if (r.type != RedisReply::Type::array || r.elements.size() != 2) throw std::runtime_error("bad SCAN reply");
    cursor = r.elements[0].str;
    for (const RedisReply& k : r.elements[1].elements) out.push_back(k.str);
  } while (cursor != "0");
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void RedisServer::kill_hard() {
  if (pid_ <= 0) throw std::runtime_error("kill_hard: this object did not start the server, or it is down");
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

void RedisServer::restart() {
  if (pid_ > 0 || args_.empty()) throw std::runtime_error("restart: the server is running, or was not started here");
  const bool main_thread = ::getpid() == static_cast<pid_t>(::syscall(SYS_gettid));
  pid_ = launch(args_, main_thread, environment_);
  // Ready once PING answers PONG (or an error other than LOADING, e.g. NOAUTH).
  const auto loaded = [&] {
    try {
      RedisConnection c(url_);
      const RedisReply r = c.command({"PING"});
      return r.str == "PONG" || (r.is_error() && r.str.rfind("LOADING", 0) != 0);
    } catch (const std::exception&) {
      return false;
    }
  };
  const auto startup = child_process::wait_until_ready(pid_, loaded, std::chrono::milliseconds(10));
  if (startup == child_process::Startup::ready) return;
  if (startup == child_process::Startup::exited) pid_ = -1;
  const std::string log = read_file(dir_ + "/redis.log");
  if (pid_ > 0) stop();
  throw std::runtime_error("redis-server did not come back on " + url_ + "; its log:\n" + log);
}

}  // namespace pathlock::devtools
