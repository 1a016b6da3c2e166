// The end the "WAIT for a replica" partition scenarios share
// (partition_cluster_test.cpp, partition_sentinel_test.cpp): after the cut-off
// master has lost A's lease and rejoined, B, on the majority side, waits for
// the same lock; the checker then reads both holds.
#pragma once

#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <iostream>
#include <pathlock/engine.hpp>
#include <string>

#include "support/history.hpp"
#include "support/netns.hpp"
#include "support/partition.hpp"

namespace pathlock::test {

// A's hold: its request, its grant, and when it was sent and answered.
struct FirstHold {
  const LockRequest& request;
  const Grant& grant;
  std::int64_t sent = 0, answered = 0;
};

// B (engine `b`, inside `b_ns`) waits up to 10 s for `request_b`: it must be
// granted, only after A's lease was reported `lost`, while A's grant (asked
// through `a` inside `a_ns`) is no longer held; the history of A's hold up to
// the report and B's hold must check clean. Prints the timings after `what`.
inline void check_b_after_lost_lease(LockEngine& a, const NetworkNamespace& a_ns, LockEngine& b,
                                     const NetworkNamespace& b_ns, const FirstHold& first, const Moment& lost,
                                     LockRequest request_b, History& history, const std::string& what) {
  const std::int64_t sent_b = monotonic_ns();
  request_b.wait = std::chrono::milliseconds(10000);
  const AcquireResult got_b = answer(b_ns, [&] { return b.acquire(request_b); });
  const std::int64_t from_b = monotonic_ns();
  REQUIRE(got_b.granted());
  CHECK(from_b > lost.at);
  const std::string& ns = first.request.ns;
  CHECK_FALSE(answer(a_ns, [&] { return a.is_held(ns, first.grant.id, first.grant.token); }));
  history.hold(first.request, first.grant, first.sent, first.answered, lost.at);
  history.hold(request_b, got_b.grant, sent_b, from_b, monotonic_ns());
  std::string verdict;
  const int status = history.check(verdict);
  INFO(verdict);
  CHECK(status == 0);
  std::cout << fmt::format(
      "{}: A's lease reported lost {} ms after it was granted (lease {} ms), B granted {} ms after the report, "
      "once the old master had rejoined\n",
      what, (lost.at - first.answered) / 1000000, first.request.ttl.count(), (from_b - lost.at) / 1000000);
}

}  // namespace pathlock::test
