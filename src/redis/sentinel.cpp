// Sentinel discovery and the +switch-master watcher; see sentinel.hpp.
#include "redis/sentinel.hpp"

#include <fmt/format.h>

#include <charconv>
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace pathlock::redis {

Endpoint ask_sentinels(const RedisUrl& url, const ConnectionSettings& settings, Warnings& warnings) {
  std::string errors;
  for (const Endpoint& sentinel : url.nodes) {
    try {
      auto c = Connection::open(sentinel, settings, Connection::Role::sentinel, warnings);
      const Reply r = c->exchange({"SENTINEL", "get-master-addr-by-name", url.master_name});
      if (r.type == Reply::Type::array && r.elements.size() == 2) {
        int port = 0;
        const std::string& p = r.elements[1].str;
        if (std::from_chars(p.data(), p.data() + p.size(), port).ec == std::errc() && port > 0)
          return Endpoint{r.elements[0].str, port};
      }
      errors += fmt::format("; sentinel {}: {}", sentinel.describe(),
                            r.is_error() ? r.str : fmt::format("does not know master '{}'", url.master_name));
    } catch (const BackendError& e) {
      errors += fmt::format("; {}", e.what());
    }
  }
  throw Unreachable(fmt::format("redis at {}: no sentinel named the master{}", url.describe(), errors));
}

struct SwitchWatcher::State {
  State(const RedisUrl& u, const ConnectionSettings& s, std::function<void()> f)
      : url(u), settings(s), on_switch(std::move(f)) {}
  const RedisUrl url;  // copies: the thread may outlive the client
  const ConnectionSettings settings;
  Warnings warnings;
  std::function<void()> on_switch;  // called under `mutex`, never once `stop` is set
  std::mutex mutex;
  std::condition_variable ended;
  bool stop = false;  // guarded by mutex
  bool done = false;  // the thread has returned from run; guarded by mutex

  bool stopping() {
    std::lock_guard guard(mutex);
    return stop;
  }
  void notify() {
    std::lock_guard guard(mutex);
    if (!stop) on_switch();
  }
  void run();
};

SwitchWatcher::SwitchWatcher(const RedisUrl& url, const ConnectionSettings& settings, std::function<void()> on_switch)
    : state_(std::make_shared<State>(url, settings, std::move(on_switch))) {
  thread_ = std::thread([state = state_] {
    state->run();
    std::lock_guard guard(state->mutex);
    state->done = true;
    state->ended.notify_all();
  });
}

SwitchWatcher::~SwitchWatcher() {
  std::unique_lock lock(state_->mutex);
  state_->stop = true;
  const bool done = state_->ended.wait_for(lock, kStopWait, [&] { return state_->done; });
  lock.unlock();
  // A thread still inside a connect or a read ends on its own (the state is
  // shared): it sees `stop` when that returns and calls nothing more.
  if (done)
    thread_.join();
  else
    thread_.detach();
}

void SwitchWatcher::State::run() {
  constexpr int kTick = static_cast<int>(kStopWait.count() / 2);  // ms between checks of stop
  const std::string prefix = url.master_name + " ";
  for (std::size_t next = 0; !stopping(); ++next) {
    const Endpoint& sentinel = url.nodes[next % url.nodes.size()];
    try {
      auto c = Connection::open(sentinel, settings, Connection::Role::sentinel, warnings);
      c->send({"SUBSCRIBE", "+switch-master"});
      if (c->receive("SUBSCRIBE").is_error()) throw BackendError("SUBSCRIBE refused");
      while (!stopping()) {
        if (!c->wait_readable(kTick)) continue;
        if (!c->read_available()) break;
        while (const std::optional<Reply> m = c->buffered_reply()) {
          // ["message", "+switch-master", "NAME old-ip old-port new-ip new-port"]
          if (m->type == Reply::Type::array && m->elements.size() == 3 && m->elements[2].str.rfind(prefix, 0) == 0)
            notify();
        }
      }
    } catch (const BackendError&) {
    }
    // Lost or no sentinel: messages may have been missed, so look again.
    notify();
    for (int i = 0; i < 10 && !stopping(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(kTick));
  }
}

}  // namespace pathlock::redis
