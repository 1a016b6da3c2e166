// The rendered grid against the product definition (MATRIX.md), cell by cell,
// and the shipped silent-cell decisions against MATRIX.md's decision table.
#include "matrix/emit.hpp"

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

using namespace pathlock;
using namespace pathlock::matrix;

namespace {

std::vector<std::string> split_row(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream s(line);
  std::string cell;
  std::getline(s, cell, '|');  // before the first bar
  while (std::getline(s, cell, '|')) {
    const auto b = cell.find_first_not_of(' '), e = cell.find_last_not_of(' ');
    cells.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
  }
  if (!cells.empty() && cells.back().empty()) cells.pop_back();
  return cells;
}

const Matrix& shipped() {
  static const Matrix m = load_matrix(PATHLOCK_SOURCE_DIR "/matrix/cloud-drive.json");
  return m;
}

}  // namespace

TEST_CASE("the rendered grid matches MATRIX.md cell for cell", "[render]") {
  const Matrix& m = shipped();
  std::ifstream in(PATHLOCK_SOURCE_DIR "/tests/data/matrix_md_grid.txt");
  std::string line;
  std::getline(in, line);
  const auto header = split_row(line);
  REQUIRE(header.size() == m.ops.size() + 1);
  for (std::size_t c = 0; c < m.ops.size(); ++c) CHECK(header[c + 1] == m.ops[c].name);
  std::getline(in, line);  // |---|
  std::size_t rows = 0;
  while (std::getline(in, line)) {
    const auto cells = split_row(line);
    REQUIRE(cells.size() == m.ops.size() + 1);
    const std::string held = cells[0].substr(0, cells[0].find(' '));
    const int h = m.op_index(held);
    REQUIRE(h >= 0);
    CHECK(cells[0] == held + " `" + m.ops[static_cast<std::size_t>(h)].example + "`");
    for (std::size_t r = 0; r < m.ops.size(); ++r) {
      INFO("held " << held << ", requested " << m.ops[r].name);
      CHECK(original_label(m, h, static_cast<int>(r)) == cells[r + 1]);
    }
    ++rows;
  }
  CHECK(rows == m.ops.size());
}

TEST_CASE("silent cells carry MATRIX.md's shipped decisions, marked as decisions", "[render]") {
  const Matrix& m = shipped();
  auto check = [&](const char* held_op, const char* held_role, const char* req_op, const char* req_role, Verdict want) {
    const int ho = m.op_index(held_op), ro = m.op_index(req_op);
    REQUIRE(ho >= 0);
    REQUIRE(ro >= 0);
    int hc = -1, rc = -1;
    for (std::size_t r = 0; r < m.ops[static_cast<std::size_t>(ho)].roles.size(); ++r)
      if (m.ops[static_cast<std::size_t>(ho)].roles[r].name == held_role) hc = m.code_of(ho, static_cast<int>(r));
    for (std::size_t r = 0; r < m.ops[static_cast<std::size_t>(ro)].roles.size(); ++r)
      if (m.ops[static_cast<std::size_t>(ro)].roles[r].name == req_role) rc = m.code_of(ro, static_cast<int>(r));
    REQUIRE(hc >= 0);
    REQUIRE(rc >= 0);
    INFO(held_op << "." << held_role << " held, " << req_op << "." << req_role << " requested");
    CHECK_FALSE(m.rule(hc, rc).decision.empty());
    for (std::size_t rel = 0; rel < kRelationCount; ++rel) CHECK(m.verdict(hc, rc, static_cast<Relation>(rel)) == want);
  };
  const auto A = Verdict::allow, X = Verdict::deny;
  for (const char* op : {"create", "upload"}) check("move_file", "src", op, "target", A);
  check("move_file", "src", "move_folder", "src", X);
  check("move_file", "src", "move_folder", "dst", X);
  check("move_file", "src", "delete_folder", "target", X);
  check("move_file", "src", "move_file", "src", X);
  check("move_file", "src", "move_file", "dst", A);
  check("move_file", "src", "copy_folder", "src", A);
  check("move_file", "src", "copy_folder", "dst", A);
  for (const char* op : {"create", "upload", "rename_folder", "rename_file"}) check("copy_folder", "src", op, "target", A);
  for (const char* op : {"move_folder", "move_file", "copy_folder", "copy_file"})
    for (const char* role : {"src", "dst"}) check("copy_folder", "src", op, role, A);
  for (const char* op : {"delete_folder", "delete_file"}) check("copy_folder", "src", op, "target", X);
  for (const char* op : {"create", "upload", "rename_folder"}) check("copy_file", "src", op, "target", A);
  for (const char* op : {"move_folder", "move_file", "copy_folder", "copy_file"})
    for (const char* role : {"src", "dst"}) check("copy_file", "src", op, role, A);
  for (const char* op : {"rename_file", "delete_folder", "delete_file"}) check("copy_file", "src", op, "target", X);
}

TEST_CASE("renderings mark decisions and list asymmetric pairs", "[render]") {
  const Matrix& m = shipped();
  const std::string md = emit_markdown(m);
  CHECK(md.find("| move_file `a.txt->/B` | B√ **[a√]** |") != std::string::npos);
  CHECK(md.find("rename_folder.target held, rename_file.target requested: deny; the other way round: allow") !=
        std::string::npos);
  const std::string html = emit_html(m);
  CHECK(html.find("<!DOCTYPE html>") == 0);
  CHECK(html.find("<span class=\"decision\">[a√]</span>") != std::string::npos);
}

TEST_CASE("docs/matrix-grid.md is the current rendering", "[render]") {
  std::ifstream in(PATHLOCK_SOURCE_DIR "/docs/matrix-grid.md", std::ios::binary);
  std::stringstream committed;
  committed << in.rdbuf();
  const Matrix m = load_matrix(PATHLOCK_SOURCE_DIR "/matrix/cloud-drive.json");
  Matrix relative = m;
  relative.source = "matrix/cloud-drive.json";
  INFO("regenerate with: build/bin/pathlock matrix render matrix/cloud-drive.json --out docs/matrix-grid.md");
  CHECK(committed.str() == emit_markdown(relative));
}
