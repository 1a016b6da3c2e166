// pathlock-matrixc: compiles a matrix JSON file into a C++ header,
// matrix-derived test cases, renderings for product owners and, with
// --lua FILE, the Redis Functions library of the matrix (the text the Redis
// backend loads, for services in other languages and for packaging; see
// docs/lua-protocol.md). Run by CMake through pathlock_compile_matrix();
// see tools/cmake.
//
// Every output is written only when its content changed, so editing the
// JSON rebuilds exactly what depends on the changed outputs. An invalid file
// fails the build with every problem, one "error: " line each; rules marked
// "review" print "warning: " lines and build.
#include "matrix/emit.hpp"
#include "matrix/table.hpp"
#include "redis/library.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace fs = std::filesystem;
using namespace pathlock::matrix;

namespace {

void write_if_changed(const fs::path& p, const std::string& content) {
  std::error_code ec;
  if (fs::exists(p, ec) && read_text_file(p.string()) == content) return;
  fs::create_directories(p.parent_path());
  const fs::path tmp = p.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << content;
    if (!out) throw MatrixError(fmt::format("{}: cannot write", tmp.string()));
  }
  fs::rename(tmp, p);
}

int usage() {
  std::cerr << "usage: pathlock-matrixc --json FILE --out DIR --namespace CXX_NS --header NAME.hpp\n"
               "                        [--source-name NAME] [--lua FILE] [--stamp FILE]\n"
               "       (--lua-dir DIR is accepted and ignored, for old build scripts)\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string json, source_name, out, cxx_ns, header, lua_file, stamp;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return usage();
    const std::string v = argv[++i];
    if (a == "--json") json = v;
    else if (a == "--source-name") source_name = v;
    else if (a == "--out") out = v;
    else if (a == "--namespace") cxx_ns = v;
    else if (a == "--header") header = v;
    else if (a == "--lua-dir") continue;  // Lua is no longer generated from templates
    else if (a == "--lua") lua_file = v;
    else if (a == "--stamp") stamp = v;
    else return usage();
  }
  if (json.empty() || out.empty() || cxx_ns.empty() || header.empty()) return usage();
  try {
    const Matrix m = parse_matrix(read_text_file(json), source_name.empty() ? json : source_name);
    for (const std::string& w : warnings(m)) std::cerr << "warning: " << w << "\n";
    const fs::path dir(out);
    write_if_changed(dir / "include" / header, emit_header(m, cxx_ns));
    if (!lua_file.empty()) {
      std::deque<std::string> strings;  // the table's views point here
      const pathlock::MatrixTable table =
          build_table(m, [&](const std::string& text) -> std::string_view { return strings.emplace_back(text); });
      write_if_changed(lua_file, pathlock::redis::library_for(table).code);
    }
    write_if_changed(dir / "matrix_cases.inc", emit_cases(m));
    write_if_changed(dir / (m.name + ".md"), emit_markdown(m));
    write_if_changed(dir / (m.name + ".html"), emit_html(m));
    if (!stamp.empty()) {
      std::ofstream s(stamp, std::ios::trunc);
      s << m.fingerprint() << "\n";
    }
  } catch (const MatrixError& e) {
    for (const std::string& p : e.problems()) std::cerr << "error: " << p << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << json << ": " << e.what() << "\n";
    return 1;
  }
  return 0;
}
