// matrix/matrix.schema.json and the parser (src/matrix/parse.cpp) describe
// one format twice: every matrix in the tree must satisfy both, and a few
// invalid documents must be refused by both (the parser with its own
// messages). Validated with valijson (Debian libvalijson-dev, tests only).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>

#include "matrix/model.hpp"

namespace fs = std::filesystem;
using namespace pathlock;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  REQUIRE(in);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class MatrixSchema {
 public:
  MatrixSchema() : doc_(nlohmann::json::parse(slurp(PATHLOCK_SOURCE_DIR "/matrix/matrix.schema.json"))) {
    valijson::SchemaParser parser;
    valijson::adapters::NlohmannJsonAdapter adapter(doc_);
    parser.populateSchema(adapter, schema_);
  }
  // "" when `doc` is valid, else the schema's complaints, one per line.
  std::string problems(const nlohmann::json& doc) const {
    valijson::Validator validator;
    valijson::ValidationResults results;
    valijson::adapters::NlohmannJsonAdapter target(doc);
    if (validator.validate(schema_, target, &results)) return "";
    std::string out;
    valijson::ValidationResults::Error e;
    while (results.popError(e)) {
      std::string where;
      for (const std::string& c : e.context) where += c;
      out += where + ": " + e.description + "\n";
    }
    return out;
  }

 private:
  nlohmann::json doc_;
  valijson::Schema schema_;
};

// The parser's problems ("" when it accepts the text).
std::string parser_problems(const std::string& text) {
  try {
    matrix::parse_matrix(text, "m.json");
  } catch (const matrix::MatrixError& e) {
    std::string out;
    for (const std::string& p : e.problems()) out += p + "\n";
    return out;
  }
  return "";
}

}  // namespace

TEST_CASE("schema: every matrix in the tree satisfies the schema and the parser", "[matrix][schema]") {
  const MatrixSchema schema;
  std::vector<fs::path> files;
  for (const char* dir : {"matrix", "tests/data", "tests/consumer"})
    for (const auto& e : fs::directory_iterator(fs::path(PATHLOCK_SOURCE_DIR) / dir))
      if (e.path().extension() == ".json" && e.path().filename() != "matrix.schema.json") files.push_back(e.path());
  CHECK(files.size() >= 3);  // cloud-drive.json, refined.json, rules.json at least
  for (const fs::path& f : files) {
    INFO(f.string());
    const std::string text = slurp(f);
    CHECK(schema.problems(nlohmann::json::parse(text)) == "");
    CHECK(parser_problems(text) == "");
  }
}

TEST_CASE("schema: invalid documents are refused by the schema and by the parser", "[matrix][schema]") {
  const MatrixSchema schema;
  const nlohmann::json shipped = nlohmann::json::parse(slurp(PATHLOCK_SOURCE_DIR "/matrix/cloud-drive.json"));
  struct Case {
    std::string what;
    std::function<void(nlohmann::json&)> edit;
    std::string parser_says;  // a part of the parser's own message
  };
  const std::vector<Case> cases{
      {"a misspelt verdict", [](nlohmann::json& m) { m["grid"]["create"]["create"] = "alow"; },
       "unknown verdict \"alow\""},
      {"an unknown top-level key", [](nlohmann::json& m) { m["colour"] = "red"; }, "colour"},
      {"a name with capitals and a space", [](nlohmann::json& m) { m["name"] = "Cloud Drive"; }, "Cloud Drive"},
      {"no grid", [](nlohmann::json& m) { m.erase("grid"); }, "grid"},
      {"an operation without roles", [](nlohmann::json& m) { m["operations"][0]["roles"] = nlohmann::json::array(); },
       "role"},
      {"an unknown origin", [](nlohmann::json& m) { m["origin"] = "folklore"; }, "folklore"},
      {"an empty symbol", [](nlohmann::json& m) { m["operations"][0]["roles"][0]["symbols"] = {""}; },
       "symbol \"\" is empty"},
      {"a symbol of 9 characters",
       [](nlohmann::json& m) { m["operations"][0]["roles"][0]["symbols"] = {"文件夹文件夹文件夹"}; },
       "is longer than 8 characters"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    nlohmann::json doc = shipped;
    c.edit(doc);
    const std::string from_schema = schema.problems(doc), from_parser = parser_problems(doc.dump(2));
    INFO("schema: " << from_schema << "parser: " << from_parser);
    CHECK(from_schema != "");
    CHECK(from_parser.find(c.parser_says) != std::string::npos);
  }
}
