// The wake-up subscription of one waiting call.
//
// A waiting acquire listens on a dedicated connection of its own, opened
// outside the pools (waiters can never exhaust the connections attempts
// need) and closed when the wait ends; a connection in subscribe mode is
// never pooled or reused. It SSUBSCRIBEs (sharded pub/sub, Redis 7) to the
// channel on the node that serves the channel's slot, in standalone mode
// too: the library publishes wake-ups with SPUBLISH, which reaches only the
// shard that owns the namespace, not every node of a cluster. Messages are read with poll() and a timeout
// (Connection::wait_readable, which also sees bytes buffered inside TLS),
// never with receive(), so a quiet channel is not a command timeout.
//
// Following the slot: when the slot moves away, Redis ends the sharded
// subscription with an "sunsubscribe" push; when the node fails, the
// connection breaks. Either way wait() opens the subscription again on the
// node that serves the slot now and returns `reopened`: messages may have
// been lost, so the caller looks again. It never strands a waiter, whose
// timed re-check stays in any case.
//
// Thread safety: one Subscription belongs to one thread.
#pragma once

#include <pathlock/redis_url.hpp>

#include "core/interrupt.hpp"
#include "core/request.hpp"

#include <pathlock/engine.hpp>
#include <pathlock/metrics.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace pathlock::redis {

class Connection;

// What a Subscription needs of the client it belongs to, and nothing more:
// where a slot is served now, what a redirect taught, learning the
// topology again, and a listener connection with the client's settings.
// RedisClient implements it.
class SubscriptionHost {
 public:
  using Clock = std::chrono::steady_clock;
  // The node that serves `slot` now.
  virtual Endpoint node_for_slot(int slot) = 0;
  // A MOVED or ASK reply said `node` serves `slot`.
  virtual void slot_moved(int slot, const Endpoint& node) = 0;
  // Learn the topology again unless that happened after `seen`; never throws.
  virtual void relearn(Clock::time_point seen) = 0;
  // A connection of role listener to `node`, with the client's settings.
  virtual std::unique_ptr<Connection> open_listener(const Endpoint& node) = 0;
  // How long to try (re)opening the subscription; one server only (an
  // unreachable node is then final).
  virtual Millis command_timeout() const = 0;
  virtual bool standalone() const = 0;
  // True the first time only: warn once per client about a refused SSUBSCRIBE.
  virtual bool first_subscribe_refusal() = 0;
  // A warning, through the client's log sink.
  virtual void warn(std::string_view message, std::vector<LogField> fields) const = 0;
  // Throws BackendError("redis at <server>: <what>").
  [[noreturn]] virtual void fail(std::string_view what) const = 0;
  virtual const std::string& server() const = 0;

 protected:
  ~SubscriptionHost() = default;
};

class Subscription {
 public:
  enum class Wake : std::uint8_t {
    timeout,   // nothing arrived in time
    message,   // one or more messages arrived; their payloads were appended
    reopened,  // the subscription broke or its slot moved and it was opened
               // again: messages may have been lost, so look again
    interrupted,  // the caller's Interrupt was raised
  };
  ~Subscription();
  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;

  // Waits up to `timeout` for messages on the channel and appends their
  // payloads to `payloads`. When the server refuses the subscription (an
  // ACL without channel rights, SSUBSCRIBE renamed) it only sleeps: the
  // caller's timed re-checks still work, without quick wake-ups. Throws
  // BackendError if a broken subscription cannot be opened again within
  // the command timeout.
  // A raised `interrupt` ends the wait at once (Wake::interrupted).
  Wake wait(Millis timeout, std::vector<std::string>& payloads, const core::Interrupt* interrupt = nullptr);

  // The node it listens on ("host:port"; empty when refused).
  std::string node() const;

  // Opens the subscription (see RedisClient::subscribe).
  Subscription(SubscriptionHost& client, std::string channel);

 private:
  void open();
  void refused(const std::string& why);
  bool drain(std::vector<std::string>& payloads);  // buffered messages only

  SubscriptionHost& client_;
  std::string channel_;
  int slot_;
  std::unique_ptr<Connection> conn_;  // null: the server refused the subscription
};

// Sleeps until `until`, or until a message on the wake channel names a path
// that overlaps one of the request's targets (only such a removal can let it
// in), or the subscription had to be reopened (messages may have been lost).
// An empty payload (another client's bare wake-up) also wakes.
void sleep_until_woken(Subscription& listener, std::chrono::steady_clock::time_point until,
                       const core::ResolvedRequest& req, const core::Interrupt* interrupt);

}  // namespace pathlock::redis
