// The run-time compiler (src/matrix/table.hpp) against the build-time
// generator: the same JSON gives the same table, field for field, and the
// same problems.
#include <catch2/catch.hpp>
#include <pathlock/pathlock.hpp>

#include "matrix/emit.hpp"
#include "refined_matrix.hpp"

using namespace pathlock;

namespace {

// CHECKs that `a` and `b` agree on each of `fields` (pointers to members).
template <class T, class... Field>
void check_same_fields(const T& a, const T& b, Field T::*... fields) {
  const auto same = [&](auto field) { CHECK(a.*field == b.*field); };
  (same(fields), ...);
}

// Every field of two tables.
void check_same_table(const MatrixTable& runtime, const MatrixTable& built) {
  check_same_fields(runtime, built, &MatrixTable::name, &MatrixTable::version, &MatrixTable::fingerprint,
                    &MatrixTable::blockers);
  REQUIRE(runtime.op_count == built.op_count);
  for (std::size_t o = 0; o < kMaxOps; ++o) {
    INFO("op " << o);
    check_same_fields(runtime.ops[o], built.ops[o], &OpInfo::name, &OpInfo::label, &OpInfo::first_code,
                      &OpInfo::role_count, &OpInfo::roles, &OpInfo::not_inside_count, &OpInfo::not_inside);
  }
  REQUIRE(runtime.code_count == built.code_count);
  for (std::size_t c = 0; c < kMaxCodes; ++c) {
    INFO("code " << c);
    check_same_fields(runtime.codes[c], built.codes[c], &CodeInfo::op, &CodeInfo::role);
  }
}

}  // namespace

TEST_CASE("a table compiled at run time equals the build-time table of the same JSON", "[matrix][runtime]") {
  SECTION("refined.json, every refinement of the format") {
    const auto compiled = matrix::compile_matrix_file(PATHLOCK_SOURCE_DIR "/tests/data/refined.json");
    check_same_table(compiled->table(), test_matrices::refined::kMatrix);
  }
  SECTION("the shipped matrix") {
    const auto compiled = matrix::compile_matrix_file(PATHLOCK_SOURCE_DIR "/matrix/cloud-drive.json");
    check_same_table(compiled->table(), default_matrix());
  }
}

TEST_CASE("the run-time table outlives the text it was compiled from", "[matrix][runtime]") {
  std::unique_ptr<matrix::CompiledMatrix> compiled;
  {
    std::string text =
        R"({ "name": "tiny", "version": "7", "operations": [ { "op": "edit", "roles": [ { "role": "target" } ] } ],
                            "grid": { "edit": { "edit": "deny" } } })";
    compiled = matrix::compile_matrix(text, "tiny.json");
    text.assign(text.size(), 'x');
  }
  const MatrixTable& t = compiled->table();
  CHECK(t.name == "tiny");
  CHECK(t.version == "7");
  CHECK(t.ops[0].name == "edit");
  CHECK(t.ops[0].roles[0] == "target");
  CHECK(t.refuses(Relation::same, 0, 0));
  // An engine enforces it.
  MemoryOptions opts;
  opts.matrix = &t;
  auto engine = make_memory_engine(opts);
  const AcquireResult first = engine->acquire(LockRequest{"ns", "a", "edit", {{"target", "/d"}}});
  REQUIRE(first.granted());
  CHECK_FALSE(engine->acquire(LockRequest{"ns", "b", "edit", {{"target", "/d/x"}}}).granted());
  CHECK_THROWS_AS(engine->acquire(LockRequest{"ns", "b", "upload", {{"target", "/d"}}}), InvalidRequest);
}

TEST_CASE("the run-time compiler reports the generator's problems", "[matrix][runtime]") {
  const std::string bad =
      R"({ "name": "tiny", "version": "7", "operations": [ { "op": "edit", "roles": [ { "role": "target" } ] } ],
                               "grid": { "edit": { "edit": "dney" } } })";
  try {
    (void)matrix::compile_matrix(bad, "tiny.json");
    FAIL("no error");
  } catch (const matrix::MatrixError& e) {
    CHECK(e.problems() ==
          std::vector<std::string>{"tiny.json: operation 'edit', cell 'edit': unknown verdict \"dney\" (use \"allow\", "
                                   "\"deny\" or \"unrelated\")"});
  }
  CHECK_THROWS_AS(matrix::compile_matrix_file("/nonexistent/m.json"), matrix::MatrixError);
}
