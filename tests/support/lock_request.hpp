// A lock request written in one line, for tests that name each target:
// request(ns, owner, op, {{"target", "/a"}}), with a 30 s lease by default
// and no waiting.
#pragma once

#include <pathlock/engine.hpp>

#include <string>
#include <utility>
#include <vector>

namespace pathlock::test {

// A request of `owner` for `op` on `targets` in namespace `ns`, with a lease
// of `ttl`, that does not wait.
inline LockRequest request(const std::string& ns, const std::string& owner, const std::string& op,
                           std::vector<Target> targets, Millis ttl = Millis{30000}) {
  return LockRequest{ns, owner, op, std::move(targets), ttl, Millis{0}};
}

}  // namespace pathlock::test
