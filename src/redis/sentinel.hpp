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
// thread and stops it (within about 100 ms) in its destructor.
#pragma once

#include "redis/connection.hpp"

#include <atomic>
#include <functional>
#include <thread>

namespace pathlock::redis {

// The master's address as the first answering sentinel reports it. Throws
// Unreachable when no sentinel answers, BackendError when they answer but
// do not know MASTER.
Endpoint ask_sentinels(const RedisUrl& url, const ConnectionSettings& settings, Warnings& warnings);

class SwitchWatcher {
 public:
  SwitchWatcher(const RedisUrl& url, const ConnectionSettings& settings, Warnings& warnings,
                std::function<void()> on_switch);
  ~SwitchWatcher();
  SwitchWatcher(const SwitchWatcher&) = delete;
  SwitchWatcher& operator=(const SwitchWatcher&) = delete;

 private:
  void run();

  const RedisUrl& url_;
  const ConnectionSettings& settings_;
  Warnings& warnings_;
  std::function<void()> on_switch_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace pathlock::redis
