// The path index of the embedded backend (src/memory/path_index.hpp) on its
// own: entries linked by hand, codes and blocker masks chosen by the test.
#include "memory/path_index.hpp"

#include <catch2/catch.hpp>

#include <deque>
#include <fmt/format.h>

using namespace pathlock;
using namespace pathlock::memory;

namespace {

constexpr CodeMask bit(int code) { return CodeMask{1} << code; }

// Owns entries (stable addresses) and links them.
struct Fixture {
  PathIndex index;
  std::deque<Entry> entries;

  Entry& add(const std::string& path, int code, Kind kind = kHeld) {
    Entry& e = entries.emplace_back();
    e.path = path;
    e.code = code;
    index.link(e, kind);
    return e;
  }
  const Entry* refusal(const std::string& path, Blockers b, Relation& rel, Kind kind = kHeld) const {
    return index.find_refusal(path, b, kind, rel);
  }
};

}  // namespace

TEST_CASE("index: counters and masks follow link and unlink - unused nodes are pruned and reused", "[memory][index]") {
  Fixture f;
  Entry& e = f.add("/a/b/c", 3);
  const Node* c = f.index.find("/a/b/c");
  REQUIRE(c);
  CHECK(c->here_mask[kHeld] == bit(3));
  CHECK(c->below_mask[kHeld] == 0);
  CHECK(f.index.root().below_mask[kHeld] == bit(3));
  CHECK(f.index.find("/a")->below_mask[kHeld] == bit(3));
  CHECK(f.index.find("/a")->here_mask[kHeld] == 0);
  CHECK(f.index.root().here_mask[kWaiting] == 0);
  CHECK(f.index.root().below_mask[kWaiting] == 0);

  Entry& d = f.add("/a/d", 3);
  f.index.unlink(e, kHeld);
  CHECK(f.index.find("/a/b") == nullptr);  // pruned: nothing at or below
  CHECK(f.index.find("/a/d"));
  CHECK(f.index.spare_nodes() == 2);
  CHECK(f.index.root().below_mask[kHeld] == bit(3));
  f.index.unlink(d, kHeld);
  CHECK(f.index.root().below_mask[kHeld] == 0);
  CHECK(f.index.root().children.empty());
  CHECK(f.index.spare_nodes() == 4);
  f.add("/x/y", 1);  // reuses two spares
  CHECK(f.index.spare_nodes() == 2);
  CHECK(f.index.find("/x/y")->here_mask[kHeld] == bit(1));
}

TEST_CASE("index: a walk's probe lets link resume where the path stops", "[memory][index]") {
  Fixture f;
  f.add("/a/b", 2);
  Relation rel{};
  PathProbe probe;
  REQUIRE(f.index.find_refusal("/a/b/c/d", Blockers{}, kHeld, rel, &probe) == nullptr);
  CHECK_FALSE(probe.complete);
  CHECK(probe.deepest == f.index.find("/a/b"));
  Entry& e = f.entries.emplace_back();
  e.path = "/a/b/c/d";
  e.code = 4;
  f.index.link(e, kHeld, &probe);
  CHECK(e.node == f.index.find("/a/b/c/d"));
  CHECK(f.index.root().below_mask[kHeld] == (bit(2) | bit(4)));
  CHECK(f.index.find("/a/b")->below_mask[kHeld] == bit(4));
  CHECK(f.index.find("/a/b/c")->below_mask[kHeld] == bit(4));
  // A complete probe: the path's own node.
  REQUIRE(f.index.find_refusal("/a/b", Blockers{}, kHeld, rel, &probe) == nullptr);
  CHECK(probe.complete);
  Entry& g = f.entries.emplace_back();
  g.path = "/a/b";
  g.code = 2;
  f.index.link(g, kHeld, &probe);
  CHECK(PathIndex::entries_at(*f.index.find("/a/b"), 2, kHeld) == &g);  // newest first
  CHECK(PathIndex::entries_at(*f.index.find("/a/b"), 2, kHeld)->next == &f.entries[0]);
}

TEST_CASE("index: the refusal names the canonical witness", "[memory][index][witness]") {
  Fixture f;
  Relation rel{};
  SECTION("ancestors from the root down, lowest code, newest entry") {
    f.add("/a/b", 5);
    f.add("/a", 6);
    f.add("/a", 4);
    const Entry& newer = f.add("/a", 4);
    const Entry* hit = f.refusal("/a/b/c", Blockers{bit(4) | bit(5) | bit(6), 0, 0}, rel);
    CHECK(hit == &newer);
    CHECK(rel == Relation::held_ancestor);
    CHECK(f.refusal("/a/b/c", Blockers{bit(5), 0, 0}, rel)->path == "/a/b");
  }
  SECTION("then the path itself, then below") {
    f.add("/a/b/x", 1);
    const Entry& same = f.add("/a/b", 2);
    CHECK(f.refusal("/a/b", Blockers{0, bit(2), bit(1)}, rel) == &same);
    CHECK(rel == Relation::same);
    CHECK(f.refusal("/a/b", Blockers{0, 0, bit(1)}, rel)->path == "/a/b/x");
    CHECK(rel == Relation::held_descendant);
    CHECK(f.refusal("/a/b", Blockers{bit(1) | bit(2), 0, 0}, rel) == nullptr);  // nothing above /a/b
  }
  SECTION("below: component order, not byte order") {
    f.add("/a/b!", 1);
    f.add("/a/b/c", 1);
    CHECK(f.refusal("/a", Blockers{0, 0, bit(1)}, rel)->path == "/a/b/c");
  }
  SECTION("below: a deeper, smaller-named path beats a shallower, larger-named one") {
    f.add("/a/z", 1);
    f.add("/a/c/d/e", 1);
    f.add("/a/b/x", 2);  // smaller, but not a blocking code
    CHECK(f.refusal("/a", Blockers{0, 0, bit(1)}, rel)->path == "/a/c/d/e");
    CHECK(f.refusal("/", Blockers{0, 0, bit(1) | bit(2)}, rel)->path == "/a/b/x");
  }
  SECTION("below: a folder before its contents; then lowest code, newest entry") {
    f.add("/a/b/c", 1);
    f.add("/a/b", 3);
    f.add("/a/b", 2);
    const Entry& newest = f.add("/a/b", 2);
    CHECK(f.refusal("/a", Blockers{0, 0, bit(1) | bit(2) | bit(3)}, rel) == &newest);
    CHECK(f.refusal("/a", Blockers{0, 0, bit(1)}, rel)->path == "/a/b/c");
  }
  SECTION("held and waiting entries are counted apart") {
    f.add("/a", 1, kWaiting);
    CHECK(f.refusal("/a", Blockers{0, bit(1), 0}, rel) == nullptr);
    CHECK(f.refusal("/a", Blockers{0, bit(1), 0}, rel, kWaiting)->path == "/a");
  }
}

TEST_CASE("index: a folder of 50,000 children", "[memory][index]") {
  // Big enough that the folder keeps its children in name order too; the
  // witness below it must be the same whether or not it does.
  Fixture f;
  std::vector<Entry*> all;
  for (int i = 49999; i >= 0; --i) all.push_back(&f.add(fmt::format("/w/c{:05}/x", i), 1));
  Relation rel{};
  CHECK(f.index.find("/w")->ordered);
  CHECK(f.refusal("/w", Blockers{0, 0, bit(1)}, rel)->path == "/w/c00000/x");
  CHECK(f.index.find("/w/c31337/x"));
  CHECK(f.index.find("/w/c50000") == nullptr);
  // Remove from the smallest name up: the witness follows, across the
  // point where the order is dropped.
  for (int i = 0; i < 50000; ++i) {
    f.index.unlink(*all[static_cast<std::size_t>(49999 - i)], kHeld);
    if (i % 997 == 0 || i > 49400) {
      const Entry* hit = f.refusal("/w", Blockers{0, 0, bit(1)}, rel);
      if (i == 49999) {
        CHECK(hit == nullptr);
      } else {
        REQUIRE(hit);
        CHECK(hit->path == fmt::format("/w/c{:05}/x", i + 1));
      }
    }
  }
  CHECK(f.index.root().children.empty());
  CHECK(f.index.spare_nodes() == PathIndex::kMaxSpareNodes);
}

TEST_CASE("index: in a big folder the order skips children without a blocking code", "[memory][index]") {
  Fixture f;
  for (int i = 0; i < 3000; ++i) f.add(fmt::format("/w/c{:05}", i), 2);
  f.add("/w/c02500/deep", 1);
  f.add("/w/c02900", 1);
  REQUIRE(f.index.find("/w")->ordered);
  Relation rel{};
  CHECK(f.refusal("/w", Blockers{0, 0, bit(1)}, rel)->path == "/w/c02500/deep");
  CHECK(f.refusal("/w", Blockers{0, 0, bit(1) | bit(2)}, rel)->path == "/w/c00000");
}

