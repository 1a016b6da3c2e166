// pathlock_matrix_check: runs every case derived from one compiled matrix
// against a pathlock backend. pathlock_add_matrix_tests() (PathlockMatrix.cmake)
// compiles this file once per matrix target, with
//   PATHLOCK_MATRIX_HEADER  the generated header, e.g. "my_rules.hpp"
//   PATHLOCK_MATRIX_TABLE   its table, e.g. myservice::rules::kMatrix
//   PATHLOCK_MATRIX_HAS_REDIS  1 if the pathlock library has the Redis backend
// and the matrix's output directory (which holds matrix_cases.inc) on the
// include path. It needs nothing but the pathlock library and the two headers
// installed beside it (pathlock_matrix_cases.hpp, pathlock_child_process.hpp):
// no test framework.
//
// A case (one line of matrix_cases.inc) holds a lock of one operation with
// the target under test at /t/h/x, then requests another operation whose
// target under test is at the same path, inside it or above it, and expects
// the verdict the matrix gives for that pair. A refusal must name the held
// lock, role, path and relation exactly; the same request moved beside the
// held path must be granted. The same scenarios run in pathlock's own suite
// (tests/conformance/matrix_cases_test.cpp).
//
// Usage: <program> --backend memory|redis [--redis URL]
//   redis without --redis starts its own redis-server on a free loopback port
//   (the binary is $PATHLOCK_REDIS_SERVER, else redis-server from PATH) with
//   persistence off, in a temporary directory, and stops it at the end.
// Exit status: 0 every case held, 1 a case failed, 2 usage or set-up error,
// 77 skipped (no redis-server, or a pathlock built without Redis); CTest
// reports 77 as a skip.
#include PATHLOCK_MATRIX_HEADER

#include "pathlock_child_process.hpp"
#include "pathlock_matrix_cases.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <pathlock/factory.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace pathlock;

constexpr int kSkipped = 77;

using matrix_cases::beside;
using matrix_cases::kCases;
using matrix_cases::MatrixCase;
using matrix_cases::parse_targets;

// Runs one case on a fresh namespace; returns what went wrong ("" if nothing).
std::string run_case(LockEngine& engine, const MatrixCase& c, const std::string& ns, bool& refused) {
  std::ostringstream why;
  const AcquireResult held = engine.acquire(LockRequest{ns, "holder", c.held_op, parse_targets(c.held_targets)});
  if (!held.granted()) return "the held lock was refused on an empty namespace";
  const std::vector<Target> req_targets = parse_targets(c.req_targets);
  const AcquireResult got = engine.acquire(LockRequest{ns, "requester", c.req_op, req_targets});
  refused = !got.granted();
  if (got.granted() != c.granted) {
    why << "expected " << (c.granted ? "granted" : "refused") << ", got " << (got.granted() ? "granted" : "refused");
    if (!got.granted()) why << " by " << got.conflict.op << "/" << got.conflict.role << " at " << got.conflict.path;
    why << "; ";
  } else if (!got.granted()) {
    const Conflict& k = got.conflict;
    const std::string req_path = std::find_if(req_targets.begin(), req_targets.end(), [&](const Target& t) {
                                   return t.role == c.req_role;
                                 })->path;
    if (k.id != held.grant.id) why << "conflict id " << k.id << " is not the held lock; ";
    if (k.op != c.held_op || k.role != c.held_role || k.path != c.held_path)
      why << "conflict names " << k.op << "/" << k.role << " at " << k.path << "; ";
    if (k.owner != "holder") why << "conflict owner " << k.owner << "; ";
    if (k.requested_role != c.req_role || k.requested_path != req_path)
      why << "conflict hit " << k.requested_role << " at " << k.requested_path << "; ";
    if (relation_name(k.relation) != c.relation) why << "relation " << relation_name(k.relation) << "; ";
    if (k.queued) why << "conflict is a queued waiter; ";
    const AcquireResult side = engine.acquire(LockRequest{ns, "requester", c.req_op, beside(req_targets, c.req_role)});
    if (!side.granted())
      why << "refused beside the held path too; ";
    else if (!engine.release(ns, side.grant.id, side.grant.token))
      why << "release beside failed; ";
  }
  if (got.granted() && !engine.release(ns, got.grant.id, got.grant.token)) why << "release of the request failed; ";
  if (!engine.release(ns, held.grant.id, held.grant.token)) why << "release of the held lock failed; ";
  if (!engine.list(ns).empty()) why << "locks left after both releases; ";
  return why.str();
}

// Finds an executable on PATH (or the path itself if it has a slash).
std::string find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::string dirs = path && *path ? path : "/usr/local/bin:/usr/bin:/bin";
  dirs += ":/usr/sbin:/usr/bin";
  std::istringstream in(dirs);
  std::string dir;
  while (std::getline(in, dir, ':')) {
    if (dir.empty()) continue;
    const std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// A private redis-server: started on a free loopback port (another process
// may take the port between our probe and the server's bind, so a server
// that exits during start-up is retried on a new port), stopped on
// destruction (SIGTERM, then SIGKILL after 5 s).
class PrivateRedisServer {
 public:
  explicit PrivateRedisServer(const std::string& binary) {
    try {
      start(binary);
    } catch (...) {
      stop();
      throw;
    }
  }
  ~PrivateRedisServer() { stop(); }
  PrivateRedisServer(const PrivateRedisServer&) = delete;
  PrivateRedisServer& operator=(const PrivateRedisServer&) = delete;
  const std::string& url() const { return url_; }

 private:
  void start(const std::string& binary) {
    char tmpl[] = "/tmp/pathlock-matrix-check-XXXXXX";
    if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
    dir_ = tmpl;
    const std::string log = dir_ + "/redis.log";
    for (int attempt = 0; attempt < 3 && url_.empty(); ++attempt)
      if (!start_on_free_port(binary, log)) break;
    if (url_.empty()) {
      std::ifstream in(log);
      std::stringstream text;
      text << in.rdbuf();
      stop();
      throw std::runtime_error("redis-server (" + binary + ") did not start; its log:\n" + text.str());
    }
  }

  // One attempt: a server on a free port, url_ set when it answers. False
  // when it runs but never answered (no use trying another port).
  bool start_on_free_port(const std::string& binary, const std::string& log) {
    const int port = child_process::free_loopback_port();
    if (port < 0) throw std::runtime_error("no free loopback port");
    spawn({binary, "--port", std::to_string(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
           "--maxmemory-policy", "noeviction", "--daemonize", "no", "--dir", dir_, "--logfile", log});
    const std::string url = "redis://127.0.0.1:" + std::to_string(port);
    const auto startup =
        child_process::wait_until_ready(pid_, [&] { return answers(url); }, std::chrono::milliseconds(20));
    if (startup == child_process::Startup::ready) url_ = url;
    if (startup == child_process::Startup::exited) pid_ = -1;
    return !(url_.empty() && pid_ > 0);
  }

  // Starts the server (pid_): stdin and stdout on /dev/null, stopped when
  // this process dies.
  void spawn(std::vector<std::string> args) {
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      const int null_fd = ::open("/dev/null", O_RDWR);
      if (null_fd >= 0) {
        ::dup2(null_fd, STDIN_FILENO);
        ::dup2(null_fd, STDOUT_FILENO);
      }
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
  }

  // Does a pathlock engine connect to the server at `url`?
  static bool answers(const std::string& url) {
    try {
      EngineOptions probe;
      probe.backend = Backend::redis;
      probe.redis.url = url;
      make_engine(probe);
      return true;
    } catch (const BackendError&) {
      return false;
    }
  }

  void stop() {
    if (pid_ > 0) {
      child_process::stop(pid_);
      pid_ = -1;
    }
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }

  std::string dir_;
  std::string url_;
  pid_t pid_ = -1;
};

int usage() {
  std::cerr << "usage: pathlock_matrix_check --backend memory|redis [--redis URL]\n";
  return 2;
}

struct Args {
  std::string backend, redis_url;
};

// The command line; false when it is bad.
bool parse_args(int argc, char** argv, Args& args) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return false;
    if (a == "--backend")
      args.backend = argv[++i];
    else if (a == "--redis")
      args.redis_url = argv[++i];
    else
      return false;
  }
  return !args.backend.empty();
}

// Where the cases run: the engine and the private redis-server it may use
// (declared first: stopped after the engine is gone); without an engine,
// why the run is skipped.
struct Setup {
  std::unique_ptr<PrivateRedisServer> server;
  std::unique_ptr<LockEngine> engine;
  std::string skipped;
};

// The URL of a private redis-server started for this run ("" and
// setup.skipped when there is no redis-server to start).
std::string start_private_server(Setup& setup) {
  const char* env = std::getenv("PATHLOCK_REDIS_SERVER");
  const std::string binary = find_program(env && *env ? env : "redis-server");
  if (binary.empty()) {
    setup.skipped = "no redis-server on PATH (set PATHLOCK_REDIS_SERVER)";
    return "";
  }
  setup.server = std::make_unique<PrivateRedisServer>(binary);
  return setup.server->url();
}

Setup set_up(const Args& args, const MatrixTable& matrix) {
  Setup setup;
  EngineOptions options;
  options.backend = parse_backend(args.backend);
  options.matrix = &matrix;
  if (options.backend == Backend::redis) {
    if (!PATHLOCK_MATRIX_HAS_REDIS) {
      setup.skipped = "this pathlock was built without the Redis backend";
      return setup;
    }
    options.redis.url = args.redis_url.empty() ? start_private_server(setup) : args.redis_url;
    if (!setup.skipped.empty()) return setup;
  }
  try {
    setup.engine = make_engine(options);
  } catch (const InvalidRequest& e) {
    setup.skipped = e.what();
  }
  return setup;
}

// The conversion cases pathlock-matrixc derived from the matrix
// (conversion_cases.inc, matrix_cases::conversion_case): the acquire
// verdicts made by converting a lock, and the waiting rules. Prints the first
// failures and the counts; returns how many failed.
std::size_t run_conversion_cases(LockEngine& engine, const MatrixTable& matrix, const std::string& run) {
  std::size_t failed = 0, total = 0;
  for (const matrix_cases::ConversionCase& c : matrix_cases::kConversionCases) {
    const std::string ns = "matrix-convert-" + run + "-" + std::to_string(total++);
    std::string why;
    try {
      why = matrix_cases::conversion_case(engine, c, ns);
    } catch (const std::exception& e) {
      why = std::string("threw: ") + e.what();
    }
    if (!why.empty() && ++failed <= 20)
      std::cout << "FAIL " << c.kind << ": " << c.from_op << " {" << c.from_targets << "} converted to " << c.to_op
                << " {" << c.to_targets << "}, held " << c.held_op << " {" << c.held_targets << "}, other "
                << c.other_op << " {" << c.other_targets << "}: " << why << "\n";
  }
  std::cout << matrix.name << " " << matrix.version << ": " << total << " conversion cases, " << failed
            << " failed\n";
  return failed;
}

// Runs every case, each on a namespace of its own; prints the first
// failures and the counts; returns the exit status.
int run_cases(LockEngine& engine, const MatrixTable& matrix, const std::string& backend_name) {
  const std::string run = std::to_string(::getpid()) + "-" +
                          std::to_string(std::chrono::system_clock::now().time_since_epoch().count() % 1000000007);
  std::size_t failed = 0, refused = 0, index = 0;
  for (const MatrixCase& c : kCases) {
    const std::string ns = "matrix-check-" + run + "-" + std::to_string(index++);
    bool was_refused = false;
    std::string why;
    try {
      why = run_case(engine, c, ns, was_refused);
    } catch (const std::exception& e) {
      why = std::string("threw: ") + e.what();
    }
    if (was_refused) ++refused;
    if (!why.empty()) {
      if (++failed <= 20)
        std::cout << "FAIL held " << c.held_op << " {" << c.held_targets << "}, requested " << c.req_op << " {"
                  << c.req_targets << "}, relation " << c.relation << ": " << why << "\n";
    }
  }
  failed += run_conversion_cases(engine, matrix, run);
  const std::size_t total = std::size(kCases);
  std::cout << matrix.name << " " << matrix.version << " on " << backend_name << ": " << total << " cases, "
            << refused << " refused, " << failed << " failed\n";
  if (total != std::size_t{matrix.code_count} * matrix.code_count * kRelationCount) {
    std::cout << "FAIL matrix_cases.inc does not match the compiled table (" << matrix.code_count << " codes)\n";
    return 1;
  }
  return failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!parse_args(argc, argv, args)) return usage();
  const MatrixTable& matrix = PATHLOCK_MATRIX_TABLE;
  try {
    const Setup setup = set_up(args, matrix);
    if (!setup.engine) {
      std::cout << "skipped: " << setup.skipped << "\n";
      return kSkipped;
    }
    return run_cases(*setup.engine, matrix, args.backend);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
}
