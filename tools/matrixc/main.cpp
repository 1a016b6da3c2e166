// pathlock-matrixc: compiles a matrix JSON file into a C++ header,
// matrix-derived test cases, renderings for product owners and, with
// --lua FILE, the Redis Functions library of the matrix (the text the Redis
// backend loads, for services in other languages and for packaging; see
// docs/lua-protocol.md). Run by CMake through pathlock_compile_matrix();
// see tools/cmake.
//
// Every output is written only when its content changed, so editing the
// JSON rebuilds exactly what depends on the changed outputs.
#include "matrix/emit.hpp"
#include "redis/library.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

namespace fs = std::filesystem;
using namespace pathlock::matrix;

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw MatrixError(fmt::format("{}: cannot open", p.string()));
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_if_changed(const fs::path& p, const std::string& content) {
  std::error_code ec;
  if (fs::exists(p, ec)) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    if (s.str() == content) return;
  }
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

// The MatrixTable of `m`, as the generated header spells it; its views point
// into `m` and `fingerprint`, which must outlive it.
pathlock::MatrixTable table_of(const Matrix& m, const std::string& fingerprint) {
  using namespace pathlock;
  MatrixTable t{};
  t.name = m.name;
  t.version = m.version;
  t.fingerprint = fingerprint;
  t.op_count = static_cast<std::uint8_t>(m.ops.size());
  for (std::size_t o = 0; o < m.ops.size(); ++o) {
    OpInfo& op = t.ops[o];
    op.name = m.ops[o].name;
    op.label = m.ops[o].label;
    op.first_code = static_cast<std::uint8_t>(m.code_of(static_cast<int>(o), 0));
    op.role_count = static_cast<std::uint8_t>(m.ops[o].roles.size());
    for (std::size_t r = 0; r < m.ops[o].roles.size(); ++r) op.roles[r] = m.ops[o].roles[r].name;
    op.not_inside_count = static_cast<std::uint8_t>(m.ops[o].not_inside.size());
    for (std::size_t k = 0; k < m.ops[o].not_inside.size(); ++k)
      op.not_inside[k] = {static_cast<std::uint8_t>(m.ops[o].not_inside[k].first),
                          static_cast<std::uint8_t>(m.ops[o].not_inside[k].second)};
  }
  t.code_count = static_cast<std::uint8_t>(m.codes.size());
  for (std::size_t c = 0; c < m.codes.size(); ++c)
    t.codes[c] = {static_cast<std::uint8_t>(m.codes[c].op), static_cast<std::uint8_t>(m.codes[c].role)};
  for (std::size_t rel = 0; rel < kRelationCount; ++rel)
    for (std::size_t r = 0; r < m.codes.size(); ++r)
      for (std::size_t h = 0; h < m.codes.size(); ++h)
        if (m.verdict(static_cast<int>(h), static_cast<int>(r), static_cast<Relation>(rel)) == Verdict::deny)
          t.blockers[rel][r] |= CodeMask{1} << h;
  return t;
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
    const Matrix m = parse_matrix(read_file(json), source_name.empty() ? json : source_name);
    const fs::path dir(out);
    write_if_changed(dir / "include" / header, emit_header(m, cxx_ns));
    if (!lua_file.empty()) {
      const std::string fingerprint = m.fingerprint();
      write_if_changed(lua_file, pathlock::redis::library_for(table_of(m, fingerprint)).code);
    }
    write_if_changed(dir / "matrix_cases.inc", emit_cases(m));
    write_if_changed(dir / (m.name + ".md"), emit_markdown(m));
    write_if_changed(dir / (m.name + ".html"), emit_html(m));
    if (!stamp.empty()) {
      std::ofstream s(stamp, std::ios::trunc);
      s << m.fingerprint() << "\n";
    }
  } catch (const MatrixError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << json << ": " << e.what() << "\n";
    return 1;
  }
  return 0;
}
