// The listener of a PostgreSQL engine: ONE connection (application name
// "pathlock-listener") that LISTENs on the channels of every namespace in
// which a call of the engine waits, read by one thread that hands each
// notification to the waiting calls of its namespace. Private to the
// library (postgres_engine.cpp; docs/postgres.md#waiting).
//
// - A waiting call makes a Subscription and subscribe()s it to its
//   namespace: the first subscription of a namespace has the thread LISTEN
//   on its channel (pathlock.channel(ns)), and subscribe() returns once the
//   LISTEN is in force, so the call's next attempt sees every removal made
//   after it or is woken by it. The last unsubscribe() of a namespace
//   UNLISTENs.
// - Subscription::wait() sleeps on a condition variable until a
//   notification of its namespace, its deadline, or interrupt() (a stop,
//   from any thread, never blocking on the network).
// - A broken listener connection wakes every subscription with "look
//   again" (the empty payload) and is replaced, every 200 ms until it
//   connects; the new connection LISTENs on every subscribed namespace and
//   then wakes every subscription once more (a removal between the two was
//   not seen). Meanwhile waiting calls re-check on the shared policy's
//   timer: slower, never wrong.
// - The thread starts with the first subscription and stops with the
//   Listener. A child forked after it started must never touch it (its
//   thread is not in the child): the engine leaks it and makes a new one.
#pragma once

#include "postgres/connection.hpp"

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace pathlock::postgres {

class Listener;

// One waiting call's mailbox.
class Subscription {
 public:
  explicit Subscription(std::string ns) : ns_(std::move(ns)) {}
  // Waits until a notification (its payloads are moved to `payloads`:
  // true), `until` or an interrupt (false).
  bool wait(std::chrono::steady_clock::time_point until, std::vector<std::string>& payloads);
  // Cuts the current wait short, and every later one.
  void interrupt() noexcept;
  const std::string& ns() const noexcept { return ns_; }

 private:
  friend class Listener;
  void deliver(const std::string& payload);

  const std::string ns_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::string> payloads_;
  bool interrupted_ = false;
};

class Listener {
 public:
  using Connect = std::function<std::unique_ptr<Connection>()>;
  Listener(Connect connect, Millis timeout);
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  // Registers `s`; returns once its namespace is LISTENed on, or after the
  // command timeout when the database cannot be reached (then `s` is woken
  // when the listener connects again).
  void subscribe(const std::shared_ptr<Subscription>& s);
  void unsubscribe(const std::shared_ptr<Subscription>& s) noexcept;

 private:
  void run();
  void pause_after_failure(std::unique_lock<std::mutex>& lock);
  bool connect_and_listen(std::unique_lock<std::mutex>& lock);
  bool apply_changes(std::unique_lock<std::mutex>& lock);
  bool sleep_on_socket(std::unique_lock<std::mutex>& lock);
  void dispatch(const std::vector<Notification>& notes);
  void wake_all(std::unique_lock<std::mutex>& lock);
  void signal() noexcept;

  const Connect connect_;
  const Millis timeout_;
  int wake_fd_ = -1;  // eventfd: a change for the thread to make, or stop
  std::mutex mutex_;
  std::condition_variable listening_;  // a LISTEN came into force
  std::multimap<std::string, std::shared_ptr<Subscription>> subs_;  // by namespace
  std::map<std::string, std::string> listened_;                     // namespace -> channel, in force
  std::map<std::string, std::string> by_channel_;                   // channel -> namespace
  std::unique_ptr<Connection> conn_;  // the thread's
  std::thread thread_;
  bool stopping_ = false;
  bool lost_ = false;  // a connection broke: wake everyone once listening again
};

}  // namespace pathlock::postgres
