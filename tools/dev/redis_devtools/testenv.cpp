// The test launcher as a child process; see testenv.hpp.
#include "testenv.hpp"

#include "until.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace pathlock::devtools {
namespace {

std::string launcher_path() {
  const char* env = std::getenv("PATHLOCK_TESTENV");
  return env && *env ? env : PATHLOCK_TESTENV_PATH;
}

// `word` quoted for the launcher's command lines (POSIX shell rules, as shlex reads them).
std::string quoted(const std::string& word) {
  std::string out = "'";
  for (const char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

bool process_exited(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  const std::size_t close = line.rfind(')');  // the state follows the command's name, which may hold anything
  return close == std::string::npos || line.compare(close + 1, 3, " Z ") == 0 || line.compare(close + 1, 3, " X ") == 0;
}

bool listens_or_connected(int port) {
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      // "  sl  local_address rem_address   st ...": local_address is ADDR:PORT in hex
      std::istringstream fields(line);
      std::string sl, local, remote, state;
      if (!(fields >> sl >> local >> remote >> state)) continue;
      const std::size_t colon = local.rfind(':');
      if (colon == std::string::npos || std::stoi(local.substr(colon + 1), nullptr, 16) != port) continue;
      if (state == "01" || state == "0A") return true;  // ESTABLISHED, LISTEN
    }
  }
  return false;
}

}  // namespace

std::vector<char*> exec_argv(std::vector<std::string>& args) {
  std::vector<char*> out;
  for (std::string& a : args) out.push_back(a.data());
  out.push_back(nullptr);
  return out;
}

void kill_and_wait_closed(pid_t pid, const std::vector<int>& ports) {
  ::kill(pid, SIGKILL);
  const bool closed = until([&] {
    if (!process_exited(pid)) return false;
    for (const int port : ports)
      if (listens_or_connected(port)) return false;
    return true;
  });
  if (!closed) throw std::runtime_error("a killed server (pid " + std::to_string(pid) + ") kept its sockets open");
}

std::unique_ptr<Testenv> Testenv::one_server(const std::string& kind, const std::vector<std::string>& options,
                                             const std::vector<std::string>& args,
                                             const std::vector<std::string>& environment, int limit_s) {
  std::vector<std::string> line{"--limit", std::to_string(limit_s)};
  for (const std::string& e : environment) line.insert(line.end(), {"--env", e});
  line.push_back(kind);
  line.insert(line.end(), options.begin(), options.end());
  line.push_back("--");
  line.insert(line.end(), args.begin(), args.end());
  return std::make_unique<Testenv>(line);
}

pid_t Testenv::restart(const std::string& name, const std::vector<std::string>& args) {
  std::string command = "restart " + name;
  for (const std::string& a : args) command += " " + quoted(a);
  return ask(command).at("pid").get<pid_t>();
}

void Testenv::stop(const std::string& name) { ask("stop " + name); }

Testenv::Testenv(const std::vector<std::string>& args, int limit_s) {
  std::vector<std::string> argv{launcher_path()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargs = exec_argv(argv);  // made before the fork: the child only execs
  int in[2], out[2];
  // O_CLOEXEC: a child another thread starts meanwhile must not keep its stdin open.
  if (::pipe2(in, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]);
    ::close(in[1]);
    throw std::runtime_error("pipe failed");
  }
  const bool main_thread = ::getpid() == static_cast<pid_t>(::syscall(SYS_gettid));
  pid_ = ::fork();
  if (pid_ == 0) {
    if (main_thread) ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    ::setpgid(0, 0);  // a Ctrl-C to the test does not reach the servers before the test stops them
    ::dup2(in[0], STDIN_FILENO);
    ::dup2(out[1], STDOUT_FILENO);
    ::execv(cargs[0], cargs.data());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  to_ = in[1];
  from_ = out[0];
  if (pid_ < 0) {
    close();
    throw std::runtime_error("fork failed");
  }
  const std::string line = read_line(limit_s);
  if (line.empty()) {
    close();
    std::string command;
    for (const std::string& a : args) command += " " + a;
    throw std::runtime_error("pathlock-testenv" + command + ": started nothing (its message is above; program " +
                             argv[0] + ")");
  }
  started_ = nlohmann::json::parse(line);
}

Testenv::~Testenv() { close(); }

// One line from its stdout without the newline; empty at its end or after `limit_s`.
std::string Testenv::read_line(int limit_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(limit_s);
  while (true) {
    if (const std::size_t nl = buffer_.find('\n'); nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return {};
    pollfd p{from_, POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return {};
    char chunk[4096];
    const ssize_t got = ::read(from_, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return {};
    buffer_.append(chunk, static_cast<std::size_t>(got));
  }
}

nlohmann::json Testenv::ask(const std::string& command, int limit_s) {
  if (::getpid() != owner_)  // a forked copy of the test: the servers are its parent's
    throw std::runtime_error("pathlock-testenv: '" + command + "' from a forked child of the test that started it");
  const std::string line = command + "\n";
  if (to_ < 0 || ::write(to_, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
    throw std::runtime_error("pathlock-testenv: cannot send '" + command + "': it has ended");
  const std::string answer = read_line(limit_s);
  if (answer.empty()) throw std::runtime_error("pathlock-testenv: no answer to '" + command + "'");
  nlohmann::json j = nlohmann::json::parse(answer);
  if (j.contains("error")) throw std::runtime_error("pathlock-testenv: " + command + ": " + j["error"].get<std::string>());
  return j;
}

void Testenv::close() {
  if (to_ >= 0) ::close(to_);
  to_ = -1;
  if (pid_ > 0 && ::getpid() == owner_) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    int status = 0;
    pid_t r = 0;
    while ((r = ::waitpid(pid_, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling a child's exit, not a sync point
    if (r == 0) {  // it did not stop its servers in a minute: it and they are killed
      ::kill(-pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
    }
  }
  pid_ = -1;
  if (from_ >= 0) ::close(from_);
  from_ = -1;
}

}  // namespace pathlock::devtools
