// The matrix compiler: validation messages and the refinements of the format.
#include "matrix/emit.hpp"
#include "redis/library.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cstdlib>
#include <fstream>

using namespace pathlock;
using namespace pathlock::matrix;

namespace {

// A valid two-operation matrix; tests break one piece of it at a time.
std::string small(const std::string& read_row = R"("read": "allow", "write": "deny")",
                  const std::string& extra_top = "") {
  return fmt::format(R"({{ "name": "small", "version": "1", {}
    "operations": [ {{ "op": "read", "roles": [ {{ "role": "target" }} ] }},
                    {{ "op": "write", "roles": [ {{ "role": "src" }}, {{ "role": "dst" }} ] }} ],
    "grid": {{ "read": {{ {} }},
              "write": {{ "read": {{ "src": "deny", "dst": "allow" }}, "write": "deny" }} }} }})",
                     extra_top, read_row);
}

std::vector<std::string> problems_of(const std::string& text) {
  try {
    (void)parse_matrix(text, "m.json");
  } catch (const MatrixError& e) {
    return e.problems();
  }
  return {};
}

std::string error_of(const std::string& text) {
  try {
    (void)parse_matrix(text, "m.json");
  } catch (const MatrixError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("a valid matrix parses", "[matrix]") {
  const Matrix m = parse_matrix(small(), "m.json");
  CHECK(m.ops.size() == 2);
  CHECK(m.codes.size() == 3);
  CHECK(m.verdict(m.code_of(1, 0), m.code_of(0, 0), Relation::same) == Verdict::deny);
  CHECK(m.verdict(m.code_of(1, 1), m.code_of(0, 0), Relation::held_ancestor) == Verdict::allow);
}

TEST_CASE("validation names file, operation, cell and problem", "[matrix]") {
  CHECK(error_of(small(R"("read": "allow")")) ==
        "m.json: operation 'read', cell 'write': missing cell (every cell must be given; no default)");
  CHECK(error_of(small(R"("read": "allow", "write": "maybe")")) ==
        "m.json: operation 'read', cell 'write': unknown verdict \"maybe\" (use \"allow\", \"deny\" or \"unrelated\")");
  CHECK(error_of(small(R"("read": "allow", "write": "deny", "copy": "deny")")) ==
        "m.json: operation 'read': cell 'copy' is not an operation");
  CHECK(error_of(small(R"("read": "allow", "write": { "nope": "deny" })")) ==
        "m.json: operation 'read', cell 'write': held operation 'read' has no role 'nope'");
  CHECK(error_of(small(R"("read": "allow", "write": { "target": { "requested_role": { "x": "deny" } } })")) ==
        "m.json: operation 'read', cell 'write', role 'target': requested operation 'write' has no role 'x'");
  CHECK(error_of(small(R"("read": "allow", "write": { "target": { "relation": { "same": "deny" } } })")) ==
        "m.json: operation 'read', cell 'write', role 'target': no verdict for requested role 'src' with relation "
        "'held_ancestor' (add \"verdict\")");
  CHECK(error_of(small(R"("read": "allow", "write": 3)")) ==
        "m.json: operation 'read', cell 'write': a cell is a verdict string or an object of held role -> rule, got 3");
  CHECK(error_of(small(R"("read": "allow", "write": { "target": { "verdict": "deny", "decision": "" } })")) ==
        "m.json: operation 'read', cell 'write', role 'target': \"decision\" must say why (it is empty)");
  CHECK(error_of(small(R"("read": "allow", "write": { "target": { "verdict": "deny", "relation": { "near": "deny" } } })")) ==
        "m.json: operation 'read', cell 'write', role 'target': unknown relation \"near\" (use \"same\", "
        "\"held_ancestor\", \"held_descendant\")");
}

TEST_CASE("duplicate keys are refused with their location", "[matrix]") {
  CHECK(error_of(small(R"("read": "allow", "write": "deny", "read": "deny")")) ==
        "m.json: duplicate key \"read\" in grid.read");
  CHECK(error_of(small(R"("read": "allow", "write": "deny")", R"("name": "again",)")) ==
        "m.json: duplicate key \"name\"");
}

TEST_CASE("structural errors", "[matrix]") {
  CHECK(error_of("{") .find("m.json: not valid JSON") == 0);
  CHECK(error_of("[]") == "m.json: the document must be a JSON object");
  CHECK(error_of(R"({"name":"x","version":"1","operations":[],"grid":{}})") ==
        "m.json: \"operations\" must be a non-empty array");
  CHECK(error_of(R"({"name":"x","version":"1","operations":[{"op":"a","roles":[{"role":"t"},{"role":"t"}]}],"grid":{}})") ==
        "m.json: operation 'a', role 't': role defined twice");
  CHECK(error_of(R"({"name":"x","version":"1","operations":[{"op":"a","roles":[{"role":"t"}]}],"grid":{}})") ==
        "m.json: operation 'a': no grid row (every operation needs a row)");
  CHECK(error_of(R"({"name":"x","version":"1","colour":"red","operations":[],"grid":{}})").find("unknown key \"colour\"") !=
        std::string::npos);
}

TEST_CASE("the generator fails the build with the message", "[matrix]") {
  const std::string bad = "matrixc_bad.json";
  std::ofstream(bad) << small(R"("read": "allow")");
  const std::string cmd = fmt::format("{} --json {} --out matrixc_out --namespace x --header x.hpp 2> matrixc_err.txt",
                                      PATHLOCK_MATRIXC, bad);
  CHECK(std::system(cmd.c_str()) != 0);
  std::ifstream err("matrixc_err.txt");
  std::string line;
  std::getline(err, line);
  CHECK(line == "error: matrixc_bad.json: operation 'read', cell 'write': missing cell (every cell must be given; no default)");
}

TEST_CASE("refinements by requested role and relation resolve", "[matrix]") {
  const Matrix m = load_matrix(PATHLOCK_SOURCE_DIR "/tests/data/refined.json");
  const int write = m.code_of(0, 0), src = m.code_of(1, 0), dst = m.code_of(1, 1), scan = m.code_of(2, 0);
  CHECK(m.verdict(write, write, Relation::same) == Verdict::deny);
  CHECK(m.verdict(write, write, Relation::held_ancestor) == Verdict::allow);
  CHECK(m.verdict(write, src, Relation::held_descendant) == Verdict::deny);
  CHECK(m.verdict(write, dst, Relation::same) == Verdict::deny);
  CHECK(m.verdict(write, dst, Relation::held_ancestor) == Verdict::allow);
  CHECK(m.verdict(dst, write, Relation::held_descendant) == Verdict::deny);
  CHECK(m.verdict(dst, write, Relation::held_ancestor) == Verdict::allow);
  CHECK(m.verdict(scan, write, Relation::held_descendant) == Verdict::allow);
  CHECK(m.verdict(scan, write, Relation::held_ancestor) == Verdict::deny);
  CHECK(m.verdict(write, scan, Relation::same) == Verdict::unrelated);
}

TEST_CASE("the fingerprint follows the rules, not the labels", "[matrix]") {
  const Matrix a = parse_matrix(small(), "a.json");
  std::string relabelled = small();
  relabelled.replace(relabelled.find("\"version\": \"1\""), 14, "\"version\": \"2\"");
  CHECK(parse_matrix(relabelled, "b.json").fingerprint() == a.fingerprint());
  const Matrix c = parse_matrix(small(R"("read": "deny", "write": "deny")"), "c.json");
  CHECK(c.fingerprint() != a.fingerprint());
}

TEST_CASE("the shipped matrix lints clean and lists its asymmetric pairs", "[matrix]") {
  const Matrix m = load_matrix(PATHLOCK_SOURCE_DIR "/matrix/cloud-drive.json");
  const std::string report = lint_report(m);
  CHECK(report.find("is valid") != std::string::npos);
  // The product definition's own example of an asymmetric pair (docs/matrix.md).
  CHECK(report.find("rename_folder.target held, rename_file.target requested: deny; the other way round: allow") !=
        std::string::npos);
}

TEST_CASE("the Redis Functions library is built from a table - pathlock-matrixc writes the same text", "[matrix][lua]") {
  const pathlock::MatrixTable& table = pathlock::default_matrix();
  const pathlock::redis::Library lib = pathlock::redis::library_for(table);
  CHECK(lib.code.rfind("#!lua name=" + lib.name + "\n", 0) == 0);
  CHECK(lib.code.find("local PL_FINGERPRINT = \"" + std::string(table.fingerprint) + "\"") != std::string::npos);
  for (const auto& source : pathlock::redis::lua_sources())
    CHECK(lib.code.find("-- lua/" + std::string(source.name) + ".lua\n") != std::string::npos);
  CHECK(pathlock::redis::library_for(table).code == lib.code);  // deterministic
  // Names are unique per fingerprint: two matrices share one server.
  pathlock::MatrixTable other = table;
  other.fingerprint = "00ff";
  const pathlock::redis::Library other_lib = pathlock::redis::library_for(other);
  CHECK(other_lib.name != lib.name);
  CHECK(other_lib.function_prefix != lib.function_prefix);
  // The generator's file (for services in other languages) is the text the
  // backend loads at run time; --lua-dir is accepted and ignored.
  const std::string cmd = fmt::format(
      "{} --json {}/matrix/cloud-drive.json --out matrixc_lib --namespace x --header x.hpp --lua-dir nowhere "
      "--lua matrixc_lib/lib.lua",
      PATHLOCK_MATRIXC, PATHLOCK_SOURCE_DIR);
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::ifstream in("matrixc_lib/lib.lua", std::ios::binary);
  const std::string written((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(written == lib.code);
}

TEST_CASE("every problem of a file is reported at once, without echoes", "[matrix]") {
  // Three independent problems: a bad verdict, a missing cell, an unknown key in an operation.
  const std::string text = R"({ "name": "small", "version": "1",
    "operations": [ { "op": "read", "roles": [ { "role": "target" } ] },
                    { "op": "write", "roles": [ { "role": "src" }, { "role": "dst" } ] },
                    { "op": "scan", "colour": "red", "roles": [ { "role": "target" } ] } ],
    "grid": { "read": { "read": "allwo", "write": "deny" },
              "write": { "read": { "src": "deny", "dst": "allow" } },
              "scan": { "read": "allow", "write": "allow", "scan": "allow" } } })";
  CHECK(problems_of(text) ==
        std::vector<std::string>{
            "m.json: operation 'scan': unknown key \"colour\" (allowed: \"op\", \"label\", \"example\", \"roles\", \"not_inside\")",
            "m.json: operation 'read', cell 'read': unknown verdict \"allwo\" (use \"allow\", \"deny\" or \"unrelated\")",
            "m.json: operation 'write', cell 'write': missing cell (every cell must be given; no default)"});
  // The broken operation 'scan' is not reported again by the rows and cells that name it.
  try {
    (void)parse_matrix(text, "m.json");
  } catch (const MatrixError& e) {
    CHECK(std::string(e.what()) == e.problems()[0] + "\n" + e.problems()[1] + "\n" + e.problems()[2]);
  }
  // All duplicate keys at once.
  CHECK(problems_of(small(R"("read": "allow", "write": "deny", "read": "deny", "write": "deny")")) ==
        std::vector<std::string>{"m.json: duplicate key \"read\" in grid.read", "m.json: duplicate key \"write\" in grid.read"});
}

TEST_CASE("origin is data: checked, defaulted from the file, never inferred", "[matrix]") {
  const Matrix plain = parse_matrix(small(), "m.json");
  CHECK(plain.default_origin == Origin::owner);
  CHECK(plain.rule(0, 0).origin == Origin::owner);
  const Matrix grid = parse_matrix(small(R"("read": "allow", "write": "deny")", R"("origin": "grid",)"), "m.json");
  CHECK(grid.rule(0, 0).origin == Origin::grid);
  const Matrix decided = parse_matrix(
      small(R"("read": "allow", "write": { "target": { "verdict": "deny", "origin": "decision", "decision": "why" } })",
            R"("origin": "grid",)"),
      "m.json");
  CHECK(decided.rule(0, 1).origin == Origin::decision);
  CHECK(decided.rule(0, 1).decision == "why");
  CHECK(error_of(small(R"("read": "allow", "write": { "target": { "verdict": "deny", "decision": "why" } })",
                       R"("origin": "grid",)")) ==
        "m.json: operation 'read', cell 'write', role 'target': \"decision\" on a rule whose origin is the original "
        "grid (add \"origin\": \"decision\" or \"owner\")");
  CHECK(error_of(small(R"("read": "allow", "write": { "target": { "verdict": "deny", "origin": "decision" } })")) ==
        "m.json: operation 'read', cell 'write', role 'target': a rule with \"origin\": \"decision\" needs "
        "\"decision\" saying why");
  CHECK(error_of(small(R"("read": "allow", "write": "deny")", R"("origin": "article",)")) ==
        "m.json: \"origin\": unknown origin \"article\" (use \"grid\", \"decision\" or \"owner\")");
  // The shipped matrix states its origins: grid by default, decisions marked.
  const Matrix shipped = load_matrix(PATHLOCK_SOURCE_DIR "/matrix/cloud-drive.json");
  CHECK(shipped.default_origin == Origin::grid);
  std::size_t decisions = 0;
  for (const auto& row : shipped.grid)
    for (const Cell& cell : row)
      for (const Rule& rule : cell.held_roles) {
        CHECK(rule.origin != Origin::owner);
        CHECK(rule.decision.empty() == (rule.origin == Origin::grid));
        decisions += rule.origin == Origin::decision;
      }
  CHECK(decisions == 26);
}

TEST_CASE("rules marked for review are warnings, not errors", "[matrix]") {
  const Matrix m = parse_matrix(
      small(R"("read": "allow", "write": { "target": { "verdict": "deny", "review": "decide this" } })"), "m.json");
  CHECK(warnings(m) == std::vector<std::string>{"m.json: operation 'read', cell 'write', role 'target': review: decide "
                                                "this (remove \"review\" once decided)"});
  CHECK(lint_report(m).find("1 warning(s):\n    warning: m.json: operation 'read'") != std::string::npos);
  CHECK(warnings(parse_matrix(small(), "m.json")).empty());
  CHECK(error_of(small(R"("read": "allow", "write": { "target": { "verdict": "deny", "review": "" } })")).find(
            "\"review\" must say what to decide") != std::string::npos);
}

TEST_CASE("scaffold writes a valid file with the new operation denied and marked for review", "[matrix]") {
  const std::string text = small();
  const std::string out = scaffold(text, "m.json", ScaffoldRequest{"sync", {"target"}, "sync it", "/S"});
  const Matrix m = parse_matrix(out, "m.json");
  REQUIRE(m.ops.size() == 3);
  CHECK(m.ops[2].name == "sync");
  CHECK(m.ops[2].label == "sync it");
  CHECK(m.ops[2].example == "/S");
  // read: 1 role, write: 2 roles, sync row: 3 cells x 1 role.
  CHECK(warnings(m).size() == 1 + 2 + 3);
  for (std::size_t c = 0; c < m.codes.size(); ++c)
    for (std::size_t rel = 0; rel < kRelationCount; ++rel) {
      CHECK(m.verdict(m.code_of(2, 0), static_cast<int>(c), static_cast<Relation>(rel)) == Verdict::deny);
      CHECK(m.verdict(static_cast<int>(c), m.code_of(2, 0), static_cast<Relation>(rel)) == Verdict::deny);
    }
  // The old rules are untouched.
  const Matrix old = parse_matrix(text, "m.json");
  for (std::size_t h = 0; h < old.codes.size(); ++h)
    for (std::size_t r = 0; r < old.codes.size(); ++r)
      for (std::size_t rel = 0; rel < kRelationCount; ++rel)
        CHECK(m.verdict(static_cast<int>(h), static_cast<int>(r), static_cast<Relation>(rel)) ==
              old.verdict(static_cast<int>(h), static_cast<int>(r), static_cast<Relation>(rel)));
  CHECK_THROWS_WITH(scaffold(text, "m.json", ScaffoldRequest{"read", {"target"}, "", ""}),
                    "m.json: scaffold 'read': the operation exists already");
  CHECK_THROWS_WITH(scaffold(text, "m.json", ScaffoldRequest{"x", {}, "", ""}), Catch::Contains("at least one role"));
  CHECK_THROWS_WITH(scaffold(text, "m.json", ScaffoldRequest{"x", {"a", "b", "c", "d", "e"}, "", ""}),
                    Catch::Contains("at most 4 roles"));
  CHECK_THROWS_AS(scaffold("{", "m.json", ScaffoldRequest{"x", {"t"}, "", ""}), MatrixError);
  // Labels with quotes and non-ASCII text are written as JSON strings.
  const std::string quoted = scaffold(text, "m.json", ScaffoldRequest{"tag", {"target"}, "say \"hi\" 标签", ""});
  CHECK(parse_matrix(quoted, "m.json").ops[2].label == "say \"hi\" 标签");
}

TEST_CASE("diff matches cells by name and says stricter or looser", "[matrix]") {
  const Matrix before = parse_matrix(small(), "old.json");
  const Matrix after = parse_matrix(small(R"("read": "deny", "write": "unrelated")"), "new.json");
  const MatrixDiff d = diff_matrices(before, after);
  REQUIRE(d.cells.size() == 3);
  CHECK(d.cells[0].held == "read.target");
  CHECK(d.cells[0].requested == "read.target");
  CHECK(d.cells[0].relations.size() == kRelationCount);
  CHECK(d.cells[0].before == Verdict::allow);
  CHECK(d.cells[0].after == Verdict::deny);
  const std::string report = diff_report(before, after, d);
  CHECK(report.find("changed: read.target held, read.target requested, wherever the paths overlap: allow -> deny "
                    "(stricter)\n") != std::string::npos);
  CHECK(report.find("changed: read.target held, write.src requested, wherever the paths overlap: deny -> unrelated "
                    "(looser)\n") != std::string::npos);
  CHECK(report.find("changed: read.target held, write.dst requested, wherever the paths overlap: deny -> unrelated "
                    "(looser)\n") != std::string::npos);
  CHECK(version_problem(before, after).has_value());
  CHECK_FALSE(version_problem(before, before).has_value());
  // Only allow <-> unrelated: no rule change, no version problem.
  const Matrix relabelled = parse_matrix(small(R"("read": "unrelated", "write": "deny")"), "r.json");
  const MatrixDiff rd = diff_matrices(before, relabelled);
  REQUIRE(rd.cells.size() == 1);
  CHECK(diff_report(before, relabelled, rd).find("allow -> unrelated (no effect on locking)") != std::string::npos);
  CHECK_FALSE(version_problem(before, relabelled).has_value());
}
