// pathlock: command-line front end (docs/cli.md).
//   pathlock demo [--backend memory|redis] [--redis URL] [--matrix FILE]
//   pathlock shell [--backend memory|redis] [--redis URL] [--namespace NAME] [--matrix FILE]
//                  [--metrics-listen HOST:PORT]
//   pathlock matrix lint|render|explain|diff|scaffold ... (matrix_cli.cpp)
//   pathlock admin status --redis URL [--namespace NS] [--limit N] (admin.cpp)
#include "admin.hpp"
#include "demo.hpp"
#include "matrix_cli.hpp"
#include "shell.hpp"

#include <pathlock/factory.hpp>
#include <pathlock/metrics.hpp>
#ifdef PATHLOCK_CLI_WITH_METRICS_SERVER
#include <pathlock/metrics_server.hpp>
#endif

#include "core/request.hpp"

#include <fmt/format.h>

#include <iostream>
#include <map>
#include <string>
#include <vector>

namespace {

using namespace pathlock;

const std::string kUsage = std::string(
    "usage:\n"
    "  pathlock demo  [--backend memory|redis] [--redis URL] [--matrix FILE]\n"
    "  pathlock shell [--backend memory|redis] [--redis URL] [--namespace NAME] [--matrix FILE]\n"
    "                 [--metrics-listen HOST:PORT]\n") +
    cli::kMatrixUsage + cli::kAdminUsage +
    "FILE defaults to the matrix this binary was built with:\n  " PATHLOCK_DEFAULT_MATRIX_JSON "\n"
    "--matrix FILE compiles FILE at start instead (see matrix/README.md).\n";

int usage() {
  std::cerr << kUsage;
  return 2;
}

// Options are `--name VALUE` pairs (the value is the next argument, whatever
// it looks like); anything else is positional. An option given twice is an
// error rather than last-one-wins: a program that drives the CLI and repeats
// an option by mistake learns it at once instead of getting a silent pick.
struct Flags {
  std::map<std::string, std::string> options;
  std::vector<std::string> positional;
};

Flags parse_flags(int argc, char** argv, int first) {
  Flags f;
  for (int i = first; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--", 0) == 0) {
      if (i + 1 >= argc) throw InvalidRequest(fmt::format("{} needs a value", a));
      if (!f.options.emplace(a.substr(2), argv[++i]).second)
        throw InvalidRequest(fmt::format("{} is given more than once", a));
    } else {
      f.positional.push_back(a);
    }
  }
  return f;
}

// `--matrix FILE`: the table compiled at start (null: the built-in matrix).
std::unique_ptr<matrix::CompiledMatrix> matrix_from(const Flags& f) {
  const auto it = f.options.find("matrix");
  return it == f.options.end() ? nullptr : cli::load_matrix_option(it->second);
}

std::unique_ptr<LockEngine> engine_from(const Flags& f, const matrix::CompiledMatrix* compiled,
                                        std::shared_ptr<Metrics> metrics = nullptr) {
  EngineOptions opts;
  if (compiled) opts.matrix = &compiled->table();
  if (metrics) opts.observe = ObserveOptions{.metrics = std::move(metrics)};
  if (auto it = f.options.find("backend"); it != f.options.end()) opts.backend = parse_backend(it->second);
  if (auto it = f.options.find("redis"); it != f.options.end()) opts.redis.url = it->second;
  return make_engine(opts);
}

void only_options(const Flags& f, std::initializer_list<const char*> allowed) {
  for (const auto& [k, v] : f.options) {
    bool ok = false;
    for (const char* a : allowed) ok = ok || k == a;
    if (!ok) throw InvalidRequest(fmt::format("unknown option --{}", k));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const std::string cmd = argv[1];
  try {
    if (cmd == "demo") {
      const Flags f = parse_flags(argc, argv, 2);
      only_options(f, {"backend", "redis", "matrix"});
      if (!f.positional.empty()) return usage();
      const auto compiled = matrix_from(f);
      return cli::run_demo(*engine_from(f, compiled.get()), std::cout);
    }
    if (cmd == "shell") {
      const Flags f = parse_flags(argc, argv, 2);
      only_options(f, {"backend", "redis", "namespace", "matrix", "metrics-listen"});
      if (!f.positional.empty()) return usage();
      const auto ns = f.options.count("namespace") ? f.options.at("namespace") : std::string("default");
      core::check_namespace(ns);  // before connecting or reading a line
      const auto compiled = matrix_from(f);
      // --metrics-listen: the exporter listens before the engine connects,
      // so a bad or busy address fails first; it serves until the shell ends.
      std::shared_ptr<Metrics> metrics;
#ifdef PATHLOCK_CLI_WITH_METRICS_SERVER
      std::unique_ptr<MetricsServer> exporter;
      if (const auto it = f.options.find("metrics-listen"); it != f.options.end()) {
        metrics = std::make_shared<Metrics>(compiled ? compiled->table() : default_matrix());
        exporter = std::make_unique<MetricsServer>(metrics, it->second);
        std::cerr << "pathlock: metrics at " << exporter->url() << std::endl;
      }
#else
      if (f.options.count("metrics-listen"))
        throw InvalidRequest("--metrics-listen: this build of pathlock has no metrics server");
#endif
      auto engine = engine_from(f, compiled.get(), metrics);
      cli::run_shell(*engine, ns, std::cin, std::cout);
      return 0;
    }
    if (cmd == "admin") return cli::run_admin({argv + 2, argv + argc}, std::cout, std::cerr);
    if (cmd == "matrix")
      return cli::run_matrix_command({argv + 2, argv + argc}, PATHLOCK_DEFAULT_MATRIX_JSON, std::cout, std::cerr);
    if (cmd == "--help" || cmd == "help") {
      std::cout << kUsage;
      return 0;
    }
  } catch (const matrix::MatrixError& e) {
    for (const std::string& p : e.problems()) std::cerr << "error: " << p << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return usage();
}
