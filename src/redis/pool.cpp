// Connection pool of one node; see pool.hpp.
#include "redis/pool.hpp"

#include <fmt/format.h>

#include <chrono>

namespace pathlock::redis {

NodePool::NodePool(Endpoint node, const ConnectionSettings& settings, std::size_t size, Warnings& warnings)
    : node_(std::move(node)), settings_(settings), size_(size), warnings_(warnings) {}

NodePool::~NodePool() = default;

void NodePool::adopt(std::unique_ptr<Connection> c) {
  std::lock_guard guard(mutex_);
  ++open_;
  idle_.push_back(std::move(c));
}

NodePool::Lease NodePool::take(bool fresh) {
  std::unique_lock lock(mutex_);
  const auto wait_limit = settings_.connect_timeout + settings_.command_timeout * 2;
  const auto deadline = std::chrono::steady_clock::now() + wait_limit;
  while (true) {
    // Reuse an idle connection that still looks open; for a fresh one, close
    // idle ones only as far as needed to make room.
    while (!idle_.empty() && (!fresh || open_ >= size_)) {
      std::unique_ptr<Connection> c = std::move(idle_.back());
      idle_.pop_back();
      if (!fresh && c->looks_open()) return Lease(*this, std::move(c));
      c.reset();  // closed by the server, or making room for a fresh one
      --open_;
    }
    if (open_ < size_) {
      ++open_;
      lock.unlock();
      try {
        return Lease(*this, Connection::open(node_, settings_, Connection::Role::data, warnings_));
      } catch (...) {
        lock.lock();
        --open_;
        returned_.notify_one();
        throw;
      }
    }
    if (returned_.wait_until(lock, deadline) == std::cv_status::timeout && idle_.empty() && open_ >= size_)
      throw BackendError(fmt::format("redis at {}/{}: connection pool exhausted: all {} connections (pool_size) "
                                     "stayed busy for {} ms; nothing was sent. Raise pool_size or lower the "
                                     "number of concurrent calls",
                                     node_.describe(), settings_.db, size_, wait_limit.count()));
  }
}

void NodePool::give_back(std::unique_ptr<Connection> c) {
  std::lock_guard guard(mutex_);
  if (!c->broken()) {
    idle_.push_back(std::move(c));
  } else {
    c.reset();
    --open_;
  }
  returned_.notify_one();
}

}  // namespace pathlock::redis
