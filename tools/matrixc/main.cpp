// pathlock-matrixc: compiles a matrix JSON file into a C++ header,
// matrix-derived test cases, renderings for product owners and, with
// --lua FILE, the Redis Functions library of the matrix (the text the Redis
// backend loads, for services in other languages and for packaging; see
// docs/lua-protocol.md). Without --out, --namespace and --header it writes
// only that library. Run by CMake through pathlock_compile_matrix();
// see tools/cmake.
//
// Every output is written only when its content changed, so editing the
// JSON rebuilds exactly what depends on the changed outputs. An invalid file
// fails the build with every problem, one "error: " line each; rules marked
// "review" print "warning: " lines and build.
#include <pathlock/matrix.hpp>

#include "common/options.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace fs = std::filesystem;
using namespace pathlock::matrix;

namespace {

// Writes `p` (creating its folder) unless it already holds `content`; a
// failure names the output, never the input.
void write_if_changed(const fs::path& p, const std::string& content) {
  std::error_code ec;
  if (fs::exists(p, ec) && read_text_file(p.string()) == content) return;
  if (p.has_parent_path() && !fs::is_directory(p.parent_path(), ec)) {
    fs::create_directories(p.parent_path(), ec);
    if (ec) throw MatrixError(fmt::format("{}: cannot create its folder: {}", p.string(), ec.message()));
  }
  const fs::path tmp = p.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << content;
    if (!out) throw MatrixError(fmt::format("{}: cannot write", tmp.string()));
  }
  fs::rename(tmp, p, ec);
  if (ec) throw MatrixError(fmt::format("{}: cannot write: {}", p.string(), ec.message()));
}

const char* const kUsage =
    "usage: pathlock-matrixc --json FILE --out DIR --namespace CXX_NS --header NAME.hpp\n"
    "                        [--source-name NAME] [--lua FILE] [--stamp FILE]\n"
    "       pathlock-matrixc --json FILE --lua FILE [--source-name NAME] [--stamp FILE]\n"
    "       (--lua-dir DIR is accepted and ignored, for old build scripts)\n";

const pathlock::options::Options kOptions = pathlock::options::Options{}
                                                .required("json")
                                                .value("out")
                                                .value("namespace")
                                                .value("header")
                                                .value("source-name")
                                                .value("lua")
                                                .value("stamp")
                                                .value("lua-dir");  // Lua is no longer generated from templates

}  // namespace

int main(int argc, char** argv) {
  namespace options = pathlock::options;
  try {
    const options::Parsed p = kOptions.parse(argc, argv, 1);
    const std::string json = p.get("json");
    // The C++ outputs need all three of --out, --namespace and --header;
    // without any of them, only the Lua library is written (--lua).
    const bool cxx = p.has("out") || p.has("namespace") || p.has("header");
    for (const char* name : {"out", "namespace", "header"})
      if (cxx && !p.has(name))
        throw options::UsageError(fmt::format("--{} is required with --out, --namespace or --header", name));
    if (!cxx && !p.has("lua")) throw options::UsageError("nothing to write: give --out DIR --namespace --header, or --lua FILE");
    const std::string source_name = p.get("source-name", json), lua_file = p.get("lua"), stamp = p.get("stamp");
    const MatrixFile m = MatrixFile::parse(read_text_file(json), source_name);
    for (const Problem& w : warnings(m)) std::cerr << "warning: " << w.text << "\n";
    const fs::path dir(p.get("out"));
    if (cxx) write_if_changed(dir / "include" / p.get("header"), emit_header(m, p.get("namespace")));
    if (!lua_file.empty()) write_if_changed(lua_file, lua_library(m.table()));
    if (cxx) {
      write_if_changed(dir / "matrix_cases.inc", emit_cases(m));
      write_if_changed(dir / "conversion_cases.inc", emit_conversion_cases(m));
      write_if_changed(dir / "matrix_cases.json", emit_cases_json(m));
      write_if_changed(dir / (m.name() + ".md"), emit_markdown(m));
      write_if_changed(dir / (m.name() + ".html"), emit_html(m));
    }
    if (!stamp.empty()) {
      std::ofstream s(stamp, std::ios::trunc);
      s << m.fingerprint() << "\n";
      if (!s) throw MatrixError(fmt::format("{}: cannot write", stamp));
    }
  } catch (const options::UsageError& e) {
    std::cerr << "error: " << e.what() << "\n" << kUsage;
    return options::kExitUsage;
  } catch (const MatrixError& e) {
    for (const std::string& problem : e.problems()) std::cerr << "error: " << problem << "\n";
    return options::kExitFailure;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return options::kExitFailure;
  }
  return options::kExitOk;
}
