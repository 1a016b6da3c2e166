// The rendered grid against the product's original grid (tests/data, shown in
// docs/matrix.md), cell by cell; the shipped silent-cell decisions against
// the product definition's decision table; the renderings' marks, legend and
// tooltips; and the committed docs against the JSON.
#include "matrix/emit.hpp"
#include "matrix/text.hpp"

#include <catch2/catch.hpp>

#include <fmt/format.h>

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

TEST_CASE("the rendered grid matches the original grid cell for cell", "[render]") {
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

TEST_CASE("silent cells carry the shipped decisions, marked as decisions", "[render]") {
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
    CHECK(m.rule(hc, rc).origin == Origin::decision);
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

TEST_CASE("both renderings mark the cells of asymmetric pairs, from one cell model", "[render]") {
  const Matrix& m = shipped();
  const auto views = cell_views(m);
  const auto asym = asymmetric_pairs(m);
  const std::string md = emit_markdown(m), html = emit_html(m);
  std::size_t marked = 0;
  for (std::size_t h = 0; h < m.ops.size(); ++h)
    for (std::size_t r = 0; r < m.ops.size(); ++r) {
      bool expect = false;
      for (const Asymmetry& a : asym) {
        const auto fo = static_cast<std::size_t>(m.codes[static_cast<std::size_t>(a.first)].op);
        const auto so = static_cast<std::size_t>(m.codes[static_cast<std::size_t>(a.second)].op);
        expect = expect || (fo == h && so == r) || (fo == r && so == h);
      }
      INFO(m.ops[h].name << " x " << m.ops[r].name);
      CHECK(views[h][r].asymmetric == expect);
      marked += expect;
    }
  CHECK(marked > 0);
  CHECK(views[static_cast<std::size_t>(m.op_index("rename_folder"))][static_cast<std::size_t>(m.op_index("rename_file"))].asymmetric);
  CHECK_FALSE(views[static_cast<std::size_t>(m.op_index("delete_folder"))][static_cast<std::size_t>(m.op_index("create"))].asymmetric);
  // One ⇄ per marked cell in each grid (the pairs' headings add one each).
  auto grid_part = [](const std::string& text, const std::string& end) { return text.substr(0, text.find(end)); };
  auto count = [](const std::string& text, const std::string& needle) {
    std::size_t n = 0;
    for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
    return n;
  };
  CHECK(count(grid_part(md, "## Operations"), " ⇄ |") == marked);
  CHECK(count(grid_part(html, "<h2>"), "<td id=\"c-") == m.ops.size() * m.ops.size());
  CHECK(count(grid_part(html, "<h2>"), " asymmetric\" title=") == marked);
}

TEST_CASE("the html grid has a legend and each cell's explanation linked and as its tooltip", "[render]") {
  const Matrix& m = shipped();
  const std::string html = emit_html(m);
  for (const char* legend : {"every role pair and path relation allowed", "every role pair and path relation refused",
                             "the two do not interact", "mixed: depends on the target", "plain, from the original grid",
                             "shipped decision where the original grid is silent", "the matrix owner's own rule",
                             "marked for review", "asymmetric: the outcome depends on which operation came first"}) {
    INFO(legend);
    CHECK(html.find(legend) != std::string::npos);
  }
  const int h = m.op_index("move_file"), r = m.op_index("create");
  const std::string tip = html_escape(explain(m, h, r));
  const std::size_t n = m.ops.size(), number = static_cast<std::size_t>(h) * n + static_cast<std::size_t>(r) + 1;
  CHECK(html.find(fmt::format("<td id=\"c-{0}-{1}\" class=\"allow\" title=\"{2}\"><a href=\"#x-{0}-{1}\"><span "
                              "class=\"piece\">B√</span> <span class=\"piece\"><span class=\"decision\">[a√]</span>"
                              "</span></a><sup class=\"n\">{3}</sup></td>",
                              h, r, tip, number)) != std::string::npos);
  CHECK(html.find(fmt::format("<li id=\"x-{0}-{1}\"><a class=\"back\" href=\"#c-{0}-{1}\">back to the cell</a><pre>{2}"
                              "</pre></li>",
                              h, r, tip)) != std::string::npos);
  CHECK(tip.find("shipped decision: creating beside the file does not touch it") != std::string::npos);
}

TEST_CASE("explain names each verdict's origin from the file, never by default", "[render]") {
  const Matrix& m = shipped();
  const std::string shipped_text = explain(m, m.op_index("move_file"), m.op_index("create"));
  CHECK(shipped_text ==
        "held move_file (移动文件), requested create (新建 new): original grid \"B√\", shipped decision \"a√\"\n"
        "  held src vs requested target, wherever the paths overlap: allow (shipped decision: creating beside the file "
        "does not touch it)\n"
        "  held dst vs requested target, wherever the paths overlap: allow (the original grid)\n");
  // A consumer matrix says nothing about the original grid: its rules are the owner's.
  const Matrix refined = load_matrix(PATHLOCK_SOURCE_DIR "/tests/data/refined.json");
  for (std::size_t h = 0; h < refined.ops.size(); ++h)
    for (std::size_t r = 0; r < refined.ops.size(); ++r) {
      const std::string text = explain(refined, static_cast<int>(h), static_cast<int>(r));
      INFO(text);
      CHECK(text.find("original grid") == std::string::npos);
      CHECK(text.find("(owner's rule)") != std::string::npos);
    }
  const std::string md = emit_markdown(refined);
  // Refinements read in short words, explained in the legend.
  CHECK(md.find("| write | *{T(√inside √above ×else)}* | *{T(dst(×same √else) ×else)}* ⇄ |") != std::string::npos);
  CHECK(md.find("| move | *{S×D(×above √else)}* ⇄ |") != std::string::npos);
  CHECK(md.find("- A(√inside ×else) = by how the paths relate (same: the same path; inside: the request is inside "
                "the held path; above: the request is on an ancestor of the held path; else: every other case)\n") !=
        std::string::npos);
  CHECK(md.find("## The owner's own rules") != std::string::npos);
}

TEST_CASE("docs/matrix.md is in step with the matrix", "[render]") {
  std::ifstream in(PATHLOCK_SOURCE_DIR "/docs/matrix.md", std::ios::binary);
  std::stringstream committed;
  committed << in.rdbuf();
  const std::string doc = committed.str();
  for (const char* section : {"identity", "operations", "grid", "decisions", "asymmetric"}) {
    INFO(section);
    CHECK(doc.find(std::string("<!-- matrix:") + section + " -->") != std::string::npos);
  }
  INFO("regenerate with: build/bin/pathlock matrix render matrix/cloud-drive.json --update docs/matrix.md");
  CHECK(update_doc(shipped(), doc) == doc);
  // The doc's original grid is the product's published grid.
  std::ifstream ref(PATHLOCK_SOURCE_DIR "/tests/data/matrix_md_grid.txt");
  std::string line;
  while (std::getline(ref, line)) {
    if (line.rfind("|---", 0) == 0) continue;
    std::string row = "|";  // the reference aligns its first column; the doc does not
    for (const std::string& cell : split_row(line)) row += " " + cell + " |";
    INFO(row);
    CHECK(doc.find("\n" + row + "\n") != std::string::npos);
  }
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
