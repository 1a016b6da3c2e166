// The public matrix interface (include/pathlock/matrix.hpp), used as the
// programs use it: only that header. Problems, warnings and diff lines carry
// the cell they are about as fields (the console's editor links them by
// these, never by their text); a verdict may carry its own origin; a cell
// reads in words; replace_value edits a file in place.
#include <pathlock/matrix.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>

namespace {

using namespace pathlock;
using json = nlohmann::json;

const std::string kRefined = PATHLOCK_SOURCE_DIR "/tests/data/refined.json";

std::vector<matrix::Problem> problems_of(const std::string& text, const std::string& source) {
  try {
    (void)matrix::MatrixFile::parse(text, source);
  } catch (const matrix::MatrixError& e) {
    REQUIRE(e.details().size() == e.problems().size());
    for (std::size_t i = 0; i < e.details().size(); ++i) CHECK(e.details()[i].text == e.problems()[i]);
    return e.details();
  }
  FAIL("the file parsed");
  return {};
}

struct Where {
  std::string op, cell, role;
  bool operator==(const Where&) const = default;
};
Where where(const matrix::Problem& p) { return {p.operation, p.cell, p.role}; }

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out{""};
  for (const char c : text) {
    if (c == '\n')
      out.emplace_back();
    else
      out.back() += c;
  }
  return out;
}

}  // namespace

TEST_CASE("public matrix API: a problem names its operation, cell and role as fields", "[matrix][public]") {
  json doc = json::parse(matrix::read_text_file(kRefined));
  doc["operations"][2]["roles"][0]["role"] = "Bad";                  // an operation's role
  doc["grid"]["write"]["write"]["target"]["verdict"] = "dney";       // a held role's rule in a cell
  doc["grid"]["move"]["write"] = {{"src", "deny"}};                  // a held role missing from a cell
  doc["grid"]["move"]["move"] = "alow";                              // a bare cell
  // A file name that reads like a location: the fields never come from the text.
  const auto p = problems_of(doc.dump(2), "operation 'scan', cell 'scan', role 'x'.json");
  REQUIRE(p.size() == 4);
  CHECK(where(p[0]) == Where{"scan", "", "Bad"});
  CHECK(where(p[1]) == Where{"write", "write", "target"});
  CHECK(where(p[2]) == Where{"move", "write", "dst"});
  CHECK(where(p[3]) == Where{"move", "move", ""});
  for (const auto& x : p) CHECK(x.severity == matrix::Severity::error);
  CHECK(p[1].text.find("unknown verdict \"dney\"") != std::string::npos);
  // Problems of the file as a whole name no cell.
  const auto top = problems_of(R"({"name": "x", "version": "1", "operations": []})", "top.json");
  REQUIRE(top.size() == 1);
  CHECK(where(top[0]) == Where{});
  // A grid row or a cell naming no operation: the row (and cell) it is.
  doc = json::parse(matrix::read_text_file(kRefined));
  doc["grid"]["ghost"] = json::object();
  doc["grid"]["write"]["ghost"] = "allow";
  const auto ghost = problems_of(doc.dump(), "g.json");
  REQUIRE(ghost.size() == 2);
  CHECK(where(ghost[0]) == Where{"ghost", "", ""});
  CHECK(where(ghost[1]) == Where{"write", "ghost", ""});
}

TEST_CASE("public matrix API: warnings and diff lines are located", "[matrix][public]") {
  const std::string text = matrix::read_text_file(kRefined);
  const matrix::MatrixFile before = matrix::MatrixFile::parse(text, "old.json");
  matrix::ScaffoldRequest add;
  add.op = "share";
  add.roles = {"target"};
  std::string edited = matrix::scaffold(text, "new.json", add);
  edited = matrix::replace_value(edited, {"grid", "move", "scan"}, R"({"src": "allow", "dst": "deny"})", "new.json");
  const matrix::MatrixFile after = matrix::MatrixFile::parse(edited, "new.json");
  const auto warn = matrix::warnings(after);
  REQUIRE(warn.size() == 8);  // the new row: 4 cells of one held role; the new column: write, scan, and move (2 roles)
  for (const auto& w : warn) {
    CHECK(w.severity == matrix::Severity::warning);
    CHECK((w.operation == "share" || w.cell == "share"));
    CHECK(!w.role.empty());
  }
  bool added = false, changed = false;
  for (const matrix::Problem& l : matrix::diff_lines(before, after)) {
    if (l.text == "added operation: share") added = where(l) == Where{"share", "", ""};
    if (l.text.rfind("changed: move.dst held, scan.target requested", 0) == 0)
      changed = where(l) == Where{"move", "scan", "dst"};
  }
  CHECK(added);
  CHECK(changed);
  std::string report;
  for (const matrix::Problem& l : matrix::diff_lines(before, after)) report += l.text + "\n";
  CHECK(report == matrix::diff_report(before, after));
}

TEST_CASE("public matrix API: a verdict credited on its own", "[matrix][public]") {
  json doc = json::parse(matrix::read_text_file(kRefined));
  doc["origin"] = "grid";
  doc["grid"]["write"]["write"]["target"]["relation"]["same"] = {
      {"verdict", "allow"}, {"origin", "owner"}, {"decision", "one writer per name is enough"}};
  doc["grid"]["move"]["write"]["dst"] = {
      {"verdict", "allow"},
      {"requested_role", {{"target", {{"verdict", "allow"}, {"origin", "decision"}, {"decision", "shipped so"}}}}}};
  const matrix::MatrixFile m = matrix::MatrixFile::parse(doc.dump(2), "c.json");
  const std::string text = matrix::explain(m, 0, 0);
  CHECK(text.find("held target vs requested target, on the same path: allow (owner's rule: one writer per name is "
                  "enough)\n") != std::string::npos);
  CHECK(text.find("held target vs requested target, requested inside the held path, requested on an ancestor of the "
                  "held path: allow (the original grid)\n") != std::string::npos);
  const matrix::CellSummary c = m.cell(0, 0);
  CHECK(c.credits[0][0][0].origin == "owner");
  CHECK(c.credits[0][0][0].decision == "one writer per name is enough");
  CHECK(c.credits[0][0][1].origin == "grid");
  CHECK(c.pieces.front().kind == "owner");  // the owner changed part of the rule: shown as the owner's
  const matrix::CellSummary sub = m.cell(1, 0);
  CHECK(sub.credits[1][0][2].origin == "decision");
  CHECK(sub.credits[1][0][2].decision == "shipped so");
  CHECK(sub.credits[0][0][0].origin == "grid");
  // A verdict's origin is checked like a rule's.
  doc["grid"]["write"]["write"]["target"]["relation"]["same"] = {{"verdict", "allow"}, {"origin", "decision"}};
  auto p = problems_of(doc.dump(), "c.json");
  REQUIRE(p.size() == 1);
  CHECK(p[0].text.find("relation 'same': a rule with \"origin\": \"decision\" needs \"decision\"") != std::string::npos);
  CHECK(where(p[0]) == Where{"write", "write", "target"});
  doc["grid"]["write"]["write"]["target"]["relation"]["same"] = {{"verdict", "allow"}, {"why", "x"}};
  p = problems_of(doc.dump(), "c.json");
  REQUIRE(p.size() == 1);
  CHECK(p[0].text.find("unknown key \"why\"") != std::string::npos);
}

TEST_CASE("public matrix API: a cell in words, from its verdicts", "[matrix][public]") {
  const matrix::MatrixFile m = matrix::MatrixFile::load(kRefined);
  using V = std::vector<std::string>;
  CHECK(m.cell(0, 0).words == V{"a held write blocks a requested write at the same path; allows it below and above"});
  CHECK(m.cell(1, 0).words == V{"a held move (src) blocks a requested write wherever the paths overlap",
                                "a held move (dst) blocks a requested write above; allows it at the same path and below"});
  CHECK(m.cell(0, 2).words == V{"a held write does not interact with a requested scan wherever the paths overlap"});
  CHECK(m.cell(2, 2).words == V{"a held scan allows a requested scan wherever the paths overlap"});
  CHECK(m.cell(1, 1).words == V{"a held move (src) blocks a requested move (src) wherever the paths overlap",
                                "a held move (src) blocks a requested move (dst) wherever the paths overlap",
                                "a held move (dst) allows a requested move (src) wherever the paths overlap",
                                "a held move (dst) allows a requested move (dst) wherever the paths overlap"});
}

TEST_CASE("public matrix API: replace_value keeps every other byte", "[matrix][public]") {
  for (const auto& entry : std::filesystem::directory_iterator(PATHLOCK_SOURCE_DIR "/matrix")) {
    if (entry.path().extension() != ".json" || entry.path().filename() == "matrix.schema.json") continue;
    const std::string text = matrix::read_text_file(entry.path().string());
    const matrix::MatrixFile m = matrix::MatrixFile::parse(text, "m.json");
    const auto ops = m.ops();
    // The last operation with one role (a per-role cell must name every role).
    const auto one_role = std::find_if(ops.rbegin(), ops.rend(), [](const auto& op) { return op.roles.size() == 1; });
    REQUIRE(one_role != ops.rend());
    const std::string held = one_role->name, requested = ops.front().name, role = one_role->roles.front().name;
    const std::string cell = R"({")" + role + R"(": {"verdict": "deny", "origin": "owner"}})";
    const std::string out = matrix::replace_value(text, {"grid", held, requested}, cell, "m.json");
    const auto a = split_lines(text), b = split_lines(out);
    REQUIRE(a.size() == b.size());
    std::vector<std::size_t> changed;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (a[i] != b[i]) changed.push_back(i);
    REQUIRE(changed.size() == 1);
    CHECK(b[changed[0]].find("\"" + requested + "\": { \"" + role + "\": { \"verdict\": \"deny\", \"origin\": \"owner\" } }") !=
          std::string::npos);
    const matrix::MatrixFile edited = matrix::MatrixFile::parse(out, "m.json");
    std::size_t cell_lines = 0;
    for (const matrix::Problem& l : matrix::diff_lines(m, edited))
      if (l.text.rfind("changed: ", 0) == 0) cell_lines += l.operation == held && l.cell == requested ? 1 : 100;
    CHECK(cell_lines >= 1);
    CHECK(cell_lines < 100);
  }
  CHECK_THROWS_WITH(matrix::replace_value("{\"a\": {}}", {"a", "b"}, "1", "f.json"), "f.json: no a.b");
  CHECK_THROWS_WITH(matrix::replace_value("{\"a\": 1}", {"a", "b"}, "1", "f.json"),
                    "f.json: a.b is inside a value that is not an object");
  CHECK_THROWS_WITH(matrix::replace_value("{\"a\": 1}", {"a"}, "{", "f.json"), "f.json: the new value is not JSON");
  CHECK(matrix::replace_value("{\n  \"a\": 1,\n  \"b\": [1, 2]\n}\n", {"b"}, R"(["x"])", "f.json") ==
        "{\n  \"a\": 1,\n  \"b\": [\"x\"]\n}\n");
}
