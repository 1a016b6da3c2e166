// The Redis client of the Redis backend (hiredis 0.14's reply parser over
// our own TCP or TLS stream, connection.hpp): the one object
// the engine talks to, whatever the deployment behind the URL.
//
// Topology (redis_url.hpp). At construction the client finds out what it
// talks to and fails early (bad address, credentials, eviction policy):
//   standalone  redis:// whose first answering seed has cluster_enabled:0
//               (INFO cluster): every command goes to that server.
//   cluster     redis:// whose first answering seed is a cluster node: the
//               slot map comes from CLUSTER SLOTS (cluster.hpp), a command
//               goes to the master of its first key's slot (slot.hpp), and
//               each master has its own pool of pool_size connections.
//   sentinel    redis-sentinel://...#MASTER: the sentinels name the master
//               (sentinel.hpp); asked again when it cannot be reached, when
//               it answers READONLY (demoted) and on +switch-master.
//
// Retry rule (redis_client.cpp, routed()). A command goes to another
// connection or node only when it provably did not run: it was never
// (completely) written, its node could not be reached, or the node answered
// MOVED, ASK, TRYAGAIN, CLUSTERDOWN, LOADING, MASTERDOWN or READONLY. Then
// the client refreshes what it knows (slot map, sentinels), backs off (5 ms
// doubling to 200 ms) where waiting helps, and tries again until
// command_timeout has passed since the call began; ASK sends ASKING and the
// command to the named node once. A reply lost or late after the write is
// never retried: the script may have run ("its effect is unknown"). In
// standalone mode only the never-written case is retried, once.
//
// Waiting (Subscription, subscription.hpp): SSUBSCRIBE on a dedicated
// connection to the node that serves the channel's slot.
//
// Failures: always BackendError "redis at <where>: ...". Error replies are
// returned by call() and thrown by command() and fcall().
//
// Metrics (ClientOptions::metrics): every routed call's duration, retries
// included; each retry by reason; each BackendError it raises; failovers
// (the sentinels named another master; a cluster node was unreachable or
// read-only and the slot map was read again).
//
// Thread safety: every public method may be called concurrently; one
// Subscription belongs to one thread.
#pragma once

#include "redis/cluster.hpp"
#include "redis/connection.hpp"
#include "redis/pool.hpp"
#include <pathlock/redis_url.hpp>
#include "redis/subscription.hpp"

#include <pathlock/engine.hpp>
#include <pathlock/metrics.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pathlock::redis {

class SwitchWatcher;

struct ClientOptions {
  RedisUrl url;
  Millis connect_timeout{2000};
  Millis command_timeout{2000};
  std::size_t pool_size = 4;  // per node
  // Replicas that must acknowledge an fcall given `acked` (WAIT replicas timeout,
  // timeout = command_timeout / 2, on the same connection right after it).
  // 0: no WAIT.
  int replicas = 0;
  RedisTlsOptions tls{};  // rediss:// URLs only (tls.hpp)
  // Where the client counts errors, retries, failovers and call latency
  // (nullptr: nowhere); must outlive the client.
  Metrics* metrics = nullptr;
  // Where its warnings go (nullptr: log_to_stderr).
  LogSink log{};
};

class RedisClient final : private SubscriptionHost {
 public:
  enum class Mode : std::uint8_t { standalone, cluster, sentinel };

  // Finds the topology and opens one data connection so a bad address, bad
  // credentials or a refused eviction policy fail here. Throws
  // InvalidRequest for bad options, BackendError otherwise.
  explicit RedisClient(ClientOptions options);
  ~RedisClient();
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  // Runs one command, routed by its first key (cluster.hpp: command_slot),
  // and returns its reply; an error reply is returned as Reply::Type::error.
  // Throws BackendError if the exchange failed.
  Reply call(const std::vector<std::string>& argv);
  // Like call, but an error reply throws BackendError too.
  Reply command(const std::vector<std::string>& argv);
  // The masters as the client knows them now: every master of the slot map
  // in cluster mode, else the one server (the master the sentinels named).
  std::vector<Endpoint> masters();
  // Runs one command on `node`, not routed: for commands that concern one
  // node, such as SCAN, whose keys are that node's. A pooled connection the
  // server had closed is replaced once; nothing is sent to another node.
  // Error replies are returned. Throws BackendError.
  Reply call_on(const Endpoint& node, const std::vector<std::string>& argv);

  // Registers Functions library `name` (Redis 7, `code` starts with
  // "#!lua name=<name>") and, when one node does not list it (FUNCTION
  // LIST), loads it there now (FUNCTION LOAD REPLACE), so broken code fails
  // here with BackendError. Any node that answers "Function not found" (one
  // never loaded, a new master after a failover or resharding, a restart,
  // FUNCTION FLUSH) gets it then, after which the FCALL is sent once more.
  // A user without FUNCTION rights therefore works once an administrator has
  // loaded the library; if it finds the library missing, the call fails
  // with a BackendError saying so.
  void load_library(const std::string& name, const std::string& code);
  // FCALL function, routed by keys[0]. An error reply throws BackendError.
  // With options.replicas > 0 and `acked` given, *acked is the number of
  // replicas that acknowledged (WAIT on the same connection right after the
  // call; 0 if WAIT failed); with replicas == 0, *acked is 0 and no WAIT runs.
  // With `deadline_at`, args[deadline_at] is replaced at every send by the
  // moment, on the server's clock, at which this client stops waiting for
  // the reply (Connection::server_deadline: now + command_timeout), or by ""
  // when the server's clock is unknown; a {"late", server_ms} reply (the
  // estimate was behind the server's clock: nothing was changed) corrects the
  // estimate and the call is sent once more (docs/lua-protocol.md#deadlines).
  Reply fcall(const std::string& function, const std::vector<std::string>& keys,
              const std::vector<std::string>& args, int* acked = nullptr,
              std::optional<std::size_t> deadline_at = std::nullopt);

  // Opens a dedicated connection and SSUBSCRIBEs it to `channel` on the node
  // serving the channel's slot: in place when this returns, so a message
  // published afterwards is never missed. Throws BackendError.
  std::unique_ptr<Subscription> subscribe(std::string channel);

  // Throws BackendError("redis at <server>: <what>").
  [[noreturn]] void fail(std::string_view what) const override;
  const std::string& server() const override { return server_; }
  Mode mode() const { return mode_; }
  int replicas() const { return options_.replicas; }
  // The node a key is routed to now (for tests and messages).
  Endpoint node_for(std::string_view key);

 private:
  struct Attempt;

  // SubscriptionHost: all a Subscription may use of the client.
  Endpoint node_for_slot(int slot) override { return target(slot); }
  void slot_moved(int slot, const Endpoint& node) override { slots_.assign(slot, node); }
  void relearn(Clock::time_point seen) override { rediscover(seen); }
  std::unique_ptr<Connection> open_listener(const Endpoint& node) override;
  Millis command_timeout() const override { return options_.command_timeout; }
  bool standalone() const override { return mode_ == Mode::standalone; }
  bool first_subscribe_refusal() override { return !warnings_.subscribe.exchange(true); }
  void warn(std::string_view message, std::vector<LogField> fields) const override {
    warnings_.warn(message, std::move(fields));
  }

  struct Missed;
  template <class Body>
  Reply routed(int slot, int* acked, Body&& body);
  void count_retry(RetryReason reason) const;
  void redirected(const Redirect& d, Missed& m);
  void not_run(const BackendError& e, bool unreachable, int attempt, Missed& m);
  void between_attempts(int slot, const Endpoint& node, const Missed& m, int attempt, Clock::time_point started,
                        Clock::time_point deadline, Millis& pause);
  Endpoint target(int slot);
  NodePool& pool(const Endpoint& node);
  // Learns the topology again (slot map or sentinels) unless that happened
  // after `seen`. Never throws: what it cannot learn stays as it was.
  void rediscover(Clock::time_point seen);
  void discover_cluster(const Endpoint& seed);
  std::optional<Reply> load_libraries_on(Attempt& x);
  int wait_replicas(Connection& c);

  ClientOptions options_;
  ConnectionSettings settings_;
  Warnings warnings_;
  std::string server_;  // the URL without credentials, for messages
  Mode mode_ = Mode::standalone;
  SlotMap slots_;

  std::mutex mutex_;  // guards master_, pools_, libraries_
  Endpoint master_;   // standalone and sentinel: where commands go
  std::map<std::string, std::unique_ptr<NodePool>> pools_;
  std::vector<std::pair<std::string, std::string>> libraries_;

  std::mutex refresh_mutex_;
  Clock::time_point refreshed_{};
  // A sentinel announced a switch, or (cluster) a node could not be reached:
  // the next call learns the topology again before it picks a node.
  std::atomic<bool> stale_{false};
  // Cluster: when each node last could not be reached (guarded by
  // refresh_mutex_); rediscover() asks such nodes last, so a master cut off
  // by a partition does not eat every call's time budget.
  std::map<std::string, Clock::time_point> unreachable_;

  std::unique_ptr<SwitchWatcher> watcher_;  // last: stopped first
};

}  // namespace pathlock::redis
