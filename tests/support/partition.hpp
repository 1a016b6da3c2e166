// What the partition tests share (partition_test.cpp on Redis,
// partition_postgres_test.cpp on PostgreSQL): the lab of three network
// namespaces, and small tools for calls made inside one of them.
//
//   ns a  --veth 169.254.1.0/30--  ns <server>  --veth 169.254.2.0/30--  ns b
//   (instance A)                                                         (instance B)
//
// Thread safety: as the engines'; Catch2 assertions stay on the test thread
// (Attempt's thread only records what happened).
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <pathlock/engine.hpp>
#include <string>
#include <thread>
#include <vector>

#include "redis_devtools/redis_server.hpp"
#include "support/netns.hpp"

namespace pathlock::test {

// The server's namespace, A's and B's, and the links a-server and b-server
// (the server's ends are link_a.address_b() and link_b.address_b()).
struct PartitionLab {
  explicit PartitionLab(const std::string& server_role) : server_ns(server_role) {}
  NetworkNamespace server_ns, a_ns{"a"}, b_ns{"b"};
  VethLink link_a{a_ns, server_ns, 1}, link_b{b_ns, server_ns, 2};
};

// A call of `engine` inside `ns`, retried while it throws BackendError
// (stale connections after a heal) for up to 10 s.
template <class Call>
auto answer(const NetworkNamespace& ns, Call call) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (true) {
    try {
      return inside(ns, call);
    } catch (const BackendError&) {
      if (std::chrono::steady_clock::now() > give_up) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
}

// One acquire on a thread of its own, inside a namespace: what it returned
// or threw, and when it was sent and answered. Joined when destroyed.
struct Attempt {
  Attempt(const NetworkNamespace& ns, LockEngine& engine, LockRequest req) : request(std::move(req)) {
    thread = std::thread([this, &ns, &engine] {
      sent = monotonic_ns();
      try {
        result = inside(ns, [&] { return engine.acquire(request); });
      } catch (const std::exception& e) {
        error = e.what();
      }
      answered = monotonic_ns();
    });
  }
  ~Attempt() { join(); }
  void join() {
    if (thread.joinable()) thread.join();
  }

  LockRequest request;
  AcquireResult result;
  std::string error;  // what it threw, if it did
  std::int64_t sent = 0, answered = 0;
  std::thread thread;
};

// A moment the keeper's callback records, for the test thread to wait on.
struct Moment {
  void mark() {
    std::lock_guard guard(mutex);
    at = monotonic_ns();
    changed.notify_all();
  }
  bool wait(std::chrono::milliseconds limit) {
    std::unique_lock guard(mutex);
    return changed.wait_for(guard, limit, [&] { return at != 0; });
  }
  std::mutex mutex;
  std::condition_variable changed;
  std::int64_t at = 0;
};

// The C++ tests' one wait for a state (tools/dev/redis_devtools/redis_server.hpp).
using devtools::until;

inline const LockInfo* find_lock(const std::vector<LockInfo>& locks, const std::string& id) {
  for (const LockInfo& l : locks)
    if (l.id == id) return &l;
  return nullptr;
}

// The storage side of docs/guard.md: it keeps the highest fence it accepted
// per path, refuses a lower one, and asks is_held just before committing;
// a hold check that fails (a partition) refuses the write too.
class FencedStore {
 public:
  bool write(LockEngine& engine, const NetworkNamespace& where, const std::string& ns, const Grant& grant,
             const std::string& path) {
    std::uint64_t& highest = fences_[path];
    if (grant.fence < highest) return false;
    try {
      if (!inside(where, [&] { return engine.is_held(ns, grant.id, grant.token); })) return false;
    } catch (const BackendError&) {
      return false;
    }
    highest = grant.fence;
    return true;
  }

 private:
  std::map<std::string, std::uint64_t> fences_;
};

inline std::int64_t ms_to_ns(Millis ms) {
  return static_cast<std::int64_t>(ms.count()) * 1000000;
}

}  // namespace pathlock::test
