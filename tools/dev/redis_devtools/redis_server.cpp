// A redis-server child process and a raw connection; see redis_server.hpp.
//
// The server itself is started, restarted and stopped by the one test
// launcher (testenv.hpp), as every language's tests do.
#include "redis_server.hpp"

#include "testenv.hpp"

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

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

pid_t fork_or_throw() {
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
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

// Through the one test launcher (testenv.hpp): its port choice (room for a
// Cluster bus where the arguments enable a Cluster), its retries on a port
// taken meanwhile, its readiness check (PING, not LOADING, from this very
// process; NOAUTH where a password is set).
void RedisServer::start(const std::vector<std::string>& extra_args, const std::string& config) {
  std::vector<std::string> options;
  if (!config.empty()) options = {"--conf", config};
  launcher_ = Testenv::one_server("redis", options, extra_args, environment_, 30);
  url_ = launcher_->started().at("url").get<std::string>();
  port_ = launcher_->server().at("port").get<int>();
  pid_ = launcher_->server().at("pid").get<pid_t>();
  dir_ = launcher_->server().at("dir").get<std::string>();
  args_ = extra_args;
}

RedisServer::RedisServer(External, std::string url) : url_(std::move(url)) {}

std::unique_ptr<RedisServer> RedisServer::external(const std::string& url) {
  return std::unique_ptr<RedisServer>(new RedisServer(External{}, url));
}

RedisServer::~RedisServer() {
  try {
    stop();
  } catch (const std::exception&) {  // the launcher has ended: closing it below stops what is left
  }
  launcher_.reset();  // it stops what runs and removes the server's directory
}

void RedisServer::stop() {
  if (!launcher_ || pid_ <= 0) return;
  launcher_->stop("redis");  // SIGTERM, waited for
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
  std::vector<int> ports{port_};
  if (tls_port() != 0) ports.push_back(tls_port());
  kill_and_wait_closed(pid_, ports);
  pid_ = -1;
}

void RedisServer::restart() {
  if (pid_ > 0 || !launcher_) throw std::runtime_error("restart: the server is running, or was not started here");
  try {
    pid_ = launcher_->restart("redis", args_);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("redis-server did not come back on ") + url_ + ": " + e.what() +
                             "; its log:\n" + read_file(launcher_->server().at("log").get<std::string>()));
  }
}

}  // namespace pathlock::devtools
