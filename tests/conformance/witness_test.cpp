// The conflicting lock a refusal names (docs/design.md, "The conflicting lock
// a refusal names"), pinned on small hand-built cases, for every backend:
//   1. held_ancestor: strict ancestors from the root down; at the first one
//      holding a blocking code, the lowest code, then the highest fence;
//   2. same: the lowest blocking code at the path, then the highest fence;
//   3. held_descendant: the path below that is smallest in component-wise
//      order ("/a/b/c" < "/a/b!": a folder sorts before everything inside
//      it), then the lowest code, then the highest fence.
// The cases are built so that byte order, depth or grant order would name
// another lock.
#include "conformance/fixture.hpp"

using namespace pathlock;
using namespace std::chrono_literals;

namespace {

using test::Fixture;

// Code order of the shipped matrix: create's target before upload's.
int code_of(const Fixture& f, const char* op) { return f.engine->matrix().code_of(f.engine->matrix().op_index(op), "target"); }

// `r` is a refusal naming the lock granted by `witness`, held at `path`,
// which stands in `relation` to the refused target.
void check_names(const AcquireResult& r, const AcquireResult& witness, Relation relation, const std::string& path) {
  REQUIRE_FALSE(r.granted());
  CHECK(r.conflict.relation == relation);
  CHECK(r.conflict.id == witness.grant.id);
  CHECK(r.conflict.path == path);
}

}  // namespace

TEST_CASE("witness below: component order, not byte order", "[conformance][witness]") {
  Fixture f;
  const auto bang = f.one("x", "upload", "/a/b!");      // "/a/b!" < "/a/b/c" byte by byte
  const auto deep = f.one("y", "upload", "/a/b/c");
  REQUIRE(bang.granted());
  REQUIRE(deep.granted());
  const auto r = f.one("d", "delete_folder", "/a");
  check_names(r, deep, Relation::held_descendant, "/a/b/c");
}

TEST_CASE("witness below: a deeper, smaller-named path beats a shallower, larger-named one", "[conformance][witness]") {
  Fixture f;
  const auto shallow = f.one("x", "upload", "/a/z");
  const auto deep = f.one("y", "upload", "/a/c/d/e");
  REQUIRE(shallow.granted());
  REQUIRE(deep.granted());
  const auto r = f.one("d", "delete_folder", "/a");
  check_names(r, deep, Relation::held_descendant, "/a/c/d/e");
  // A folder sorts before its own contents.
  const auto folder = f.one("z", "upload", "/a/c");
  REQUIRE(folder.granted());
  const auto again = f.one("d", "delete_folder", "/a");
  REQUIRE_FALSE(again.granted());
  CHECK(again.conflict.id == folder.grant.id);
}

TEST_CASE("witness at one path: the lowest code, then the highest fence", "[conformance][witness]") {
  Fixture f;
  REQUIRE(code_of(f, "create") < code_of(f, "upload"));
  const auto up1 = f.one("u1", "upload", "/a/m");
  const auto up2 = f.one("u2", "upload", "/a/m");
  REQUIRE(up1.granted());
  REQUIRE(up2.granted());
  SECTION("same path") {
    const auto r = f.one("d", "delete_folder", "/a/m");
    check_names(r, up2, Relation::same, "/a/m");  // the highest fence
    const auto cr = f.one("c", "create", "/a/m");
    REQUIRE(cr.granted());
    const auto r2 = f.one("d", "delete_folder", "/a/m");
    REQUIRE_FALSE(r2.granted());
    CHECK(r2.conflict.id == cr.grant.id);  // the lowest code, though not the newest... nor the oldest
  }
  SECTION("below") {
    const auto cr = f.one("c", "create", "/a/m");
    REQUIRE(cr.granted());
    const auto r = f.one("d", "delete_folder", "/a");
    check_names(r, cr, Relation::held_descendant, "/a/m");
  }
}

// A request for the role of `code` at `path`, its other roles on paths of
// their own under `elsewhere`.
static LockRequest request_for(const Fixture& f, const std::string& owner, int code, const std::string& path,
                        const std::string& elsewhere) {
  const MatrixTable& m = f.engine->matrix();
  const OpInfo& op = m.ops[static_cast<std::size_t>(m.codes[static_cast<std::size_t>(code)].op)];
  std::vector<Target> targets;
  for (std::size_t r = 0; r < op.role_count; ++r) {
    const std::string role(op.roles[r]);
    targets.push_back(Target{role, role == m.role_name_of_code(code) ? path : elsewhere + "/" + role});
  }
  return f.request(owner, std::string(op.name), targets);
}

TEST_CASE("witness above: the ancestor nearest the root wins over a nearer, newer one", "[conformance][witness]") {
  Fixture f;
  const MatrixTable& m = f.engine->matrix();
  const int up = code_of(f, "upload");
  // Two held codes that both refuse an upload below them, where the second
  // may be taken above the first.
  int near = -1, far = -1;
  for (int x = 0; x < m.code_count && near < 0; ++x)
    for (int y = 0; y < m.code_count && near < 0; ++y)
      if (m.refuses(Relation::held_ancestor, x, up) && m.refuses(Relation::held_ancestor, y, up) &&
          !m.refuses(Relation::held_descendant, x, y)) {
        near = x;
        far = y;
      }
  REQUIRE(near >= 0);
  const auto held_near = f.engine->acquire(request_for(f, "x", near, "/a/b", "/x"));
  const auto held_far = f.engine->acquire(request_for(f, "y", far, "/a", "/y"));
  REQUIRE(held_near.granted());
  REQUIRE(held_far.granted());
  const auto r = f.one("u", "upload", "/a/b/c");
  check_names(r, held_far, Relation::held_ancestor, "/a");
}
