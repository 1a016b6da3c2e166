// Lock identity (docs/design.md#lock-identity): an owner's name is no proof.
// Only a lock's id and token re-enter it, only the same idempotency key gets
// a lock back, and a failed proof reveals nothing. Every backend.
#include "conformance/fixture.hpp"

#include <thread>

using namespace std::chrono_literals;

namespace pathlock {
namespace {

using test::Fixture;

// A conflict that names nothing: what a refused proof carries.
bool empty(const Conflict& c) {
  return c.id.empty() && c.op.empty() && c.role.empty() && c.path.empty() && c.owner.empty() &&
         c.requested_path.empty() && c.expires_in == Millis{0};
}

// Once the lock of `req`'s key is gone: the key gets a new lock, with a
// higher fence, and it is the only one held.
void key_gets_a_new_lock(Fixture& f, const LockRequest& req, const Grant& gone) {
  const auto fresh = f.engine->acquire(req);
  REQUIRE(fresh.granted());
  CHECK(fresh.grant.id != gone.id);
  CHECK(fresh.grant.fence > gone.fence);
  CHECK(f.held() == 1);
}

TEST_CASE("identity: the same owner asking again, elsewhere, is refused like anyone", "[engine][identity]") {
  Fixture f;
  const auto first = f.two("alice", "move_folder", "/p/A", "/p/B");
  REQUIRE(first.granted());
  // Another thread of the same service, as the same user: judged, refused.
  AcquireResult second;
  std::thread other([&] { second = f.two("alice", "move_folder", "/p/A", "/p/B"); });  // asserts after join
  other.join();
  REQUIRE_FALSE(second.granted());
  CHECK_FALSE(second.not_holder());
  CHECK(second.conflict.id == first.grant.id);
  CHECK(second.conflict.owner == "alice");
  CHECK(second.conflict.relation == Relation::same);
  // Same owner, compatible operations elsewhere still run side by side.
  CHECK(f.one("alice", "upload", "/q/x").granted());
  CHECK(f.one("alice", "upload", "/q/x").granted());
  const auto locks = f.engine->list(f.ns, "/p");
  REQUIRE(locks.size() == 1);
  CHECK(locks[0].holds == 1);
}

TEST_CASE("identity: the lock's id and token re-enter it", "[engine][identity]") {
  Fixture f;
  const auto first = f.two("alice", "move_file", "/p/a.txt", "/p/B");
  REQUIRE(first.granted());
  // The proof, with the same operation and (equivalent) targets; the
  // owner named in the request does not matter, the listed one stays.
  auto again = f.request("worker-7", "move_file", {{"src", "/p//a.txt"}, {"dst", "/p/B/"}}, 60000ms);
  const auto second = f.engine->acquire(again.reenter(first.grant));
  REQUIRE(second.granted());
  CHECK(second.grant.id == first.grant.id);
  CHECK(second.grant.token == first.grant.token);
  CHECK(second.grant.fence == first.grant.fence);
  CHECK(second.grant.holds == 2);
  CHECK(second.grant.expires_in > 50000ms);  // extended to now + ttl
  auto shorter = f.request("alice", "move_file", {{"src", "/p/a.txt"}, {"dst", "/p/B"}}, 1000ms);
  const auto third = f.engine->acquire(shorter.reenter(first.grant));
  REQUIRE(third.granted());
  CHECK(third.grant.holds == 3);
  CHECK(third.grant.expires_in > 50000ms);  // never shortened
  const auto listed = f.engine->list(f.ns);
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].owner == "alice");
  CHECK(listed[0].holds == 3);
  // Each release drops one hold; others stay refused until the last.
  int refused_while_held = 0;
  for (int i = 0; i < 3; ++i) {
    refused_while_held += !f.one("bob", "rename_file", "/p/a.txt").granted();
    CHECK(f.engine->release(f.ns, first.grant.id, first.grant.token));
  }
  CHECK(refused_while_held == 3);
  CHECK(f.engine->list(f.ns).empty());
  CHECK(f.one("bob", "rename_file", "/p/a.txt").granted());
}

TEST_CASE("identity: a wrong or stale proof is refused and reveals nothing", "[engine][identity]") {
  Fixture f{test::manual_time};
  const auto held = f.one("alice", "delete_folder", "/p/A");
  REQUIRE(held.granted());
  auto wrong_token = f.request_on("mallory", "delete_folder", "/p/A");
  wrong_token.reenter_id = held.grant.id;
  wrong_token.reenter_token = "0123456789abcdef0123456789abcdef";
  wrong_token.wait = 5000ms;  // a proof never waits: the answer is now
  const auto r = f.engine->acquire(wrong_token);
  CHECK(test::times_waited(f.ns, "mallory") == 0);
  CHECK_FALSE(r.granted());
  CHECK(r.not_holder());
  CHECK(empty(r.conflict));
  CHECK(r.grant.token.empty());
  CHECK(r.grant.id.empty());

  auto unknown = f.request_on("mallory", "delete_folder", "/p/A");
  unknown.reenter_id = "no-such-lock";
  unknown.reenter_token = held.grant.token;
  const auto u = f.engine->acquire(unknown);
  CHECK(u.not_holder());
  CHECK(empty(u.conflict));
  CHECK_FALSE(u.granted());

  // The right proof for other targets or another operation: InvalidRequest,
  // and nothing changes.
  auto other_path = f.request_on("alice", "delete_folder", "/p/B");
  CHECK_THROWS_AS(f.engine->acquire(other_path.reenter(held.grant)), InvalidRequest);
  auto other_op = f.request_on("alice", "upload", "/p/A");
  CHECK_THROWS_AS(f.engine->acquire(other_op.reenter(held.grant)), InvalidRequest);
  REQUIRE(f.engine->list(f.ns).size() == 1);
  CHECK(f.engine->list(f.ns)[0].holds == 1);

  // An expired lock proves nothing either.
  REQUIRE(f.engine->renew(f.ns, held.grant.id, held.grant.token, 100ms));
  REQUIRE(f.until_expired(held.grant, 150ms));
  auto late = f.request_on("alice", "delete_folder", "/p/A");
  const auto l = f.engine->acquire(late.reenter(held.grant));
  CHECK(l.not_holder());
  CHECK_FALSE(l.granted());
  CHECK(f.held() == 0);
}

TEST_CASE("identity: an idempotency key gets the same lock back, and nothing else does", "[engine][identity]") {
  Fixture f;
  auto req = f.request("alice", "move_folder", {{"src", "/p/A"}, {"dst", "/p/B"}});
  req.idempotency_key = "req-7f3a.1:x_y";
  const auto first = f.engine->acquire(req);
  REQUIRE(first.granted());
  // The retry after a lost reply: the same lock, unchanged.
  const auto retry = f.engine->acquire(req);
  REQUIRE(retry.granted());
  CHECK(retry.grant.id == first.grant.id);
  CHECK(retry.grant.token == first.grant.token);
  CHECK(retry.grant.fence == first.grant.fence);
  CHECK(retry.grant.holds == 1);
  // The same key with another owner, operation or targets: refused as bad
  // input, and it does not learn the lock.
  auto other_owner = req;
  other_owner.owner = "mallory";
  CHECK_THROWS_AS(f.engine->acquire(other_owner), InvalidRequest);
  auto other_targets = req;
  other_targets.targets = {{"src", "/p/A"}, {"dst", "/p/C"}};
  CHECK_THROWS_AS(f.engine->acquire(other_targets), InvalidRequest);
  // Without the key, the same request is judged: refused by the lock.
  auto plain = req;
  plain.idempotency_key.clear();
  const auto judged = f.engine->acquire(plain);
  CHECK_FALSE(judged.granted());
  CHECK(judged.conflict.id == first.grant.id);
  // Another namespace has keys of its own.
  auto elsewhere = req;
  elsewhere.ns = test::unique_namespace("idem");
  const auto there = f.engine->acquire(elsewhere);
  REQUIRE(there.granted());
  CHECK(there.grant.token != first.grant.token);
  // Once the lock is gone, the key is free: a new lock.
  CHECK(f.engine->release(f.ns, first.grant.id, first.grant.token));
  key_gets_a_new_lock(f, req, first.grant);
}

TEST_CASE("identity: a lock whose lease ended answers neither its proof nor its key", "[engine][identity][expiry]") {
  Fixture f{test::manual_time};
  const Millis lease = 500ms;
  auto req = f.request("alice", "upload", {{"target", "/p/A"}}, lease);
  req.idempotency_key = "key-of-an-ended-lease";
  const auto first = f.engine->acquire(req);
  REQUIRE(first.granted());
  REQUIRE(f.until_expired(first.grant, lease));
  // The ended lock's id and token no longer re-enter it.
  auto again = f.request_on("alice", "upload", "/p/A");
  again.reenter_id = first.grant.id;
  again.reenter_token = first.grant.token;
  const auto reentry = f.engine->acquire(again);
  CHECK_FALSE(reentry.granted());
  CHECK(reentry.not_holder());
  // Its key gets a new lock, not the ended one back.
  key_gets_a_new_lock(f, req, first.grant);
}

TEST_CASE("identity: bad proofs and keys are InvalidRequest and change nothing", "[engine][identity]") {
  Fixture f;
  const auto g = f.one("alice", "upload", "/p/A");
  REQUIRE(g.granted());
  auto id_only = f.request_on("alice", "upload", "/p/A");
  id_only.reenter_id = g.grant.id;
  CHECK_THROWS_AS(f.engine->acquire(id_only), InvalidRequest);
  auto token_only = f.request_on("alice", "upload", "/p/A");
  token_only.reenter_token = g.grant.token;
  CHECK_THROWS_AS(f.engine->acquire(token_only), InvalidRequest);
  auto bad_id = f.request_on("alice", "upload", "/p/A");
  bad_id.reenter_id = "not an id";
  bad_id.reenter_token = g.grant.token;
  CHECK_THROWS_AS(f.engine->acquire(bad_id), InvalidRequest);
  auto long_token = f.request_on("alice", "upload", "/p/A");
  long_token.reenter_id = g.grant.id;
  long_token.reenter_token = std::string(kMaxTokenBytes + 1, 't');
  CHECK_THROWS_AS(f.engine->acquire(long_token), InvalidRequest);
  auto both = f.request_on("alice", "upload", "/p/A");
  both.reenter(g.grant).idempotency_key = "k";
  CHECK_THROWS_AS(f.engine->acquire(both), InvalidRequest);
  for (const std::string& key : {std::string("has space"), std::string("a/b"), std::string(kMaxIdempotencyKeyBytes + 1, 'k')}) {
    auto bad_key = f.request_on("alice", "upload", "/p/B");
    bad_key.idempotency_key = key;
    CHECK_THROWS_AS(f.engine->acquire(bad_key), InvalidRequest);
  }
  auto longest = f.request_on("alice", "upload", "/p/C");
  longest.idempotency_key = std::string(kMaxIdempotencyKeyBytes, 'k');
  CHECK(f.engine->acquire(longest).granted());
  const auto locks = f.engine->list(f.ns);
  REQUIRE(locks.size() == 2);
  CHECK(locks[0].holds == 1);
}

TEST_CASE("identity: is_held answers whether a lock is still held with this token", "[engine][identity]") {
  Fixture f{test::manual_time};
  const auto g = f.one("alice", "upload", "/p/A");
  REQUIRE(g.granted());
  CHECK(f.engine->is_held(f.ns, g.grant.id, g.grant.token));
  CHECK_FALSE(f.engine->is_held(f.ns, g.grant.id, "wrong"));
  CHECK_FALSE(f.engine->is_held(f.ns, "no-such-id", g.grant.token));
  CHECK_FALSE(f.engine->is_held(test::unique_namespace("other"), g.grant.id, g.grant.token));
  CHECK_THROWS_AS(f.engine->is_held("bad namespace", g.grant.id, g.grant.token), InvalidRequest);
  CHECK(f.engine->force_release(f.ns, g.grant.id));
  CHECK_FALSE(f.engine->is_held(f.ns, g.grant.id, g.grant.token));
  // Read-only: asking changes no lease and no hold.
  const auto h = f.one("alice", "upload", "/p/B", 3000ms);
  REQUIRE(h.granted());
  f.let_pass(500ms);
  for (int i = 0; i < 3; ++i) CHECK(f.engine->is_held(f.ns, h.grant.id, h.grant.token));
  const auto listed = f.engine->list(f.ns);
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].holds == 1);
  CHECK(listed[0].expires_in <= 2500ms);  // not extended by the asking
}

}  // namespace
}  // namespace pathlock
