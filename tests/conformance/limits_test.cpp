// Every limit a backend enforces is the C++ constant that names it: the
// constant is accepted and constant + 1 refused, on every backend. (The
// Redis functions enforce the same limits for direct callers:
// redis_lua_test.cpp, "the functions enforce the C++ limits".)
#include <algorithm>
#include <pathlock/path.hpp>

#include "conformance/fixture.hpp"

using namespace pathlock;
using namespace std::chrono_literals;

namespace {

// An absolute path of exactly `bytes` bytes, components of at most 200.
std::string path_of(std::size_t bytes) {
  std::string p;
  while (p.size() < bytes) {
    const std::size_t left = bytes - p.size();  // >= 2 here
    std::size_t k = std::min<std::size_t>(200, left - 1);
    if (left - 1 - k == 1) --k;  // never leave room for "/" alone
    p += "/" + std::string(k, 'a');
  }
  return p;
}

}  // namespace

TEST_CASE("limits: each constant is accepted and one more is refused", "[limits]") {
  test::Fixture f;
  auto engine = f.engine.get();
  auto accepted = [&](LockRequest r) {
    const AcquireResult g = engine->acquire(r);
    REQUIRE(g.granted());
    CHECK(engine->release(r.ns, g.grant.id, g.grant.token));
  };
  auto refused = [&](const LockRequest& r) { CHECK_THROWS_AS(engine->acquire(r), InvalidRequest); };
  const auto req = [&](const std::string& owner, const std::string& path) {
    return f.request_on(owner, "upload", path);
  };

  SECTION("owner bytes") {
    accepted(req(std::string(kMaxOwnerBytes, 'o'), "/p"));
    refused(req(std::string(kMaxOwnerBytes + 1, 'o'), "/p"));
  }
  SECTION("ttl") {
    accepted(f.request_on("o", "upload", "/p", kMaxTtl));
    refused(f.request_on("o", "upload", "/p", kMaxTtl + 1ms));
  }
  SECTION("path and component bytes") {
    REQUIRE(path_of(kMaxPathBytes).size() == kMaxPathBytes);
    accepted(req("o", path_of(kMaxPathBytes)));
    refused(req("o", path_of(kMaxPathBytes + 1)));
    accepted(req("o", "/" + std::string(kMaxComponentBytes, 'c')));
    refused(req("o", "/" + std::string(kMaxComponentBytes + 1, 'c')));
  }
  SECTION("namespace bytes") {
    std::string ns = f.ns + std::string(kMaxNamespaceBytes, 'n');
    ns.resize(kMaxNamespaceBytes);
    LockRequest r = req("o", "/p");
    r.ns = ns;
    accepted(r);
    r.ns = ns + "n";
    refused(r);
  }
  SECTION("idempotency key") {
    LockRequest r = req("o", "/p");
    r.idempotency_key = std::string(kMaxIdempotencyKeyBytes, 'k');
    accepted(r);
    r.idempotency_key += "k";
    refused(r);
  }
  SECTION("reentry proof: id and token") {
    // Well-formed proofs of no live lock are not_holder; one byte more is bad input.
    LockRequest r = req("o", "/p");
    r.reenter_id = std::string(kMaxIdBytes, 'i');
    r.reenter_token = std::string(kMaxTokenBytes, 't');
    const AcquireResult none = engine->acquire(r);
    CHECK_FALSE(none.granted());
    CHECK(none.not_holder());
    r.reenter_id += "i";
    refused(r);
    r.reenter_id.pop_back();
    r.reenter_token += "t";
    refused(r);
  }
  CHECK(f.held() == 0);
}

TEST_CASE("limits: list, blockers and waiters take their constant and refuse one more", "[limits]") {
  test::Fixture f;
  LockEngine* engine = f.engine.get();
  CHECK(engine->list_page(f.ns, "/", kMaxListLimit, "").locks.empty());
  CHECK_THROWS_AS(engine->list_page(f.ns, "/", kMaxListLimit + 1, ""), InvalidRequest);
  const std::vector<Target> t{{"target", "/p"}};
  CHECK(engine->blockers(f.ns, "upload", t, kMaxBlockers).blockers.empty());
  CHECK_THROWS_AS(engine->blockers(f.ns, "upload", t, kMaxBlockers + 1), InvalidRequest);
  CHECK(engine->waiters(f.ns, "/", kMaxWaiters).empty());
  CHECK_THROWS_AS(engine->waiters(f.ns, "/", kMaxWaiters + 1), InvalidRequest);
  CHECK(f.held() == 0);
}
