// Master discovery through Redis Sentinel.
//
// ask_sentinels() asks the sentinels of a redis-sentinel:// URL in turn
// (SENTINEL get-master-addr-by-name MASTER) and returns the first answer.
// The client calls it at start, and again when the master it uses cannot be
// reached, answers READONLY (it was demoted), or a sentinel announces a
// +switch-master for it.
//
// SwitchWatcher is that announcement: a thread SUBSCRIBEd to +switch-master
// on one sentinel (the next one when it fails), which calls on_switch when
// the message names our master. It only speeds up the switch; without it
// the client still finds the new master on its first failed call.
//
// Thread safety: ask_sentinels is reentrant; a SwitchWatcher runs its own
// thread. Its destructor returns within about 100 ms (kStopWait) and
// on_switch is never called once it has begun: a thread found blocked in a
// connection to a slow or unreachable sentinel (up to the connect and
// command timeouts) is left to finish on its own, with its own copy of the
// URL and settings, and calls nothing more.
#pragma once

#include "redis/connection.hpp"

#include <functional>
#include <memory>
#include <thread>

namespace pathlock::redis {

// The master's address as the first answering sentinel reports it. Throws
// Unreachable when no sentinel answers, BackendError when they answer but
// do not know MASTER.
Endpoint ask_sentinels(const RedisUrl& url, const ConnectionSettings& settings, Warnings& warnings);

class SwitchWatcher {
 public:
  // How long the destructor waits for the thread before leaving it.
  static constexpr Millis kStopWait{100};

  SwitchWatcher(const RedisUrl& url, const ConnectionSettings& settings, std::function<void()> on_switch);
  ~SwitchWatcher();
  SwitchWatcher(const SwitchWatcher&) = delete;
  SwitchWatcher& operator=(const SwitchWatcher&) = delete;

 private:
  struct State;  // shared by the watcher and its thread
  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace pathlock::redis
