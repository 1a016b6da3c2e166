// The fixture of the conformance suite: behaviour every backend shares,
// written once against LockEngine. `Fixture f;` at the top of a TEST_CASE
// runs the case once per row of the backend table (support/backends.hpp),
// with a fresh engine and a namespace of its own.
#pragma once

#include "support/backends.hpp"

#include <pathlock/engine.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace pathlock::test {

struct Fixture {
  BackendUnderTest backend = each_backend();
  std::unique_ptr<LockEngine> engine = backend.make(nullptr);
  std::string ns = unique_namespace(backend.name);

  LockRequest request(const std::string& owner, const std::string& op, std::vector<Target> targets,
                      Millis ttl = Millis{30000}, Millis wait = Millis{0}, bool fair = true) const {
    LockRequest r{ns, owner, op, std::move(targets), ttl, wait};
    r.fair = fair;
    return r;
  }
  LockRequest request_on(const std::string& owner, const std::string& op, const std::string& path,
                         Millis ttl = Millis{30000}) const {
    return request(owner, op, {{"target", path}}, ttl);
  }
  // A one-target request that may wait (the waiting tests' form).
  AcquireResult attempt(const std::string& owner, const std::string& op, const std::string& path,
                        Millis wait = Millis{0}, Millis ttl = Millis{30000}, bool fair = true) {
    return engine->acquire(request(owner, op, {{"target", path}}, ttl, wait, fair));
  }
  AcquireResult take(const std::string& owner, const std::string& op, std::vector<Target> targets,
                     Millis ttl = Millis{30000}) {
    return engine->acquire(request(owner, op, std::move(targets), ttl));
  }
  // A one-target request on `path` that does not wait.
  AcquireResult one(const std::string& owner, const std::string& op, const std::string& path,
                    Millis ttl = Millis{30000}) {
    return engine->acquire(request_on(owner, op, path, ttl));
  }
  AcquireResult two(const std::string& owner, const std::string& op, const std::string& src, const std::string& dst) {
    return take(owner, op, {{"src", src}, {"dst", dst}});
  }
  std::size_t held() { return engine->list(ns).size(); }
  // True if nothing is held at or around `path` (a delete_folder probe gets in).
  bool free(const std::string& path) {
    const auto r = one("probe", "delete_folder", path);
    if (r.granted) engine->release(ns, r.grant.id, r.grant.token);
    return r.granted;
  }
  // Waits until `owner`'s request is queued: a fair wait=0 probe that
  // conflicts with it is refused by it.
  void until_queued(const std::string& owner, const std::string& probe_op, const std::string& path) {
    for (int i = 0; i < 500; ++i) {
      const auto probe = one("probe", probe_op, path);
      if (probe.granted) REQUIRE(engine->release(ns, probe.grant.id, probe.grant.token));
      if (!probe.granted && probe.conflict.queued && probe.conflict.owner == owner) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    FAIL("the waiter never appeared in the queue");
  }
};

}  // namespace pathlock::test
