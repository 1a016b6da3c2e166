// The engine's one listener connection: see listener.hpp.
#include "postgres/listener.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <utility>

namespace pathlock::postgres {
namespace {

constexpr int kReconnectMs = 200;  // between two attempts to connect the listener

void drain(int fd) noexcept {
  std::uint64_t n = 0;
  (void)!::read(fd, &n, sizeof n);
}

// poll() on `fds`, restarted after a signal.
int wait_for(pollfd* fds, nfds_t count, int timeout_ms) noexcept {
  int n = 0;
  while ((n = ::poll(fds, count, timeout_ms)) < 0 && errno == EINTR) {
  }
  return n;
}

}  // namespace

bool Subscription::wait(std::chrono::steady_clock::time_point until, std::vector<std::string>& payloads) {
  std::unique_lock lock(mutex_);
  cv_.wait_until(lock, until, [&] { return interrupted_ || !payloads_.empty(); });
  if (interrupted_ || payloads_.empty()) return false;
  for (std::string& p : payloads_) payloads.push_back(std::move(p));
  payloads_.clear();
  return true;
}

void Subscription::interrupt() noexcept {
  {
    std::lock_guard lock(mutex_);
    interrupted_ = true;
  }
  cv_.notify_all();
}

void Subscription::deliver(const std::string& payload) {
  {
    std::lock_guard lock(mutex_);
    payloads_.push_back(payload);
  }
  cv_.notify_all();
}

Listener::Listener(Connect connect, Millis timeout)
    : connect_(std::move(connect)), timeout_(timeout), wake_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (wake_fd_ < 0) throw BackendError("postgres: cannot make the listener's eventfd");
}

Listener::~Listener() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  signal();
  if (thread_.joinable()) thread_.join();
  ::close(wake_fd_);
}

void Listener::signal() noexcept {
  const std::uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);
}

void Listener::subscribe(const std::shared_ptr<Subscription>& s) {
  std::unique_lock lock(mutex_);
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  subs_.emplace(s->ns(), s);
  signal();
  listening_.wait_for(lock, timeout_, [&] { return stopping_ || listened_.count(s->ns()) > 0; });
}

void Listener::unsubscribe(const std::shared_ptr<Subscription>& s) noexcept {
  std::lock_guard lock(mutex_);
  const auto [from, to] = subs_.equal_range(s->ns());
  for (auto it = from; it != to; ++it)
    if (it->second == s) {
      subs_.erase(it);
      break;
    }
  if (subs_.count(s->ns()) == 0) signal();  // UNLISTEN
}

void Listener::run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (!conn_ && !connect_and_listen(lock)) {
      pause_after_failure(lock);
      continue;
    }
    if (apply_changes(lock) && sleep_on_socket(lock)) continue;
    // The connection broke: everyone looks again, and it is replaced.
    lock.unlock();
    conn_.reset();
    lock.lock();
    listened_.clear();
    by_channel_.clear();
    lost_ = true;
    wake_all(lock);
  }
}

void Listener::pause_after_failure(std::unique_lock<std::mutex>& lock) {
  lock.unlock();
  pollfd p{wake_fd_, POLLIN, 0};
  if (wait_for(&p, 1, kReconnectMs) > 0) drain(wake_fd_);
  lock.lock();
}

bool Listener::connect_and_listen(std::unique_lock<std::mutex>& lock) {
  lock.unlock();
  std::unique_ptr<Connection> c;
  try {
    c = connect_();
  } catch (const std::exception&) {
  }
  lock.lock();
  if (!c) return false;
  conn_ = std::move(c);
  if (!apply_changes(lock)) {
    lock.unlock();
    conn_.reset();
    lock.lock();
    listened_.clear();
    by_channel_.clear();
    return false;
  }
  if (lost_) wake_all(lock);  // removals while no one listened were missed
  lost_ = false;
  return true;
}

// LISTENs on the namespaces subscribed to and not yet listened on, and
// UNLISTENs those no one waits in any more. False when the connection broke.
bool Listener::apply_changes(std::unique_lock<std::mutex>& lock) {
  std::vector<std::string> add;
  std::vector<std::pair<std::string, std::string>> drop;  // namespace, channel
  for (auto it = subs_.begin(); it != subs_.end(); it = subs_.upper_bound(it->first))
    if (listened_.count(it->first) == 0) add.push_back(it->first);
  for (auto it = listened_.begin(); it != listened_.end();)
    if (subs_.count(it->first) == 0) {
      drop.emplace_back(it->first, it->second);
      by_channel_.erase(it->second);
      it = listened_.erase(it);
    } else {
      ++it;
    }
  if (add.empty() && drop.empty()) return true;
  lock.unlock();
  std::vector<std::string> channels;
  try {
    for (const std::string& ns : add) {
      // Watched first (a row removals look for), then listened on.
      const Result ch = conn_->exec("SELECT pathlock.watch($1)", {ns}, timeout_);
      channels.emplace_back(PQgetvalue(ch.get(), 0, 0));
      conn_->exec(fmt::format("LISTEN \"{}\"", channels.back()), {}, timeout_);
    }
    for (const auto& [ns, channel] : drop) {
      conn_->exec(fmt::format("UNLISTEN \"{}\"", channel), {}, timeout_);
      conn_->exec("SELECT pathlock.unwatch($1)", {ns}, timeout_);
    }
  } catch (const std::exception&) {
    lock.lock();
    return false;
  }
  lock.lock();
  for (std::size_t i = 0; i < add.size(); ++i) {
    listened_[add[i]] = channels[i];
    by_channel_[channels[i]] = add[i];
  }
  listening_.notify_all();
  return true;
}

// Waits for notifications (or a change to make, or the stop) and hands
// them out. False when the connection broke.
bool Listener::sleep_on_socket(std::unique_lock<std::mutex>& lock) {
  lock.unlock();
  std::vector<Notification> notes;
  bool ok = conn_->read_notifications(notes);  // those that came with the replies first
  if (ok && notes.empty()) {
    pollfd fds[2] = {{conn_->socket(), POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (wait_for(fds, 2, -1) < 0) ok = false;
    if (fds[1].revents) drain(wake_fd_);
    if (ok && fds[0].revents) ok = conn_->read_notifications(notes);
  }
  lock.lock();
  dispatch(notes);
  return ok;
}

void Listener::dispatch(const std::vector<Notification>& notes) {
  for (const Notification& n : notes) {
    const auto ns = by_channel_.find(n.channel);
    if (ns == by_channel_.end()) continue;
    const auto [from, to] = subs_.equal_range(ns->second);
    for (auto it = from; it != to; ++it) it->second->deliver(n.payload);
  }
}

void Listener::wake_all(std::unique_lock<std::mutex>&) {
  for (auto& [ns, s] : subs_) s->deliver("");
}

}  // namespace pathlock::postgres
