// The values the PostgreSQL backend sends to its functions and reads back
// (src/postgres/values.hpp), without a server: quoting of array literals,
// chr(1)-joined fields, relations, and the request's matrix arguments.
#include "postgres/values.hpp"

#include <pathlock/engine.hpp>

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <cstdint>

using namespace pathlock;

TEST_CASE("postgres values: array literals quote every item and escape quotes and backslashes", "[postgres][values]") {
  CHECK(postgres::array_literal({}) == "{}");
  CHECK(postgres::array_literal({"a"}) == "{\"a\"}");
  CHECK(postgres::array_literal({"/p/My Documents", "x,y"}) == "{\"/p/My Documents\",\"x,y\"}");
  CHECK(postgres::array_literal({"say \"hi\"", "a\\b", "{}"}) == "{\"say \\\"hi\\\"\",\"a\\\\b\",\"{}\"}");
}

TEST_CASE("postgres values: chr(1)-joined fields split into targets, empty fields kept", "[postgres][values]") {
  CHECK(postgres::split_fields("") == std::vector<std::string>{""});
  CHECK(postgres::split_fields("a\1\1b") == std::vector<std::string>{"a", "", "b"});
  const std::vector<Target> t = postgres::targets_of("src\1dst", "/p/A\1/q/B");
  REQUIRE(t.size() == 2);
  CHECK((t[0].role == "src" && t[0].path == "/p/A" && t[1].role == "dst" && t[1].path == "/q/B"));
  CHECK(postgres::targets_of("src\1dst", "/p/A").size() == 1);  // a short field never reads past its end
}

TEST_CASE("postgres values: relation numbers as the functions write them", "[postgres][values]") {
  CHECK(postgres::relation_of(0) == Relation::same);
  CHECK(postgres::relation_of(1) == Relation::held_ancestor);
  CHECK(postgres::relation_of(2) == Relation::held_descendant);
}

TEST_CASE("postgres values: a request's roles, codes and masks come from the matrix", "[postgres][values]") {
  const MatrixTable& m = default_matrix();
  const core::ResolvedRequest req =
      core::resolve_request(m, LockRequest{"ns", "o", "move_folder", {{"src", "/p/A"}, {"dst", "/q/B"}}});
  const postgres::MatrixArgs args = postgres::matrix_args(m, req);
  CHECK(args.roles == "{\"src\",\"dst\"}");
  CHECK(args.codes == fmt::format("{{\"{}\",\"{}\"}}", m.code_of(m.op_index("move_folder"), "src"),
                                  m.code_of(m.op_index("move_folder"), "dst")));
  // Per target, per relation (same, held_ancestor, held_descendant): bit c
  // set exactly where a held code c refuses that target (MatrixTable::refuses).
  std::vector<std::string> masks;
  const std::string inner = args.masks.substr(1, args.masks.size() - 2);
  for (std::size_t at = 0; at < inner.size();) {
    const std::size_t end = std::min(inner.find(',', at), inner.size());
    masks.push_back(inner.substr(at + 1, end - at - 2));  // without the quotes
    at = end + 1;
  }
  REQUIRE(masks.size() == 6);
  for (std::size_t k = 0; k < req.targets.size(); ++k)
    for (std::size_t rel = 0; rel < kRelationCount; ++rel) {
      const auto mask = static_cast<std::uint64_t>(std::stoll(masks[k * kRelationCount + rel]));
      for (int held = 0; held < m.code_count; ++held)
        CHECK(((mask >> held) & 1u) == m.refuses(static_cast<Relation>(rel), held, req.targets[k].code));
    }
  CHECK(postgres::paths_literal(req) == "{\"/p/A\",\"/q/B\"}");
}
