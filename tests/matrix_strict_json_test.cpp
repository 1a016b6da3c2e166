// The strict JSON reading of matrix files (src/matrix/strict_json.hpp):
// duplicate keys refused with their locations, depth bounded, not-JSON named.
#include "matrix/strict_json.hpp"

#include <pathlock/matrix.hpp>

#include <catch2/catch.hpp>

#include <string>

using namespace pathlock::matrix;

namespace {

// The problem texts of reading `text` as file "m.json" (empty: it was read).
std::vector<std::string> problems_of(const std::string& text) {
  try {
    parse_strict_json(text, "m.json");
    return {};
  } catch (const MatrixError& e) {
    return e.problems();
  }
}

}  // namespace

TEST_CASE("strict json: a well-formed document reads as nlohmann would", "[matrix][json]") {
  const nlohmann::json doc = parse_strict_json(R"({"a": {"b": [1, {"c": 2}]}, "d": "x"})", "m.json");
  CHECK(doc["a"]["b"][1]["c"] == 2);
  CHECK(doc["d"] == "x");
}

TEST_CASE("strict json: every duplicate key is refused with where it is", "[matrix][json]") {
  CHECK(problems_of(R"({"a": 1, "a": 2})") == std::vector<std::string>{"m.json: duplicate key \"a\""});
  CHECK(problems_of(R"({"grid": {"x": {"y": 1, "y": 2}}, "ops": [{"k": 1, "k": 2}]})") ==
        std::vector<std::string>{"m.json: duplicate key \"y\" in grid.x", "m.json: duplicate key \"k\" in ops"});
  // The same key in two sibling objects is no duplicate.
  CHECK(problems_of(R"([{"k": 1}, {"k": 2}])").empty());
}

TEST_CASE("strict json: text that is not JSON, and a document nested too deep", "[matrix][json]") {
  const std::vector<std::string> bad = problems_of("{\"a\": ");
  REQUIRE(bad.size() == 1);
  CHECK(bad[0].rfind("m.json: not valid JSON: ", 0) == 0);
  const std::string deep = std::string(kMaxJsonDepth + 8, '[') + std::string(kMaxJsonDepth + 8, ']');
  CHECK(problems_of(deep) ==
        std::vector<std::string>{"m.json: nested more than 32 levels deep; a matrix file needs far fewer"});
  const std::string ok = std::string(kMaxJsonDepth - 8, '[') + std::string(kMaxJsonDepth - 8, ']');
  CHECK(problems_of(ok).empty());
}
