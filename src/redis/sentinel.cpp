// Sentinel discovery and the +switch-master watcher; see sentinel.hpp.
#include "redis/sentinel.hpp"

#include <fmt/format.h>

#include <charconv>
#include <chrono>

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

SwitchWatcher::SwitchWatcher(const RedisUrl& url, const ConnectionSettings& settings, Warnings& warnings,
                             std::function<void()> on_switch)
    : url_(url), settings_(settings), warnings_(warnings), on_switch_(std::move(on_switch)) {
  thread_ = std::thread([this] { run(); });
}

SwitchWatcher::~SwitchWatcher() {
  stop_ = true;
  thread_.join();
}

void SwitchWatcher::run() {
  constexpr int kTick = 100;  // ms between checks of stop_
  const std::string prefix = url_.master_name + " ";
  for (std::size_t next = 0; !stop_; ++next) {
    const Endpoint& sentinel = url_.nodes[next % url_.nodes.size()];
    try {
      auto c = Connection::open(sentinel, settings_, Connection::Role::sentinel, warnings_);
      c->send({"SUBSCRIBE", "+switch-master"});
      if (c->receive("SUBSCRIBE").is_error()) throw BackendError("SUBSCRIBE refused");
      while (!stop_) {
        if (!c->wait_readable(kTick)) continue;
        if (!c->read_available()) break;
        while (const std::optional<Reply> m = c->buffered_reply()) {
          // ["message", "+switch-master", "NAME old-ip old-port new-ip new-port"]
          if (m->type == Reply::Type::array && m->elements.size() == 3 && m->elements[2].str.rfind(prefix, 0) == 0)
            on_switch_();
        }
      }
    } catch (const BackendError&) {
    }
    // Lost or no sentinel: messages may have been missed, so look again.
    if (!stop_) on_switch_();
    for (int i = 0; i < 5 && !stop_; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(kTick));
  }
}

}  // namespace pathlock::redis
