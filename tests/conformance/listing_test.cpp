// Listing, whole and paged, on every backend.
#include "conformance/fixture.hpp"

#include <set>

using namespace pathlock;
using namespace std::chrono_literals;

TEST_CASE("paged listing returns every live lock exactly once, in fence order", "[conformance][list]") {
  test::Fixture f;
  std::vector<Grant> grants;
  for (int i = 0; i < 23; ++i) {
    const auto g = f.one("o", "upload", "/p/d" + std::to_string(i % 5) + "/f" + std::to_string(i));
    REQUIRE(g.granted());
    grants.push_back(g.grant);
  }
  REQUIRE(f.one("o", "upload", "/q/elsewhere").granted());
  for (const std::size_t limit : {std::size_t{1}, std::size_t{4}, std::size_t{7}, std::size_t{23}, std::size_t{100}}) {
    INFO("limit " << limit);
    std::vector<std::string> seen;
    std::string after;
    std::uint64_t last_fence = 0;
    for (int pages = 0;; ++pages) {
      REQUIRE(pages <= 23);
      const ListPage page = f.engine->list_page(f.ns, "/p", limit, after);
      CHECK(page.locks.size() <= limit);
      for (const LockInfo& l : page.locks) {
        CHECK(l.fence > last_fence);
        last_fence = l.fence;
        seen.push_back(l.id);
      }
      if (page.next.empty()) break;
      after = page.next;
    }
    CHECK(seen.size() == grants.size());
    CHECK(std::set<std::string>(seen.begin(), seen.end()).size() == grants.size());
    std::vector<std::string> whole;
    for (const LockInfo& l : f.engine->list(f.ns, "/p")) whole.push_back(l.id);
    CHECK(whole == seen);
  }
}

TEST_CASE("a lock released between pages is simply absent - later ones still come", "[conformance][list]") {
  test::Fixture f;
  std::vector<Grant> grants;
  for (int i = 0; i < 6; ++i) grants.push_back(f.one("o", "upload", "/p/f" + std::to_string(i)).grant);
  const ListPage first = f.engine->list_page(f.ns, "/", 2, "");
  REQUIRE(first.locks.size() == 2);
  REQUIRE_FALSE(first.next.empty());
  REQUIRE(f.engine->release(f.ns, grants[2].id, grants[2].token));
  const auto added = f.one("o", "upload", "/p/g");
  REQUIRE(added.granted());
  std::vector<std::string> rest;
  for (std::string after = first.next; !after.empty();) {
    const ListPage page = f.engine->list_page(f.ns, "/", 2, after);
    for (const LockInfo& l : page.locks) rest.push_back(l.id);
    after = page.next;
  }
  CHECK(rest == std::vector<std::string>{grants[3].id, grants[4].id, grants[5].id, added.grant.id});
}

TEST_CASE("paged listing refuses a bad limit or cursor", "[conformance][list]") {
  test::Fixture f;
  CHECK_THROWS_AS(f.engine->list_page(f.ns, "/", 0, ""), InvalidRequest);
  CHECK_THROWS_AS(f.engine->list_page(f.ns, "/", kMaxListLimit + 1, ""), InvalidRequest);
  CHECK_THROWS_AS(f.engine->list_page(f.ns, "/", 10, "not-a-cursor"), InvalidRequest);
  CHECK_THROWS_AS(f.engine->list_page(f.ns, "relative", 10, ""), InvalidRequest);
  CHECK(f.engine->list_page(f.ns, "/", 10, "").locks.empty());
}
