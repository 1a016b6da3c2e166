// `pathlock matrix ...` and `--matrix FILE` as real processes: exit status,
// stdout and stderr of the built binary.
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "matrix/emit.hpp"

namespace fs = std::filesystem;
using namespace pathlock;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void spit(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// A scratch directory and the CLI run in it with files for stdin, stdout, stderr.
class Cli {
 public:
  Cli() {
    std::string tmpl = (fs::temp_directory_path() / "pathlock-cli-XXXXXX").string();
    REQUIRE(mkdtemp(tmpl.data()));
    dir_ = tmpl;
  }
  ~Cli() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path path(const std::string& name) const { return dir_ / name; }
  // A copy of the shipped matrix, edited by `edit`.
  fs::path shipped_copy(const std::string& name, const std::function<void(std::string&)>& edit = {}) const {
    std::string text = slurp(PATHLOCK_SOURCE_DIR "/matrix/cloud-drive.json");
    if (edit) edit(text);
    spit(path(name), text);
    return path(name);
  }
  struct Result {
    int status = -1;
    std::string out, err;
  };
  Result run(const std::string& args, const std::string& input = "") const {
    spit(path("stdin"), input);
    const std::string cmd =
        fmt::format("cd '{}' && '{}' {} < stdin > stdout 2> stderr", dir_.string(), PATHLOCK_CLI, args);
    const int raw = std::system(cmd.c_str());
    Result r;
    r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128;
    r.out = slurp(path("stdout"));
    r.err = slurp(path("stderr"));
    return r;
  }

 private:
  fs::path dir_;
};

// Replaces exactly one occurrence of `from`.
void replace_once(std::string& text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  REQUIRE(text.find(from, at + 1) == std::string::npos);
  text.replace(at, from.size(), to);
}

const char* kPurgeEntry =
    R"("roles": [ { "role": "target", "symbols": ["A", "a"], "about": "the recycle-bin item purged, folder or file" } ] })";

}  // namespace

TEST_CASE("matrix lint reports every problem of the file in one run", "[matrix][cli]") {
  Cli cli;
  // An operation added to "operations" only, and a typo elsewhere: one run lists all 13 problems.
  cli.shipped_copy("m.json", [](std::string& t) {
    replace_once(t, kPurgeEntry,
                 std::string(kPurgeEntry) + ",\n    { \"op\": \"archive\", \"roles\": [ { \"role\": \"src\" } ] }");
    replace_once(t, R"("copy_file":     { "src": "allow", "dst": "deny" },)",
                 R"("copy_file":     { "src": "alow", "dst": "deny" },)");
  });
  const auto r = cli.run("matrix lint m.json");
  CHECK(r.status == 1);
  INFO(r.err);
  CHECK(count(r.err, "error: m.json: operation '") == 13);
  CHECK(count(r.err, "cell 'archive': missing cell (every cell must be given; no default)") == 11);
  CHECK(r.err.find("error: m.json: operation 'archive': no grid row (every operation needs a row)\n") !=
        std::string::npos);
  CHECK(r.err.find("error: m.json: operation 'move_file', cell 'copy_file', role 'src': unknown verdict \"alow\"") !=
        std::string::npos);
  CHECK(r.err.find("13 problems\n") != std::string::npos);
  CHECK(r.err.find("hint: `pathlock matrix scaffold") != std::string::npos);
  // The build's generator prints the same lines.
  const std::string matrixc =
      fmt::format("'{}' --json '{}' --out '{}' --namespace x --header x.hpp 2> '{}'", PATHLOCK_MATRIXC,
                  cli.path("m.json").string(), cli.path("gen").string(), cli.path("gen.err").string());
  CHECK(std::system(matrixc.c_str()) != 0);
  CHECK(count(slurp(cli.path("gen.err")), "error: ") == 13);
}

TEST_CASE("matrix scaffold adds an operation in one edit - lint passes with review warnings", "[matrix][cli]") {
  Cli cli;
  const fs::path file = cli.shipped_copy("m.json");
  const std::string before = slurp(file);
  const auto s =
      cli.run("matrix scaffold m.json --op archive --roles src,dst --label 'archive folder' --example '/A->/B'");
  INFO(s.out << s.err);
  REQUIRE(s.status == 0);
  CHECK(s.out.find("added operation 'archive'") != std::string::npos);
  const std::string after = slurp(file);
  // Nothing of the old text is lost: every old line is still there, in order.
  std::stringstream old_lines(before);
  std::size_t at = 0;
  for (std::string line; std::getline(old_lines, line);) {
    const std::string bare = line.back() == ',' ? line.substr(0, line.size() - 1) : line;
    at = after.find(bare, at);
    REQUIRE(at != std::string::npos);
  }
  const auto lint = cli.run("matrix lint m.json");
  CHECK(lint.status == 0);
  // 11 old rows get a cell: one rule per held role (15 codes); the new row: 12 cells x 2 roles.
  CHECK(count(lint.out, "    warning: m.json: ") == 15 + 12 * 2);
  CHECK(lint.out.find("operation 'archive', cell 'create', role 'src': review: new: decide archive.src held, create "
                      "requested (remove \"review\" once decided)") != std::string::npos);
  // Symbols: those of the first role of the same name (move_folder's src A, dst B), unless given.
  CHECK(s.out.find("Symbols in the grid: src A, dst B (defaults; choose them with --symbols)\n") != std::string::npos);
  CHECK(after.find(R"({ "role": "src", "symbols": ["A"] }, { "role": "dst", "symbols": ["B"] })") !=
        std::string::npos);
  const auto given = cli.run("matrix scaffold m.json --op share_link --roles target,owner --symbols A/a,O --out s.json");
  CHECK(given.status == 0);
  CHECK(given.out.find("Symbols in the grid: target A/a, owner O\n") != std::string::npos);
  CHECK(slurp(cli.path("s.json")).find(R"({ "role": "target", "symbols": ["A", "a"] }, { "role": "owner", "symbols": ["O"] })") !=
        std::string::npos);
  CHECK(cli.run("matrix lint s.json").status == 0);
  CHECK(cli.run("matrix scaffold m.json --op share_link --roles target,owner --symbols A --out s.json").err ==
        "error: m.json: scaffold 'share_link': symbols given for 1 role(s), but the operation has 2 (one entry per role, "
        "in role order, e.g. --symbols A,B)\n");
  CHECK(cli.run("matrix scaffold m.json --op share_link --roles target --symbols A/ --out s.json").err ==
        "error: m.json: scaffold 'share_link': role 'target': symbol \"\" is empty\n");
  // Safe until decided: the new operation is refused wherever it overlaps.
  const matrix::Matrix m = matrix::load_matrix(file.string());
  const int archive = m.op_index("archive");
  REQUIRE(archive == static_cast<int>(m.ops.size()) - 1);
  for (std::size_t c = 0; c < m.codes.size(); ++c)
    for (std::size_t rel = 0; rel < kRelationCount; ++rel)
      for (const int role : {0, 1}) {
        const int a = m.code_of(archive, role);
        CHECK(m.verdict(a, static_cast<int>(c), static_cast<Relation>(rel)) == matrix::Verdict::deny);
        CHECK(m.verdict(static_cast<int>(c), a, static_cast<Relation>(rel)) == matrix::Verdict::deny);
      }
  // The renderings mark the cells for review.
  const auto md = cli.run("matrix render m.json");
  CHECK(md.out.find("## Marked for review ⚑") != std::string::npos);
  // Bad requests: clear errors, the file untouched.
  const std::string scaffolded = slurp(file);
  const auto again = cli.run("matrix scaffold m.json --op archive --roles target");
  CHECK(again.status == 1);
  CHECK(again.err == "error: m.json: scaffold 'archive': the operation exists already\n");
  CHECK(cli.run("matrix scaffold m.json --op Bad --roles target").status == 1);
  CHECK(cli.run("matrix scaffold m.json --op fine --roles a,a").err ==
        "error: m.json: scaffold 'fine': role 'a' given twice\n");
  CHECK(cli.run("matrix scaffold m.json --op fine").status == 2);
  CHECK(cli.run("matrix lint m.json --colour red").err == "error: unknown option --colour for 'matrix lint'\n");
  CHECK(cli.run("matrix render m.json --format pdf").status == 2);
  CHECK(cli.run("matrix render m.json --format md --format html").err == "error: --format is given more than once\n");
  CHECK(cli.run("matrix frobnicate").status == 2);
  CHECK(slurp(file) == scaffolded);
}

TEST_CASE("matrix diff lists changed cells in words - lint --against wants a new version", "[matrix][cli]") {
  Cli cli;
  cli.shipped_copy("old.json");
  cli.shipped_copy("new.json", [](std::string& t) {
    replace_once(t, R"("rename_folder": "allow")", R"("rename_folder": "deny")");
    replace_once(t, R"("purge": { "target": "deny" })", R"("purge": { "target": "allow" })");
  });
  const auto d = cli.run("matrix diff old.json new.json");
  INFO(d.out << d.err);
  CHECK(d.status == 0);
  CHECK(d.out.find("changed: rename_file.target held, rename_folder.target requested, wherever the paths overlap: "
                   "allow -> deny (stricter)\n") != std::string::npos);
  CHECK(d.out.find("changed: purge.target held, purge.target requested, wherever the paths overlap: deny -> allow "
                   "(looser)\n") != std::string::npos);
  CHECK(d.out.find("2 changed cell line(s): 1 stricter, 1 looser") != std::string::npos);
  CHECK(d.out.find("warning: the rules changed but \"version\" is still 1.0.0") != std::string::npos);

  const auto same_version = cli.run("matrix lint new.json --against old.json");
  CHECK(same_version.status == 1);
  CHECK(same_version.err.find("error: new.json: the rules changed since old.json") == 0);
  CHECK(same_version.err.find("but \"version\" is still \"1.0.0\": bump \"version\"") != std::string::npos);
  CHECK(cli.run("matrix lint old.json --against old.json").status == 0);

  std::string bumped = slurp(cli.path("new.json"));
  replace_once(bumped, R"("version": "1.0.0")", R"("version": "1.1.0")");
  spit(cli.path("new.json"), bumped);
  const auto ok = cli.run("matrix lint new.json --against old.json");
  CHECK(ok.status == 0);
  CHECK(ok.out.find("against old.json: rules changed, version 1.0.0 -> 1.1.0") != std::string::npos);

  // Added and removed operations.
  cli.run("matrix scaffold old.json --op archive --roles target --out more.json");
  const auto added = cli.run("matrix diff old.json more.json");
  CHECK(added.out.find("added operation: archive\n") != std::string::npos);
  // Every rule naming archive.target, in words (matrix_edit_test.cpp checks which).
  const std::size_t old_codes = matrix::load_matrix(cli.path("old.json").string()).codes.size(),
                    new_rules = (old_codes + 1) * (old_codes + 1) - old_codes * old_codes;
  CHECK(count(added.out, "\nadded: ") == new_rules);
  CHECK(count(added.out, "archive.target requested, wherever the paths overlap: deny (review: ") == old_codes + 1);
  CHECK(added.out.find(fmt::format("; {} added rule line(s), 0 removed rule line(s)\n", new_rules)) !=
        std::string::npos);
  const auto removed = cli.run("matrix diff more.json old.json");
  CHECK(removed.out.find("removed operation: archive\n") != std::string::npos);
  CHECK(count(removed.out, "\nremoved: ") == new_rules);
  CHECK(removed.out.find("removed: archive.target held, create.target requested, wherever the paths overlap: was "
                         "deny\n") != std::string::npos);
  CHECK(cli.run("matrix diff old.json old.json").out.find("no changes to operations, roles or verdicts") !=
        std::string::npos);
}

TEST_CASE("matrix render --update rewrites only the generated sections", "[matrix][cli]") {
  Cli cli;
  spit(cli.path("doc.md"),
       "# Title\n\nprose\n<!-- matrix:identity -->\nstale\n<!-- /matrix:identity -->\nmore prose\n");
  const auto r = cli.run("matrix render '" PATHLOCK_SOURCE_DIR "/matrix/cloud-drive.json' --update doc.md");
  CHECK(r.status == 0);
  const std::string doc = slurp(cli.path("doc.md"));
  CHECK(doc.find("# Title\n\nprose\n<!-- matrix:identity -->\nMatrix `cloud-drive`, version ") == 0);
  CHECK(doc.find("stale") == std::string::npos);
  CHECK(doc.find("<!-- /matrix:identity -->\nmore prose\n") != std::string::npos);
  spit(cli.path("bad.md"), "<!-- matrix:colours -->\n<!-- /matrix:colours -->\n");
  const auto bad = cli.run("matrix render '" PATHLOCK_SOURCE_DIR "/matrix/cloud-drive.json' --update bad.md");
  CHECK(bad.status == 1);
  CHECK(bad.err.find("unknown generated section 'colours'") != std::string::npos);
}

TEST_CASE("shell --matrix enforces a matrix compiled at start", "[shell][runtime]") {
  Cli cli;
  const std::string refined = PATHLOCK_SOURCE_DIR "/tests/data/refined.json";
  // Without --matrix the built-in matrix has no operation "write".
  CHECK(cli.run("shell", "acquire a write /w\n").out == "{\"error\":\"unknown operation 'write'\"}\n");

  // Every (held code, requested code, relation) of refined.json, each in its
  // own subtree /cN, against the verdicts of the model.
  const matrix::Matrix m = matrix::load_matrix(refined);
  const char* rel_path[kRelationCount] = {"/h/x", "/h/x/y", "/h"};
  std::string input;
  std::vector<bool> expected;
  int n = 0;
  for (std::size_t h = 0; h < m.codes.size(); ++h)
    for (std::size_t q = 0; q < m.codes.size(); ++q)
      for (std::size_t rel = 0; rel < kRelationCount; ++rel, ++n) {
        auto paths = [&](std::size_t code, const std::string& hit, const char* other) {
          const matrix::OpDef& op = m.ops[static_cast<std::size_t>(m.codes[code].op)];
          std::string out = op.name;
          for (std::size_t r = 0; r < op.roles.size(); ++r)
            out += fmt::format(" /c{}{}", n,
                               static_cast<int>(r) == m.codes[code].role ? hit : std::string(other) + op.roles[r].name);
          return out;
        };
        input += "acquire holder " + paths(h, "/h/x", "/held_other/") + "\n";
        input += "acquire requester " + paths(q, rel_path[rel], "/req_other/") + "\n";
        expected.push_back(m.verdict(static_cast<int>(h), static_cast<int>(q), static_cast<Relation>(rel)) !=
                           matrix::Verdict::deny);
      }
  const auto r = cli.run(fmt::format("shell --backend memory --matrix '{}' --namespace refined", refined), input);
  REQUIRE(r.status == 0);
  std::stringstream lines(r.out);
  std::size_t refused = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    std::string held, requested;
    REQUIRE(std::getline(lines, held));
    REQUIRE(std::getline(lines, requested));
    INFO("case " << i << ": " << held << " / " << requested);
    CHECK(nlohmann::json::parse(held)["granted"] == true);
    CHECK(nlohmann::json::parse(requested)["granted"] == expected[i]);
    refused += !expected[i];
  }
  CHECK(refused > 0);
  CHECK(refused < expected.size());

  // The refinements by hand: a write inside a held write is fine, on it is not;
  // a scan refuses writes inside it but not above it.
  const auto by_hand = cli.run(fmt::format("shell --matrix '{}'", refined),
                               "acquire a write /w\nacquire b write /w/inner\nacquire c write /w\n"
                               "acquire a scan /s\nacquire b write /s/in\nacquire c write /\n");
  std::stringstream hand(by_hand.out);
  std::vector<bool> granted;
  for (std::string l; std::getline(hand, l);) granted.push_back(nlohmann::json::parse(l)["granted"].get<bool>());
  CHECK(granted == std::vector<bool>{true, true, false, true, false, true});
}

TEST_CASE("a bad matrix file given with --matrix stops the shell before it reads input", "[shell][runtime]") {
  Cli cli;
  spit(cli.path("bad.json"),
       R"({ "name": "x", "version": "1", "operations": [ { "op": "a", "roles": [ { "role": "t" } ] } ], "grid": {} })");
  const auto r = cli.run("shell --matrix bad.json", "acquire a a /x\n");
  CHECK(r.status == 1);
  CHECK(r.out.empty());
  CHECK(r.err == "error: bad.json: operation 'a': no grid row (every operation needs a row)\n");
  CHECK(cli.run("shell --matrix missing.json").err == "error: missing.json: cannot open\n");
  // The demo needs the operations of its story.
  const auto demo = cli.run("demo --matrix '" PATHLOCK_SOURCE_DIR "/tests/data/refined.json'");
  CHECK(demo.status == 1);
  CHECK(demo.err == "error: the demo needs operation 'upload' with role 'target'; matrix 'refined-test' has none\n");
}

TEST_CASE("demo --matrix plays the story under other rules", "[demo][runtime]") {
  Cli cli;
  // Allow uploads inside a folder that is being moved.
  cli.shipped_copy("m.json", [](std::string& t) {
    replace_once(t, R"("upload":        { "src": "deny",  "dst": "deny" },)",
                 R"("upload":        { "src": "allow", "dst": "deny" },)");
  });
  const auto shipped = cli.run("demo");
  const auto changed = cli.run("demo --matrix m.json");
  REQUIRE(shipped.status == 0);
  REQUIRE(changed.status == 0);
  const std::string erin = "erin   upload /p/A/C/D                        ";
  CHECK(shipped.out.find(erin + "REFUSED  alice's move_folder holds src /p/A/C") != std::string::npos);
  CHECK(changed.out.find(erin + "GRANTED") != std::string::npos);
}

TEST_CASE("pathlock-matrixc writes the Lua library alone, to a bare file name", "[matrix][cli]") {
  Cli cli;
  const std::string matrixc = PATHLOCK_MATRIXC, shipped = PATHLOCK_SOURCE_DIR "/matrix/cloud-drive.json";
  auto run = [&](const std::string& args) {
    return std::system(fmt::format("cd '{}' && '{}' {} 2> stderr", cli.path("").string(), matrixc, args).c_str());
  };
  // Only --json and --lua: no C++ options needed, and the file lands in the working directory.
  REQUIRE(run("--json '" + shipped + "' --lua new_library.lua") == 0);
  const std::string lua = slurp(cli.path("new_library.lua"));
  CHECK(lua.find("#!lua name=") == 0);
  CHECK(lua.find("PL_") != std::string::npos);
  CHECK(!fs::exists(cli.path("include")));  // no C++ outputs
  // The same text as the build's library of the shipped matrix.
  CHECK(lua == slurp(PATHLOCK_SHIPPED_LIBRARY));
  // A folder that cannot be made is blamed on the output, not on the input.
  spit(cli.path("file"), "x");
  CHECK(WEXITSTATUS(run("--json '" + shipped + "' --lua file/sub/x.lua")) == 1);
  const std::string err = slurp(cli.path("stderr"));
  CHECK(err.rfind("error: file/sub/x.lua: cannot create its folder", 0) == 0);
  CHECK(err.find("cloud-drive.json") == std::string::npos);
}

TEST_CASE("pathlock-matrixc refuses operation and code names that are C++ keywords", "[matrix][cli]") {
  Cli cli;
  // Valid for the runtime and lint (JSON names only), but Op::delete and
  // Code::co_await would not compile: matrixc names both and writes no header.
  const std::string bad = R"({"name": "keywords", "version": "1",
    "operations": [{"op": "delete", "roles": [{"role": "target"}]}, {"op": "co", "roles": [{"role": "await"}]}],
    "grid": {"delete": {"delete": "deny", "co": "allow"}, "co": {"delete": "allow", "co": "deny"}}})";
  std::string good = bad;
  for (auto at = good.find(R"("delete")"); at != std::string::npos; at = good.find(R"("delete")", at))
    good.replace(at, 8, R"("delete_item")");
  replace_once(good, R"("role": "await")", R"("role": "waiter")");
  spit(cli.path("bad.json"), bad);
  spit(cli.path("good.json"), good);
  auto matrixc = [&](const std::string& json, const std::string& out) {
    const std::string cmd = fmt::format("'{}' --json '{}' --out '{}' --namespace x --header x.hpp 2> '{}'",
                                        PATHLOCK_MATRIXC, cli.path(json).string(), cli.path(out).string(),
                                        cli.path(out + ".err").string());
    const int raw = std::system(cmd.c_str());
    return WIFEXITED(raw) ? WEXITSTATUS(raw) : 128;
  };
  CHECK(matrixc("bad.json", "bad") == 1);
  const std::string err = slurp(cli.path("bad.err"));
  INFO(err);
  CHECK(count(err, "error: ") == 2);
  CHECK(err.find("error: " + cli.path("bad.json").string() +
                 ": operation 'delete': the name is a C++ keyword or predefined macro, and pathlock-matrixc makes "
                 "every operation name an enumerator of Op") != std::string::npos);
  CHECK(err.find("operation 'co' role 'await': the code name 'co_await' is a C++ keyword") != std::string::npos);
  CHECK(!fs::exists(cli.path("bad/include/x.hpp")));
  // lint accepts the file and warns that the generator would refuse it.
  const auto lint = cli.run("matrix lint bad.json");
  CHECK(lint.status == 0);
  CHECK(count(lint.out, "warning: pathlock-matrixc refuses it: bad.json: operation '") == 2);
  // Renamed, the same grid compiles.
  CHECK(matrixc("good.json", "good") == 0);
  const std::string header = slurp(cli.path("good/include/x.hpp"));
  CHECK(header.find("  delete_item = 0,\n") != std::string::npos);
  CHECK(header.find("  co_waiter = 1,\n") != std::string::npos);
}
