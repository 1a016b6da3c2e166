// pathlock: command-line front end (docs/cli.md).
//   pathlock demo [--backend memory|redis] [--redis URL]
//   pathlock shell [--backend memory|redis] [--redis URL] [--namespace NAME]
//   pathlock matrix lint|render|explain ...
#include "demo.hpp"
#include "shell.hpp"

#include <pathlock/factory.hpp>

#include "core/request.hpp"
#include "matrix/emit.hpp"

#include <fmt/format.h>

#include <fstream>
#include <iostream>

namespace {

using namespace pathlock;

constexpr const char* kUsage =
    "usage:\n"
    "  pathlock demo  [--backend memory|redis] [--redis URL]\n"
    "  pathlock shell [--backend memory|redis] [--redis URL] [--namespace NAME]\n"
    "  pathlock matrix lint    [FILE]\n"
    "  pathlock matrix render  [FILE] [--format md|html] [--out FILE]\n"
    "  pathlock matrix explain [FILE] HELD_OP REQUESTED_OP\n"
    "FILE defaults to the matrix this binary was built with:\n  " PATHLOCK_DEFAULT_MATRIX_JSON "\n";

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

std::unique_ptr<LockEngine> engine_from(const Flags& f) {
  EngineOptions opts;
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

int matrix_command(const std::string& sub, const Flags& f) {
  only_options(f, {"format", "out"});
  std::vector<std::string> pos = f.positional;
  std::string file = PATHLOCK_DEFAULT_MATRIX_JSON;
  const std::size_t wanted_ops = sub == "explain" ? 2 : 0;
  if (pos.size() == wanted_ops + 1) {
    file = pos.front();
    pos.erase(pos.begin());
  }
  if (pos.size() != wanted_ops) return usage();
  const matrix::Matrix m = matrix::load_matrix(file);
  std::string text;
  if (sub == "lint") {
    text = matrix::lint_report(m);
  } else if (sub == "render") {
    const auto fmt_it = f.options.find("format");
    const std::string format = fmt_it == f.options.end() ? "md" : fmt_it->second;
    if (format == "md") text = matrix::emit_markdown(m);
    else if (format == "html") text = matrix::emit_html(m);
    else throw InvalidRequest(fmt::format("unknown format '{}' (md or html)", format));
  } else if (sub == "explain") {
    const int held = m.op_index(pos[0]), req = m.op_index(pos[1]);
    if (held < 0) throw InvalidRequest(fmt::format("unknown operation '{}'", pos[0]));
    if (req < 0) throw InvalidRequest(fmt::format("unknown operation '{}'", pos[1]));
    text = matrix::explain(m, held, req);
  } else {
    return usage();
  }
  if (const auto out = f.options.find("out"); out != f.options.end()) {
    std::ofstream o(out->second, std::ios::binary | std::ios::trunc);
    o << text;
    if (!o) throw InvalidRequest(fmt::format("cannot write {}", out->second));
  } else {
    std::cout << text;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const std::string cmd = argv[1];
  try {
    if (cmd == "demo") {
      const Flags f = parse_flags(argc, argv, 2);
      only_options(f, {"backend", "redis"});
      if (!f.positional.empty()) return usage();
      return cli::run_demo(*engine_from(f), std::cout);
    }
    if (cmd == "shell") {
      const Flags f = parse_flags(argc, argv, 2);
      only_options(f, {"backend", "redis", "namespace"});
      if (!f.positional.empty()) return usage();
      const auto ns = f.options.count("namespace") ? f.options.at("namespace") : std::string("default");
      core::check_namespace(ns);  // before connecting or reading a line
      auto engine = engine_from(f);
      cli::run_shell(*engine, ns, std::cin, std::cout);
      return 0;
    }
    if (cmd == "matrix" && argc >= 3) return matrix_command(argv[2], parse_flags(argc, argv, 3));
    if (cmd == "--help" || cmd == "help") {
      std::cout << kUsage;
      return 0;
    }
  } catch (const matrix::MatrixError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return usage();
}
