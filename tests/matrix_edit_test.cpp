// The tools a matrix owner edits with, in process: `matrix diff` on added
// and removed operations and roles (every rule in words), and what
// `matrix scaffold` writes. The CLI around them: matrix_cli_test.cpp.
#include "matrix/emit.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

using namespace pathlock;
using namespace pathlock::matrix;

namespace {

std::string shipped_text() {
  std::ifstream in(PATHLOCK_SOURCE_DIR "/matrix/cloud-drive.json", std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

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
