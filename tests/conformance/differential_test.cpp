// Differential test: every backend answers a long random sequence of calls
// exactly like the embedded backend, call by call: the same grants and
// refusals, the same conflicting lock named (operation, role, path, owner,
// relation and the same lock, matched by identity), the same hold counts,
// listings in the same order. Fences may differ in value between backends
// (Redis floors them by its clock), never in order.
#include "conformance/fixture.hpp"

#include <pathlock/memory.hpp>
#include <pathlock/path.hpp>

#include <map>
#include <random>

using namespace pathlock;
using namespace std::chrono_literals;

TEST_CASE("every backend answers every call like the embedded one", "[conformance][differential]") {
  const test::BackendUnderTest backend = test::each_backend();
  if (backend.can.in_process) return;  // the reference itself
  auto other = backend.make(nullptr);
  auto reference = make_memory_engine();
  const std::string ns = test::unique_namespace("diff");
  const MatrixTable& m = default_matrix();
  const std::vector<std::string> paths{"/", "/a", "/a/b", "/a/b/c", "/a/c", "/b", "/b/a", "/a/b/c/d", "/ab", "/a/b!"};
  const std::vector<std::string> prefixes{"/", "/a", "/a/b", "/b", "/zz"};

  struct Held {
    Grant ref, other;
  };
  std::vector<Held> held;
  std::map<std::string, std::string> same_lock;  // reference id -> other backend's id
  std::mt19937 rng(20240601);
  std::size_t grants = 0, refusals = 0, descendant_refusals = 0;

  for (int step = 0; step < 1500; ++step) {
    INFO("step " << step);
    const auto action = rng() % 100;
    if (action < 60 || held.empty()) {
      const OpInfo& op = m.ops[rng() % m.op_count];
      std::vector<Target> targets;
      for (std::size_t r = 0; r < op.role_count; ++r)
        targets.push_back(Target{std::string(op.roles[r]), paths[rng() % paths.size()]});
      LockRequest req{ns, "o" + std::to_string(rng() % 3), std::string(op.name), targets, 60000ms, 0ms};
      // Some requests carry an idempotency key from a small set (a retry,
      // or a clash: InvalidRequest on both), some the proof of a held lock
      // (each backend its own id and token; the targets may not match).
      const auto kind = rng() % 10;
      if (kind == 0) req.idempotency_key = "k" + std::to_string(rng() % 4);
      const Held* proof = kind == 1 && !held.empty() ? &held[rng() % held.size()] : nullptr;
      if (proof && rng() % 2) {
        const LockInfo* l = nullptr;
        const auto listed = reference->list(ns);
        for (const LockInfo& x : listed)
          if (x.id == proof->ref.id) l = &x;
        if (l) {
          req.op = l->op;
          req.targets = l->targets;
        }
      }
      // One backend's answer: the result, or invalid = true.
      const auto ask = [&](LockEngine& engine, const Grant* grant, bool& invalid) {
        LockRequest r = req;
        if (grant) r.reenter(*grant);
        try {
          return engine.acquire(r);
        } catch (const InvalidRequest&) {
          invalid = true;
          return AcquireResult{};
        }
      };
      bool ref_invalid = false, other_invalid = false;
      const AcquireResult a = ask(*reference, proof ? &proof->ref : nullptr, ref_invalid);
      const AcquireResult b = ask(*other, proof ? &proof->other : nullptr, other_invalid);
      REQUIRE(ref_invalid == other_invalid);
      if (ref_invalid) continue;
      REQUIRE(a.granted() == b.granted());
      REQUIRE(a.not_holder() == b.not_holder());
      if (a.granted()) {
        ++grants;
        CHECK(a.grant.holds == b.grant.holds);
        if (same_lock.count(a.grant.id)) {
          CHECK(same_lock.at(a.grant.id) == b.grant.id);  // a reentry or a retry found the same lock
        } else {
          REQUIRE_FALSE(proof);
          same_lock[a.grant.id] = b.grant.id;
          held.push_back(Held{a.grant, b.grant});
        }
      } else if (a.not_holder()) {
        ++refusals;
      } else {
        ++refusals;
        const Conflict &x = a.conflict, &y = b.conflict;
        if (x.relation == Relation::held_descendant) ++descendant_refusals;
        CHECK(x.relation == y.relation);
        CHECK(x.requested_role == y.requested_role);
        CHECK(x.requested_path == y.requested_path);
        CHECK(same_lock.at(x.id) == y.id);
        CHECK(x.op == y.op);
        CHECK(x.role == y.role);
        CHECK(x.path == y.path);
        CHECK(x.owner == y.owner);
      }
    } else if (action < 80) {
      const std::size_t k = rng() % held.size();
      const bool wrong_token = rng() % 10 == 0;
      const bool a = reference->release(ns, held[k].ref.id, wrong_token ? "x" : held[k].ref.token);
      const bool b = other->release(ns, held[k].other.id, wrong_token ? "x" : held[k].other.token);
      CHECK(a == b);
      if (!wrong_token && a) {
        // The lock goes when its last hold goes: ask the listing.
        bool still = false;
        for (const LockInfo& l : reference->list(ns))
          if (l.id == held[k].ref.id) still = true;
        if (!still) held.erase(held.begin() + static_cast<std::ptrdiff_t>(k));
      }
    } else if (action < 85) {
      const std::size_t k = rng() % held.size();
      const std::optional<Millis> ttl = rng() % 2 ? std::optional<Millis>(50000ms) : std::nullopt;
      CHECK(reference->renew(ns, held[k].ref.id, held[k].ref.token, ttl) ==
            other->renew(ns, held[k].other.id, held[k].other.token, ttl));
    } else if (action < 90) {
      const std::size_t k = rng() % held.size();
      CHECK(reference->force_release(ns, held[k].ref.id) == other->force_release(ns, held[k].other.id));
      held.erase(held.begin() + static_cast<std::ptrdiff_t>(k));
    } else {
      const std::string& prefix = prefixes[rng() % prefixes.size()];
      const auto a = reference->list(ns, prefix);
      const auto b = other->list(ns, prefix);
      REQUIRE(a.size() == b.size());
      for (std::size_t i = 0; i < a.size(); ++i) {
        CHECK(same_lock.at(a[i].id) == b[i].id);  // same locks, in the same (fence) order
        CHECK(a[i].owner == b[i].owner);
        CHECK(a[i].op == b[i].op);
        CHECK(a[i].holds == b[i].holds);
        REQUIRE(a[i].targets.size() == b[i].targets.size());
        for (std::size_t t = 0; t < a[i].targets.size(); ++t) {
          CHECK(a[i].targets[t].role == b[i].targets[t].role);
          CHECK(a[i].targets[t].path == b[i].targets[t].path);
        }
        if (i > 0) CHECK(b[i - 1].fence < b[i].fence);
        CHECK(std::chrono::abs(a[i].expires_in - b[i].expires_in) < 1000ms);
      }
    }
  }
  CHECK(grants > 100);
  CHECK(refusals > 100);
  CHECK(descendant_refusals > 0);
}
