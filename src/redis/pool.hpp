// A pool of data connections to one Redis node (one per master in cluster
// mode). At most `size` connections, opened lazily, shared by any number of
// threads: a call borrows one for its whole exchange (NodePool::Lease) and
// gives it back; a connection whose exchange did not finish is closed, never
// reused. A borrow that finds every connection busy waits up to
// connect_timeout + 2 x command_timeout, then throws BackendError.
#pragma once

#include "redis/connection.hpp"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace pathlock::redis {

class NodePool {
 public:
  NodePool(Endpoint node, const ConnectionSettings& settings, std::size_t size, Warnings& warnings);
  ~NodePool();
  NodePool(const NodePool&) = delete;
  NodePool& operator=(const NodePool&) = delete;

  class Lease {
   public:
    Lease(NodePool& pool, std::unique_ptr<Connection> c) : pool_(&pool), c_(std::move(c)) {}
    ~Lease() {
      if (c_) pool_->give_back(std::move(c_));
    }
    Lease(Lease&& other) noexcept = default;
    Lease& operator=(Lease&&) = delete;
    Connection& operator*() const { return *c_; }
    Connection* operator->() const { return c_.get(); }
    NodePool& pool() const { return *pool_; }

   private:
    NodePool* pool_;
    std::unique_ptr<Connection> c_;
  };

  // Borrows a connection: an idle one that still looks open, or (fresh, or
  // none idle) a new one. Throws Unreachable or BackendError.
  Lease take(bool fresh);
  // Adds an already opened connection to the idle ones (the client's first).
  void adopt(std::unique_ptr<Connection> c);
  const Endpoint& node() const { return node_; }

 private:
  void give_back(std::unique_ptr<Connection> c);

  const Endpoint node_;
  const ConnectionSettings& settings_;
  const std::size_t size_;
  Warnings& warnings_;
  std::mutex mutex_;
  std::condition_variable returned_;
  std::vector<std::unique_ptr<Connection>> idle_;
  std::size_t open_ = 0;  // idle + borrowed + being opened
};

}  // namespace pathlock::redis
