// The matrix editor's API (tools/console/matrix_editor.hpp) over a real
// console: what the page is told equals what pathlock's matrix code says,
// the calls need no --admin but do need the console's header, they change
// nothing, and bad input is 400 with its message. The page itself is tested
// in chromium (console_editor_test.py).
#ifdef PATHLOCK_TEST_WITH_METRICS_SERVER
#include "console_server.hpp"

#include "matrix/cells.hpp"
#include "matrix/diff.hpp"
#include "matrix/model.hpp"
#include "matrix/render.hpp"
#include "matrix/scaffold.hpp"

#include <pathlock/memory.hpp>

#include <catch2/catch.hpp>
#include <httplib.h>
#include <nlohmann/json.hpp>

namespace {

using namespace pathlock;
using json = nlohmann::json;

const std::string kShipped = PATHLOCK_SOURCE_DIR "/matrix/cloud-drive.json";

struct Editor {
  std::unique_ptr<LockEngine> engine = make_memory_engine();
  std::string text = matrix::read_text_file(kShipped);
  std::unique_ptr<console::ConsoleServer> server;
  std::unique_ptr<httplib::Client> client;

  Editor() {
    console::ConsoleOptions o;
    o.namespaces = [] { return std::vector<std::string>{"default"}; };
    o.matrix_file = {kShipped, text, ""};
    server = std::make_unique<console::ConsoleServer>(*engine, o);
    client = std::make_unique<httplib::Client>("127.0.0.1", server->port());
  }
  json post(const std::string& path, const json& body, int status = 200, bool header = true) {
    const httplib::Headers h = header ? httplib::Headers{{"X-Pathlock-Console", "1"}} : httplib::Headers{};
    const auto res = client->Post(path, h, body.dump(), "application/json");
    REQUIRE(res);
    INFO(path << " -> " << res->body);
    CHECK(res->status == status);
    return json::parse(res->body);
  }
};

std::vector<std::string> texts(const json& list) {
  std::vector<std::string> out;
  for (const json& item : list) out.push_back(item["text"]);
  return out;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::size_t at = 0;
  for (std::size_t nl; (nl = text.find('\n', at)) != std::string::npos; at = nl + 1)
    if (nl > at) out.push_back(text.substr(at, nl - at));
  return out;
}

}  // namespace

TEST_CASE("matrix editor API: the loaded file, its grid, and no changes", "[console][editor]") {
  Editor e;
  const auto loaded = e.client->Get("/api/matrix/loaded");
  REQUIRE(loaded);
  CHECK(json::parse(loaded->body)["text"] == e.text);

  const json r = e.post("/api/matrix/check", {{"base", e.text}, {"edited", e.text}});
  CHECK(r["valid"] == true);
  CHECK(r["diff"][2]["text"] == "no changes to operations, roles or verdicts");
  const matrix::Matrix m = matrix::load_matrix(kShipped);
  REQUIRE(r["grid"]["ops"].size() == m.ops.size());
  CHECK(r["grid"]["ops"][2]["label"] == m.ops[2].label);
  // Every (held role, requested role, relation) verdict is the model's.
  for (std::size_t h = 0; h < m.ops.size(); ++h)
    for (std::size_t q = 0; q < m.ops.size(); ++q)
      for (std::size_t hr = 0; hr < m.ops[h].roles.size(); ++hr)
        for (std::size_t rr = 0; rr < m.ops[q].roles.size(); ++rr)
          for (std::size_t rel = 0; rel < kRelationCount; ++rel)
            REQUIRE(r["grid"]["cells"][h][q]["verdicts"][hr][rr][rel] ==
                    matrix::verdict_name(m.verdict(m.code_of(int(h), int(hr)), m.code_of(int(q), int(rr)),
                                                   static_cast<Relation>(rel))));
}

TEST_CASE("matrix editor API: cell text and legend as every rendering spells them", "[console][editor]") {
  Editor e;
  const json r = e.post("/api/matrix/check", {{"base", e.text}, {"edited", e.text}});
  const matrix::Matrix m = matrix::load_matrix(kShipped);
  const auto views = matrix::cell_views(m);
  for (std::size_t h = 0; h < m.ops.size(); ++h)
    for (std::size_t q = 0; q < m.ops.size(); ++q) {
      std::vector<std::string> want, got;
      for (const matrix::CellPiece& p : views[h][q].pieces) want.push_back(p.text);
      for (const json& p : r["grid"]["cells"][h][q]["pieces"]) got.push_back(p["text"]);
      REQUIRE(got == want);
    }
  CHECK(r["grid"]["legend"].size() == matrix::legend().size());
}

TEST_CASE("matrix editor API: long names and deep nesting are problems, not crashes", "[console][editor]") {
  Editor e;
  // A key of a megabyte is quoted in its problem line; the page still gets it, linked.
  json doc = json::parse(e.text);
  const std::string key(1 << 20, 'k');
  doc["grid"]["create"][key] = "allow";
  const json r = e.post("/api/matrix/check", {{"base", e.text}, {"edited", doc.dump()}});
  REQUIRE(r["valid"] == false);
  CHECK(r["problems"][0]["op"] == "create");
  CHECK(r["problems"][0]["cell"] == key);
  // A document nested 100,000 deep is refused before it is built.
  const std::string deep = "{\"grid\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  const json d = e.post("/api/matrix/check", {{"base", e.text}, {"edited", deep}});
  REQUIRE(d["problems"].size() == 1);
  CHECK(d["problems"][0]["text"].get<std::string>().find("nested more than 32 levels deep") != std::string::npos);
  // The file name starts every problem line: a name, not a megabyte.
  CHECK(e.post("/api/matrix/check", {{"base", e.text}, {"edited", e.text}, {"name", key}}, 400)["error"] ==
        "\"name\" must be a file name of 1 to 200 bytes on one line");
}

TEST_CASE("matrix editor API: the diff is `matrix diff`'s, linked to its cells", "[console][editor]") {
  Editor e;
  json doc = json::parse(e.text);
  doc["grid"]["create"]["upload"] = {{"target", {{"verdict", "allow"}, {"relation", {{"same", "deny"}}},
                                                 {"origin", "owner"}, {"decision", "one name, one creator"}}}};
  matrix::ScaffoldRequest add;
  add.op = "share_link";
  add.roles = {"target"};
  const std::string edited = matrix::scaffold(doc.dump(2), "edited.json", add);
  const json r = e.post("/api/matrix/check", {{"base", e.text}, {"edited", edited}});
  REQUIRE(r["valid"] == true);
  const matrix::Matrix before = matrix::parse_matrix(e.text, "loaded matrix"),
                       after = matrix::parse_matrix(edited, "edited.json");
  CHECK(texts(r["diff"]) == lines(matrix::diff_report(before, after, matrix::diff_matrices(before, after))));
  bool linked = false;
  for (const json& l : r["diff"])
    if (l["text"].get<std::string>().rfind("changed: create.target held, upload.target requested", 0) == 0)
      linked = l["op"] == "create" && l["cell"] == "upload";
  CHECK(linked);
  // Scaffold's rules are marked for review: one warning per new rule, each linked to a cell.
  CHECK(r["warnings"].size() == matrix::warnings(after).size());
  for (const json& w : r["warnings"]) CHECK((w.contains("op") && w.contains("cell")));
  CHECK(r.contains("version_problem"));  // the rules changed, "version" did not
}

TEST_CASE("matrix editor API: every problem of a bad file, linked", "[console][editor]") {
  Editor e;
  json doc = json::parse(e.text);
  doc["grid"]["delete_file"]["copy_file"] = "alow";
  doc["grid"]["upload"]["create"] = "dney";
  const json r = e.post("/api/matrix/check", {{"base", e.text}, {"edited", doc.dump()}, {"name", "mine.json"}});
  CHECK(r["valid"] == false);
  REQUIRE(r["problems"].size() == 2);
  try {
    matrix::parse_matrix(doc.dump(), "mine.json");
    FAIL("the file parsed");
  } catch (const matrix::MatrixError& err) {
    CHECK(texts(r["problems"]) == err.problems());
  }
  CHECK(r["problems"][0]["op"] == "upload");
  CHECK(r["problems"][0]["cell"] == "create");
  CHECK(e.post("/api/matrix/check", {{"base", e.text}, {"edited", "{"}})["problems"].size() == 1);
}

TEST_CASE("matrix editor API: problems linked by the parser's fields, not their text", "[console][editor]") {
  Editor e;
  json doc = json::parse(e.text);
  doc["operations"][1]["roles"][0]["role"] = "Bad";                   // upload's role: an operation's problem
  doc["grid"]["delete_file"]["copy_file"] = "alow";                   // a bare cell
  doc["grid"]["move_file"]["create"] = {{"dst", "allow"}, {"src", "alow"}};  // a held role's rule
  // The file name starts every line and reads like a location: only fields can link right.
  const std::string name = "operation 'purge', cell 'purge' held, purge.target requested.json";
  const json r = e.post("/api/matrix/check", {{"base", e.text}, {"edited", doc.dump(2)}, {"name", name}});
  REQUIRE(r["problems"].size() == 3);
  const auto at = [&](std::size_t i) {
    const json& p = r["problems"][i];
    return std::vector<std::string>{p.value("op", ""), p.value("cell", ""), p.value("role", ""), p["severity"]};
  };
  CHECK(at(0) == std::vector<std::string>{"upload", "", "Bad", "error"});
  CHECK(at(1) == std::vector<std::string>{"move_file", "create", "src", "error"});
  CHECK(at(2) == std::vector<std::string>{"delete_file", "copy_file", "", "error"});
}

TEST_CASE("matrix editor API: a one-cell edit in place changes that cell's lines only", "[console][editor]") {
  Editor e;
  const std::vector<std::string> before = lines(e.text);
  // One cell on a line shared with others, and one written over two lines.
  for (const auto& [held, requested] : std::vector<std::pair<std::string, std::string>>{
           {"create", "upload"}, {"move_file", "move_file"}}) {
    const json value = held == "create" ? json{{"target", "deny"}} : json{{"src", "deny"}, {"dst", "deny"}};
    const json r = e.post("/api/matrix/set", {{"text", e.text}, {"path", {"grid", held, requested}}, {"value", value}});
    const std::vector<std::string> after = lines(r["text"]);
    std::size_t head = 0, tail = 0;
    while (head < before.size() && head < after.size() && before[head] == after[head]) ++head;
    while (tail + head < before.size() && tail + head < after.size() &&
           before[before.size() - 1 - tail] == after[after.size() - 1 - tail])
      ++tail;
    INFO(held << " x " << requested);
    CHECK(after.size() - head - tail == 1);  // the cell, on one line
    CHECK(before.size() - head - tail == (held == "create" ? 1u : 2u));
    // The value on one line where the old one was (the key's alignment kept).
    const std::string key = "\"" + requested + "\":";
    const std::string one_line = held == "create" ? "{ \"target\": \"deny\" }" : "{ \"dst\": \"deny\", \"src\": \"deny\" }";
    CHECK(after[head].find(key) != std::string::npos);
    CHECK(after[head].find(one_line, after[head].find(key)) != std::string::npos);
    const json c = e.post("/api/matrix/check", {{"base", e.text}, {"edited", r["text"]}});
    REQUIRE(c["valid"] == true);
  }
  CHECK(e.post("/api/matrix/set", {{"text", e.text}, {"path", {"grid", "create", "nothing"}}, {"value", "deny"}}, 400)["error"] ==
        "edited.json: no grid.create.nothing");
}

TEST_CASE("matrix editor API: each cell in words and each verdict's origin", "[console][editor]") {
  Editor e;
  const json r = e.post("/api/matrix/check", {{"base", e.text}, {"edited", e.text}});
  const json& ops = r["grid"]["ops"];
  std::size_t create = 0, move_folder = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i]["name"] == "create") create = i;
    if (ops[i]["name"] == "move_folder") move_folder = i;
  }
  CHECK(r["grid"]["cells"][move_folder][create]["words"] ==
        json{"a held move_folder blocks a requested create wherever the paths overlap"});
  CHECK(r["grid"]["cells"][create][create]["words"] ==
        json{"a held create allows a requested create wherever the paths overlap"});
  CHECK(r["grid"]["cells"][create][create]["credits"][0][0][0] == json{{"origin", "grid"}, {"decision", ""}});
}

TEST_CASE("matrix editor API: scaffold and try it", "[console][editor]") {
  Editor e;
  const json s = e.post("/api/matrix/scaffold", {{"text", e.text}, {"op", "share_link"}, {"roles", {"target"}}});
  const std::string edited = s["text"];
  CHECK(matrix::parse_matrix(edited, "x").op_index("share_link") >= 0);
  // Symbols as given, one list per role; scaffold's own checks answer 400.
  const json two = e.post("/api/matrix/scaffold", {{"text", e.text}, {"op", "archive"}, {"roles", {"src", "dst"}},
                                                   {"symbols", {{"S"}, {"D", "d"}}}});
  const matrix::Matrix archived = matrix::parse_matrix(two["text"].get<std::string>(), "x");
  const auto& roles = archived.ops[static_cast<std::size_t>(archived.op_index("archive"))].roles;
  CHECK(roles[0].symbols == std::vector<std::string>{"S"});
  CHECK(roles[1].symbols == std::vector<std::string>{"D", "d"});
  CHECK(e.post("/api/matrix/scaffold", {{"text", e.text}, {"op", "archive"}, {"roles", {"src", "dst"}},
                                        {"symbols", {{"S"}}}}, 400)
            .contains("error"));
  CHECK(e.post("/api/matrix/scaffold", {{"text", e.text}, {"op", "archive"}, {"roles", {"src"}}, {"symbols", {"S"}}}, 400)
            ["error"] == "\"symbols\" must be a list with one list of symbols per role");
  CHECK(e.post("/api/matrix/scaffold", {{"text", e.text}, {"op", "create"}, {"roles", {"target"}}}, 400)["error"]
            .get<std::string>()
            .find("create") != std::string::npos);

  const json t = e.post("/api/matrix/try", {{"base", e.text},
                                            {"edited", edited},
                                            {"scenario", "alice move_folder /p/A /q\n\nbob upload /p/A/C\n"
                                                         "carol share_link /p/A\nrelease 1\nbob upload /p/A/C\n"}});
  REQUIRE(t["steps"].size() == 5);
  const json& loaded = t["loaded"]["results"];
  const json& mine = t["edited"]["results"];
  CHECK(loaded[0]["outcome"] == "granted");
  CHECK(loaded[1]["outcome"] == "refused");
  CHECK(loaded[1]["reason"].get<std::string>().find("step 1 (alice move_folder) holds src /p/A") == 0);
  CHECK(loaded[2]["outcome"] == "error");  // no share_link in the loaded matrix
  CHECK(mine[2]["outcome"] == "refused");  // scaffold's safe default: deny, under review
  CHECK(mine[2]["reason"].get<std::string>().find("review") != std::string::npos);
  CHECK(mine[3]["outcome"] == "released");
  CHECK(mine[4]["outcome"] == "granted");
  // The console's own engine took nothing.
  CHECK(e.engine->list("try").empty());
  CHECK(e.engine->list("default").empty());

  CHECK(e.post("/api/matrix/try", {{"base", e.text}, {"edited", e.text}, {"scenario", "release 1\n"}}, 400)["error"] ==
        "line 1: write \"release STEP\" with the number of an earlier step");
  CHECK(e.post("/api/matrix/try", {{"base", e.text}, {"edited", e.text}, {"scenario", "alice upload\n"}}, 400)["error"] ==
        "line 1: write \"OWNER OPERATION PATH [PATH]\"");
  const json bad_path = e.post("/api/matrix/try", {{"base", e.text}, {"edited", e.text}, {"scenario", "a upload x//y"}});
  CHECK(bad_path["edited"]["results"][0]["outcome"] == "error");
}

TEST_CASE("matrix editor page: labels in the font stack of the rendered grid", "[console][editor]") {
  Editor e;
  const auto css = e.client->Get("/app.css");
  REQUIRE(css);
  CHECK(css->body.find(std::string(matrix::kMatrixFontFamily)) != std::string::npos);
}

TEST_CASE("matrix editor API: allowed read-only, but only with the console's header", "[console][editor]") {
  Editor e;  // not --admin
  const json r = e.post("/api/matrix/check", {{"base", e.text}, {"edited", e.text}}, 403, false);
  CHECK(r["error"] == "missing header X-Pathlock-Console");
  CHECK(e.post("/api/matrix/check", {{"edited", e.text}}, 400)["error"] == "missing text field \"base\"");
  CHECK(e.post("/api/matrix/check", json::array({1}), 400)["error"] == "the request body must be a JSON object");
  // Still no force-release without --admin.
  CHECK(e.post("/api/force-release", json::object(), 403)["error"].get<std::string>().find("read-only") !=
        std::string::npos);
}

#endif
