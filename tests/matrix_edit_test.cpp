// The tools a matrix owner edits with, in process: `matrix diff` on added
// and removed operations and roles (every rule in words), and what
// `matrix scaffold` writes. The CLI around them: matrix_cli_test.cpp.
#include "matrix/emit.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <set>
#include <tuple>

using namespace pathlock;
using namespace pathlock::matrix;

namespace {

std::string shipped_text() { return read_text_file(PATHLOCK_SOURCE_DIR "/matrix/cloud-drive.json"); }

// (held, requested, verdict): one line of the diff for the relations giving that verdict.
using Line = std::tuple<std::string, std::string, Verdict>;

// What the diff must list, worked out from `m` alone: every (held, requested)
// pair of codes where either code is absent from `other`, once per distinct
// verdict over the relations.
std::set<Line> expected_lines(const Matrix& m, const Matrix& other) {
  std::set<std::string> other_codes;
  for (std::size_t c = 0; c < other.codes.size(); ++c) other_codes.insert(other.code_name(static_cast<int>(c)));
  std::set<Line> out;
  for (std::size_t h = 0; h < m.codes.size(); ++h)
    for (std::size_t r = 0; r < m.codes.size(); ++r) {
      const std::string held = m.code_name(static_cast<int>(h)), req = m.code_name(static_cast<int>(r));
      if (other_codes.count(held) && other_codes.count(req)) continue;
      for (std::size_t rel = 0; rel < kRelationCount; ++rel)
        out.insert({held, req, m.verdict(static_cast<int>(h), static_cast<int>(r), static_cast<Relation>(rel))});
    }
  return out;
}

std::set<Line> listed(const std::vector<RuleLine>& lines) {
  std::set<Line> out;
  for (const RuleLine& l : lines) out.insert({l.held, l.requested, l.verdict});
  return out;
}

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("matrix diff lists every rule of an added or removed operation in words", "[matrix][diff]") {
  const std::string text = shipped_text();
  const Matrix before = parse_matrix(text, "old.json");
  const Matrix after = parse_matrix(
      scaffold(text, "new.json", ScaffoldRequest{"share_link", {"target"}, "分享 share", "/A"}), "new.json");
  const MatrixDiff d = diff_matrices(before, after);
  CHECK(d.added_ops == std::vector<std::string>{"share_link"});
  CHECK(d.cells.empty());
  CHECK(d.removed_rules.empty());

  const std::set<Line> want = expected_lines(after, before);
  CHECK(want.size() == after.codes.size() * after.codes.size() - before.codes.size() * before.codes.size());
  CHECK(d.added_rules.size() == want.size());
  CHECK(listed(d.added_rules) == want);
  const std::string report = diff_report(before, after, d);
  CHECK(count(report, "\nadded: ") == want.size());
  std::size_t self = 0;
  for (const RuleLine& l : d.added_rules) {
    INFO(added_rule_text(l));
    CHECK((l.held.rfind("share_link.", 0) == 0 || l.requested.rfind("share_link.", 0) == 0));
    self += l.held == "share_link.target" && l.requested == "share_link.target";
    // scaffold's rules: deny, owner's, still to review; all three relations on one line.
    CHECK(l.verdict == Verdict::deny);
    CHECK(l.origin == Origin::owner);
    CHECK(l.relations.size() == kRelationCount);
    CHECK_FALSE(l.review.empty());
    CHECK(report.find(added_rule_text(l) + "\n") != std::string::npos);
  }
  CHECK(self == 1);  // the new operation against itself
  CHECK(report.find("added: share_link.target held, create.target requested, wherever the paths overlap: deny "
                    "(review: new: decide share_link.target held, create requested)\n") != std::string::npos);
  CHECK(report.find("added: move_file.src held, share_link.target requested, wherever the paths overlap: deny") !=
        std::string::npos);
  // The summary keeps its words and counts the rules.
  CHECK(report.find(fmt::format("1 operation(s) added, 0 removed; 0 changed cell line(s): 0 stricter, 0 looser; {} "
                                "added rule line(s), 0 removed rule line(s)\n",
                                want.size())) != std::string::npos);

  // The other way round: the same rules, removed.
  const MatrixDiff back = diff_matrices(after, before);
  CHECK(back.removed_ops == std::vector<std::string>{"share_link"});
  CHECK(back.added_rules.empty());
  CHECK(listed(back.removed_rules) == expected_lines(after, before));
  const std::string back_report = diff_report(after, before, back);
  CHECK(count(back_report, "\nremoved: ") == want.size());
  CHECK(back_report.find("removed: share_link.target held, share_link.target requested, wherever the paths overlap: "
                         "was deny\n") != std::string::npos);
  // lint --against counts them too.
  const auto problem = version_problem(before, after);
  REQUIRE(problem.has_value());
  CHECK(problem->find(fmt::format("1 operation(s) added, 0 removed, 0 changed cell line(s), {} added rule line(s), 0 "
                                  "removed rule line(s)) but \"version\" is still \"1.0.0\"",
                                  want.size())) != std::string::npos);
}

TEST_CASE("matrix diff lists the rules of an added role by relation, with their verdicts", "[matrix][diff]") {
  // `read` gains a role: its bare row applies to it, and the `write` row's cell for `read` names write's roles.
  constexpr const char* kText = R"({{ "name": "small", "version": "1",
    "operations": [ {{ "op": "read", "roles": [ {} ] }},
                    {{ "op": "write", "roles": [ {{ "role": "src" }}, {{ "role": "dst" }} ] }} ],
    "grid": {{ "read": {{ "read": {}, "write": "deny" }},
              "write": {{ "read": {{ "src": "deny", "dst": "allow" }}, "write": "deny" }} }} }})";
  const Matrix before = parse_matrix(fmt::format(kText, R"({ "role": "target" })", R"("allow")"), "old.json");
  const Matrix after =
      parse_matrix(fmt::format(kText, R"({ "role": "target" }, { "role": "extra" })",
                               R"({ "target": { "verdict": "allow", "relation": { "same": "deny" } },
                                    "extra": { "verdict": "allow", "relation": { "same": "deny" } } })"),
                   "new.json");
  const MatrixDiff d = diff_matrices(before, after);
  CHECK(d.added_roles == std::vector<std::string>{"read.extra"});
  CHECK(d.added_ops.empty());
  const std::set<Line> want = expected_lines(after, before);
  CHECK(listed(d.added_rules) == want);
  CHECK(d.added_rules.size() == want.size());
  const std::string report = diff_report(before, after, d);
  CHECK(report.find("added: read.extra held, read.extra requested, on the same path: deny\n") != std::string::npos);
  CHECK(report.find("added: read.extra held, read.extra requested, requested inside the held path, requested on an "
                    "ancestor of the held path: allow\n") != std::string::npos);
  CHECK(report.find("added: write.dst held, read.extra requested, wherever the paths overlap: allow\n") !=
        std::string::npos);
  // read.target against read.target changed on the same path: a changed line, not an added one.
  CHECK(report.find("changed: read.target held, read.target requested, on the same path: allow -> deny (stricter)\n") !=
        std::string::npos);
  const auto problem = version_problem(before, after);
  REQUIRE(problem.has_value());
  CHECK(problem->find(fmt::format("0 operation(s) added, 0 removed, 1 changed cell line(s), {} added rule line(s)",
                                  d.added_rules.size())) != std::string::npos);
}

TEST_CASE("matrix scaffold writes each role's symbols: given, or those of a role of the same name", "[matrix][scaffold]") {
  const std::string text = shipped_text();
  const Matrix shipped = parse_matrix(text, "m.json");
  auto symbols_of = [](const Matrix& m, const std::string& op) {
    std::vector<std::vector<std::string>> out;
    for (const RoleDef& r : m.ops[static_cast<std::size_t>(m.op_index(op))].roles) out.push_back(r.symbols);
    return out;
  };
  using Symbols = std::vector<std::vector<std::string>>;
  // Defaults: the first operation with a role of that name, else the name's first letter.
  CHECK(default_symbols(shipped, "target") == std::vector<std::string>{"A"});
  CHECK(default_symbols(shipped, "src") == std::vector<std::string>{"A"});
  CHECK(default_symbols(shipped, "dst") == std::vector<std::string>{"B"});
  CHECK(default_symbols(shipped, "owner") == std::vector<std::string>{"O"});
  const std::string defaulted = scaffold(text, "m.json", ScaffoldRequest{"share_link", {"target", "owner"}, "", ""});
  const Matrix d = parse_matrix(defaulted, "m.json");
  CHECK(symbols_of(d, "share_link") == Symbols{{"A"}, {"O"}});
  CHECK(lint_report(d).find("is valid") != std::string::npos);
  // The new row is spelled with them, like the rows around it.
  CHECK(original_label(d, d.op_index("share_link"), 0).empty());
  CHECK(cell_parts(d, d.op_index("share_link"), 0).at(0).label == "A×");
  CHECK(cell_parts(d, d.op_index("share_link"), 0).at(1).label == "O×");

  // Given: one entry per role, several symbols of one role.
  ScaffoldRequest req{"archive", {"src", "dst"}, "归档 archive", "/A->/B", {{"A", "a"}, {"归"}}};
  const Matrix given = parse_matrix(scaffold(text, "m.json", req), "m.json");
  CHECK(symbols_of(given, "archive") == Symbols{{"A", "a"}, {"归"}});
  CHECK(cell_parts(given, given.op_index("archive"), 0).at(0).label == "A×a×");
  CHECK(warnings(given).size() == 15 + 12 * 2);

  // Checked like the parser checks a file's symbols.
  auto refused = [&](Symbols symbols) {
    ScaffoldRequest bad{"archive", {"src", "dst"}, "", "", std::move(symbols)};
    try {
      (void)scaffold(text, "m.json", bad);
    } catch (const MatrixError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(refused({{"A"}}) == "m.json: scaffold 'archive': symbols given for 1 role(s), but the operation has 2 (one "
                            "entry per role, in role order, e.g. --symbols A,B)");
  CHECK(refused({{"A"}, {"B"}, {"C"}}).find("symbols given for 3 role(s)") != std::string::npos);
  CHECK(refused({{"A"}, {}}) == "m.json: scaffold 'archive': role 'dst': no symbol given");
  CHECK(refused({{"A"}, {""}}) == "m.json: scaffold 'archive': role 'dst': symbol \"\" is empty");
  CHECK(refused({{"ABCDEFGHI"}, {"B"}}) ==
        "m.json: scaffold 'archive': role 'src': symbol 'ABCDEFGHI' is longer than 8 characters");
  CHECK(refused({{"文件夹文件夹文件"}, {"B"}}) == "accepted");  // 8 characters, 24 bytes
  CHECK(refused({{std::string("\xff")}, {"B"}}).find("is not valid UTF-8") != std::string::npos);
  CHECK(refused({{"A\nB"}, {"B"}}).find("holds a control character") != std::string::npos);  // would break a table row
}

// The issue's papercut: a hand edit that replaces scaffold's objects (or a
// shipped cell) with a plain verdict credits the rule to the original grid,
// the shipped file's default origin. The diff says so, per pair; a rule
// written as the owner's is not named.
TEST_CASE("matrix diff warns of changed or added rules credited to the original grid", "[matrix][diff]") {
  const std::string text = shipped_text();
  const Matrix before = parse_matrix(text, "old.json");
  std::string edited = scaffold(text, "new.json", ScaffoldRequest{"share_link", {"target"}, "", ""});
  nlohmann::json doc = nlohmann::json::parse(edited);
  doc["grid"]["share_link"]["create"] = "allow";                     // plain: origin "grid" by default
  doc["grid"]["create"]["upload"] = {{"target", {{"verdict", "deny"}, {"origin", "owner"}}}};  // the owner's
  doc["grid"]["upload"]["create"] = "deny";                          // a shipped cell made plain and changed
  const Matrix after = parse_matrix(doc.dump(), "new.json");
  const MatrixDiff d = diff_matrices(before, after);
  CHECK(d.credited_to_grid ==
        std::vector<std::string>{"upload.target held, create.target requested", "share_link.target held, create.target requested"});
  const std::string report = diff_report(before, after, d);
  CHECK(report.find("warning: share_link.target held, create.target requested: changed or added, but credited to the "
                    "original grid") != std::string::npos);
  CHECK(report.find("warning: create.target held, upload.target requested") == std::string::npos);
  // Scaffold's own rules are the owner's: nothing to warn of.
  CHECK(diff_matrices(before, parse_matrix(edited, "new.json")).credited_to_grid.empty());
}
