// Wake-up subscriptions: SSUBSCRIBE on the slot's node, following the slot.
// See subscription.hpp.
//
// Life of the connection: open (AUTH, SELECT, PING, SETNAME), SSUBSCRIBE
// with its confirmation read with the command timeout (the library
// publishes with SPUBLISH only), then
// only poll() (or the TLS layer's buffer) + reads of what is there, until the destructor closes
// it. Nothing else is ever sent on it.
#include "redis/subscription.hpp"

#include "core/waiting.hpp"

#include "redis/cluster.hpp"
#include "redis/connection.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <thread>

namespace pathlock::redis {
namespace {

// Thrown inside this file when the subscription broke or lost its slot.
struct Broken {};

}  // namespace

Subscription::Subscription(SubscriptionHost& client, std::string channel)
    : client_(client), channel_(std::move(channel)), slot_(key_slot(channel_)) {
  open();
}

Subscription::~Subscription() = default;

std::string Subscription::node() const { return conn_ ? conn_->node().describe() : std::string(); }

void Subscription::refused(const std::string& why) {
  // An ACL user without channel rights (Redis 7 creates users with
  // resetchannels), or SSUBSCRIBE renamed away: wait without wake-ups.
  conn_.reset();
  if (client_.first_subscribe_refusal())
    client_.warn(fmt::format("redis at {}: SSUBSCRIBE {} refused ({}); waiting requests only re-check on a "
                             "timer. Grant the user the channels pl:* (ACL SETUSER ... &pl:*)",
                             client_.server(), channel_, why),
                 {{"event", "ssubscribe_refused"}, {"server", client_.server()}, {"channel", channel_}});
}

void Subscription::open() {
  using Clock = std::chrono::steady_clock;
  conn_.reset();
  const auto deadline = Clock::now() + client_.command_timeout();
  Millis pause{5};
  while (true) {
    const auto started = Clock::now();
    const Endpoint node = client_.node_for_slot(slot_);
    std::string why;
    try {
      std::unique_ptr<Connection> c = client_.open_listener(node);
      c->send({"SSUBSCRIBE", channel_});
      const Reply r = c->receive("SSUBSCRIBE");
      if (!r.is_error()) {
        if (r.type != Reply::Type::array || r.elements.size() != 3 || r.elements[0].str != "ssubscribe")
          c->fail(fmt::format("unexpected reply to SSUBSCRIBE {}", channel_));
        conn_ = std::move(c);
        return;
      }
      const Redirect d = parse_redirect(r.str, node);
      if (d.kind == Redirect::Kind::none) return refused(r.str);
      if (d.kind == Redirect::Kind::moved || d.kind == Redirect::Kind::ask) client_.slot_moved(d.slot, d.node);
      why = r.str;
    } catch (const Unreachable& e) {
      if (client_.standalone()) throw;
      why = e.what();
    } catch (const NotSent& e) {
      why = e.what();
    }
    if (Clock::now() >= deadline) client_.fail(fmt::format("cannot subscribe to {}: {}", channel_, why));
    client_.relearn(started);
    std::this_thread::sleep_for(std::min(pause, std::chrono::ceil<Millis>(deadline - Clock::now())));
    pause = std::min(pause * 2, Millis{200});
  }
}

bool Subscription::drain(std::vector<std::string>& payloads) {
  bool got = false;
  while (true) {
    std::optional<Reply> reply;
    try {
      reply = conn_->buffered_reply();
    } catch (const BackendError&) {
      throw Broken{};  // protocol error
    }
    if (!reply) return got;
    const Reply& r = *reply;
    if (r.is_error()) throw Broken{};
    if (r.type != Reply::Type::array || r.elements.empty()) continue;
    const std::string& kind = r.elements[0].str;
    // ["smessage", channel, payload] (or "message" from a classic PUBLISH by
    // another client on the same name)
    if ((kind == "smessage" || kind == "message") && r.elements.size() == 3) {
      payloads.push_back(r.elements[2].str);
      got = true;
    }
    // The slot moved away (resharding, or this node became a replica).
    if (kind == "sunsubscribe") throw Broken{};
  }
}

Subscription::Wake Subscription::wait(Millis timeout, std::vector<std::string>& payloads,
                                      const core::Interrupt* interrupt) {
  using Clock = std::chrono::steady_clock;
  const auto ms = [](long long n) { return static_cast<int>(std::min<long long>(n, INT_MAX)); };
  if (!conn_) {
    if (!interrupt) {
      std::this_thread::sleep_for(timeout);
      return Wake::timeout;
    }
    interrupt->sleep_for(ms(timeout.count()));
    return interrupt->raised() ? Wake::interrupted : Wake::timeout;
  }
  const Clock::time_point deadline = Clock::now() + timeout;
  const int wake_fd = interrupt ? interrupt->fd() : -1;
  try {
    if (drain(payloads)) return Wake::message;  // already read with an earlier batch
    while (true) {
      if (interrupt && interrupt->raised()) return Wake::interrupted;
      const auto left = std::chrono::ceil<Millis>(deadline - Clock::now()).count();
      if (left <= 0) return Wake::timeout;
      if (!conn_->wait_readable(ms(left), wake_fd)) return Wake::timeout;
      if (interrupt && interrupt->raised()) return Wake::interrupted;
      // Data (or EOF/error) is there: this read does not block.
      if (!conn_->read_available()) throw Broken{};
      if (drain(payloads)) return Wake::message;
      // Part of a message only: wait for the rest.
    }
  } catch (const Broken&) {
    open();  // throws BackendError if no node serves the slot in time
    return Wake::reopened;
  }
}

void sleep_until_woken(Subscription& listener, std::chrono::steady_clock::time_point until,
                       const core::ResolvedRequest& req, const core::Interrupt* interrupt) {
  std::vector<std::string> payloads;
  while (true) {
    const Millis left = std::chrono::ceil<Millis>(until - std::chrono::steady_clock::now());
    if (left <= Millis{0}) return;
    payloads.clear();
    if (listener.wait(left, payloads, interrupt) != Subscription::Wake::message) return;
    if (core::wake_concerns(payloads, req)) return;
  }
}

}  // namespace pathlock::redis
