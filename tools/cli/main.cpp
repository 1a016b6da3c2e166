// pathlock: command-line front end (docs/cli.md). Its commands are the
// table kCommands below (name, usage, options, handler): `pathlock --help`
// prints the usage lines of that table, so each is written once; a command
// with subcommands (admin, redis, matrix) keeps its own usage beside its
// own table.
#include "admin.hpp"
#include "demo.hpp"
#include "matrix_cli.hpp"
#include "redis_cmd.hpp"
#include "shell.hpp"
#include "tls_flags.hpp"

#include <pathlock/factory.hpp>
#include <pathlock/version.hpp>
#include <pathlock/metrics.hpp>
#ifdef PATHLOCK_CLI_WITH_METRICS_SERVER
#include <pathlock/metrics_server.hpp>

#include "console_server.hpp"
#include "scrape.hpp"
#endif

#include "common/options.hpp"
#include <pathlock/admin.hpp>
#include <pathlock/redis_secret.hpp>

#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

namespace {

using namespace pathlock;
namespace fs = std::filesystem;

// The matrix FILE defaults to: the installed copy of the shipped matrix
// beside this program (PREFIX/bin/pathlock reads
// PREFIX/share/pathlock/matrix/cloud-drive.json, wherever PREFIX was moved),
// else the file configured at build time (PATHLOCK_CLI_MATRIX_JSON: the
// source tree's, for a program run from its build tree).
std::string default_matrix_file() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
#ifdef PATHLOCK_INSTALLED_MATRIX_JSON
  if (!ec) {
    const fs::path installed = (exe.parent_path() / PATHLOCK_INSTALLED_MATRIX_JSON).lexically_normal();
    if (fs::is_regular_file(installed, ec)) return installed.string();
  }
#endif
  return PATHLOCK_DEFAULT_MATRIX_JSON;
}

// The option tables (tools/common/options.hpp); a bad command line exits
// with options::kExitUsage.
const options::Check kBackend = [](const std::string& v) { parse_backend(v); };
#ifdef PATHLOCK_CLI_WITH_METRICS_SERVER
const options::Check kScrapeUrl = [](const std::string& v) { console::parse_scrape_url(v); };
#else
const options::Check kScrapeUrl = [](const std::string&) {
  throw InvalidRequest("this build of pathlock has no console (PATHLOCK_WITH_METRICS_SERVER=OFF)");
};
#endif

options::Options demo_options() {
  options::Options t = options::Options{}.command("demo").value("backend", kBackend).value("redis").value("matrix");
  return cli::with_tls(cli::with_postgres(t));
}
options::Options shell_options() {
  options::Options t =
      options::Options{}.command("shell").value("backend", kBackend).value("redis").value("namespace").value(
          "matrix").value("metrics-listen").repeated("metrics-allow-host");
  return cli::with_tls(cli::with_postgres(t));
}
options::Options console_options() {
  options::Options t = options::Options{}
                           .command("console")
                           .value("backend", kBackend)
                           .value("redis")
                           .value("matrix")
                           .value("listen")
                           .flag("admin")
                           .repeated("allow-host")
                           .repeated("scrape", kScrapeUrl);
  return cli::with_tls(cli::with_postgres(t));
}
const options::Options kDemoOptions = demo_options();
const options::Options kConsoleOptions = console_options();
const options::Options kShellOptions = shell_options();

// `--matrix FILE`: the table compiled at start (null: the built-in matrix).
std::unique_ptr<matrix::MatrixFile> matrix_from(const options::Parsed& p) {
  return p.has("matrix") ? cli::load_matrix_option(p.get("matrix")) : nullptr;
}

std::unique_ptr<LockEngine> engine_from(const options::Parsed& p, const matrix::MatrixFile* compiled,
                                        std::shared_ptr<Metrics> metrics = nullptr) {
  EngineOptions opts = cli::engine_options_from(p, Backend::memory);
  if (compiled) opts.matrix = &compiled->table();
  if (metrics) opts.observe = ObserveOptions{.metrics = std::move(metrics)};
  return make_engine(opts);
}

}  // namespace

// pathlock shell ... (docs/cli.md)
int shell_command(int argc, char** argv) {
  const options::Parsed p = kShellOptions.parse(argc, argv, 2);
  const std::string ns = p.get("namespace", "default");
  admin::check_namespace(ns);  // before connecting or reading a line
  const auto compiled = matrix_from(p);
  // --metrics-listen: the exporter listens before the engine connects,
  // so a bad or busy address fails first; it serves until the shell ends.
  std::shared_ptr<Metrics> metrics;
#ifdef PATHLOCK_CLI_WITH_METRICS_SERVER
  std::unique_ptr<MetricsServer> exporter;
  if (p.has("metrics-listen")) {
    metrics = std::make_shared<Metrics>(compiled ? compiled->table() : default_matrix());
    MetricsServerOptions mo;
    mo.listen = p.get("metrics-listen");
    mo.allowed_hosts = p.all("metrics-allow-host");
    exporter = std::make_unique<MetricsServer>(metrics, mo);
    std::cerr << "pathlock: metrics at " << exporter->url() << std::endl;
  }
#else
  if (p.has("metrics-listen") || p.has("metrics-allow-host"))
    throw InvalidRequest("--metrics-listen: this build of pathlock has no metrics server");
#endif
  auto engine = engine_from(p, compiled.get(), metrics);
  cli::run_shell(*engine, ns, std::cin, std::cout);
  return 0;
}

// pathlock console ... (docs/console.md)
int console_command(int argc, char** argv) {
  const options::Parsed p = kConsoleOptions.parse(argc, argv, 2);
#ifdef PATHLOCK_CLI_WITH_METRICS_SERVER
  // The matrix file is read once: its text for the Matrix page, its table
  // for the engine (--matrix), or the shipped file's text beside the
  // table built from it.
  console::ConsoleOptions co;
  co.matrix_file.name = p.has("matrix") ? p.get("matrix") : default_matrix_file();
  try {
    co.matrix_file.text = matrix::read_text_file(co.matrix_file.name);
  } catch (const matrix::MatrixError& e) {
    if (p.has("matrix")) throw;  // the engine needs it
    co.matrix_file.error = e.what();  // the editor can still open an uploaded file
  }
  const auto compiled =
      p.has("matrix") ? cli::parse_matrix_option(co.matrix_file.text, co.matrix_file.name) : nullptr;
  auto metrics = std::make_shared<Metrics>(compiled ? compiled->table() : default_matrix());
  auto engine = engine_from(p, compiled.get(), metrics);
  co.listen = p.get("listen", "127.0.0.1:0");
  co.allowed_hosts = p.all("allow-host");
  co.admin = p.has("admin");
  co.metrics = metrics;
  co.scrape = p.all("scrape");
  const Backend backend = p.has("backend") ? parse_backend(p.get("backend")) : Backend::memory;
  // Shown on the page: never the password (redact_redis_url's form; a
  // libpq key=value string, which may hold password=..., not at all).
  const std::string pg = p.get("postgres", "postgresql://127.0.0.1:5432/postgres");
  co.backend = backend == Backend::redis ? "redis " + redis::redact_redis_url(p.get("redis", "redis://127.0.0.1:6379"))
               : backend == Backend::postgres
                   ? "postgres " + (pg.find("://") == std::string::npos ? "(a key=value connection string)"
                                                                         : redis::redact_redis_url(pg))
                   : "memory (this process's own engine)";
  if (backend != Backend::memory)
    co.namespaces = cli::namespace_lister(p);
  else  // the console's own engine: nothing but the console uses it
    co.namespaces = [] { return std::vector<std::string>{"default"}; };
  console::ConsoleServer server(*engine, co);
  std::cerr << "pathlock: console at " << server.url() << (co.admin ? " (admin: force-release allowed)" : "")
            << (co.scrape.empty() ? "" : fmt::format(" (scraping {} source(s))", co.scrape.size())) << std::endl;
  server.wait();
  return 0;
#else
  throw InvalidRequest("console: this build of pathlock has no HTTP server (PATHLOCK_WITH_METRICS_SERVER=OFF)");
#endif
}

namespace {

int demo_command(int argc, char** argv) {
  const options::Parsed p = kDemoOptions.parse(argc, argv, 2);
  const auto compiled = matrix_from(p);
  return cli::run_demo(*engine_from(p, compiled.get()), std::cout);
}

std::vector<std::string> rest_of(int argc, char** argv) { return {argv + 2, argv + argc}; }

int admin_command(int argc, char** argv) { return cli::run_admin(rest_of(argc, argv), std::cout, std::cerr); }
int redis_command(int argc, char** argv) {
  return cli::run_redis_command(rest_of(argc, argv), std::cout, std::cerr);
}
int matrix_command(int argc, char** argv) {
  return cli::run_matrix_command(rest_of(argc, argv), default_matrix_file(), std::cout, std::cerr);
}
int version_command(int argc, char** argv);
int help_command(int argc, char** argv);

// The commands: name, usage lines (each "  pathlock ..." line; a command's
// options are its table above or its subcommands' own), handler.
struct Command {
  const char* name;
  const char* usage;
  int (*run)(int argc, char** argv);
};

const Command kCommands[] = {
    {"--version", "  pathlock --version\n", version_command},
    {"demo", "  pathlock demo  [--backend memory|redis|postgres] [--redis URL] [--postgres URL] [--matrix FILE]\n",
     demo_command},
    {"shell",
     "  pathlock shell [--backend memory|redis|postgres] [--redis URL] [--postgres URL] [--namespace NAME]\n"
     "                 [--matrix FILE]\n"
     "                 [--metrics-listen HOST:PORT] [--metrics-allow-host NAME]...\n",
     shell_command},
    {"console",
     "  pathlock console [--backend memory|redis|postgres] [--redis URL] [--postgres URL] [--matrix FILE]\n"
     "                   [--listen HOST:PORT] [--admin]\n"
     "                   [--allow-host NAME]... [--scrape http://HOST:PORT/metrics]...\n",
     console_command},
    {"matrix", cli::kMatrixUsage, matrix_command},
    {"admin", cli::kAdminUsage, admin_command},
    {"redis", cli::kRedisUsage, redis_command},
    {"--help", "", help_command},
    {"help", "", help_command},
};

std::string usage_text() {
  std::string text = "usage:\n";
  for (const Command& c : kCommands) text += c.usage;
  return text + cli::kTlsUsage + cli::kPasswordUsage + cli::kPostgresUsage + "FILE defaults to the shipped matrix:\n  " +
         default_matrix_file() +
         "\n"
         "--matrix FILE compiles FILE at start instead (see matrix/README.md).\n"
         "Exit status: 0 done, 1 failed (the error on stderr), 2 bad usage (docs/cli.md).\n";
}

int usage() {
  std::cerr << usage_text();
  return options::kExitUsage;
}

int version_command(int argc, char**) {
  if (argc != 2) return usage();
  std::cout << "pathlock " << kVersionString << "\n";
  return options::kExitOk;
}

int help_command(int, char**) {
  std::cout << usage_text();
  return options::kExitOk;
}

const Command* find_command(const std::string& name) {
  for (const Command& c : kCommands)
    if (name == c.name) return &c;
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  const Command* command = argc < 2 ? nullptr : find_command(argv[1]);
  if (!command) return usage();
  try {
    return command->run(argc, argv);
  } catch (const options::UsageError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return options::kExitUsage;
  } catch (const matrix::MatrixError& e) {
    for (const std::string& p : e.problems()) std::cerr << "error: " << p << "\n";
    return options::kExitFailure;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return options::kExitFailure;
  }
}
