// "This request is now waiting", for tests: the test side of the waiting
// policy's sync point (core::WaitObserver in src/core/waiting.hpp), on every
// backend. A test that needs a request to be waiting before it goes on (a
// release that must wake it, a newcomer that must meet its place in line)
// waits for it here instead of sleeping and hoping.
//
// The observer is registered when the test process starts and lives as long
// as it, so no waiting thread can outlast it. It counts, per namespace and
// owner, the refused attempts after which a request went to sleep, and the
// sleeps that a wake-up cut short; test
// namespaces are unique (unique_namespace), so counts never mix across tests.
// Thread safety: any thread may call these; Catch2 assertions stay with the
// caller (the functions return what they saw).
#pragma once

#include <pathlock/engine.hpp>

#include <chrono>
#include <functional>
#include <string>

namespace pathlock::test {

// How many times a request of `owner` in `ns` has gone to sleep after a
// refused attempt so far.
int times_waited(const std::string& ns, const std::string& owner);

// How many sleeps of a request of `owner` in `ns` ended before their time:
// cut short by a wake-up from the backend (or a stop), not by the re-check
// timer, the conflicting lease's end or the deadline (core::WaitObserver::woken).
int times_woken(const std::string& ns, const std::string& owner);

// Blocks until times_waited(ns, owner) >= `times` and returns true, or
// returns false after `timeout` of real time (the request never waited: the
// caller fails the test).
bool until_waiting(const std::string& ns, const std::string& owner, int times = 1,
                   std::chrono::milliseconds timeout = std::chrono::seconds(10));

// Runs `action` once, on the acquiring thread, when an attempt of a
// stoppable acquire (one given a stop token) of `owner` in `ns` is granted,
// just before the call looks at its token: a test stops the call there to
// make the grant race the stop, decided by this sync point, not by timing.
void when_granted(const std::string& ns, const std::string& owner, std::function<void()> action);

}  // namespace pathlock::test
