// The slot map of a Redis Cluster, as the client sees it: which master
// serves each of the 16384 slots, and the redirections that change it.
//
// The map is loaded from CLUSTER SLOTS (Redis 3+; every master range with
// its master first) and patched by MOVED replies between loads. It may be
// stale (a slot moved, a replica took over): the node then answers MOVED,
// the client patches the slot, reloads the whole map (a failover moves all
// of a master's slots at once) and sends the command again; a command that
// got MOVED did not run. A slot that no known master serves routes to any
// master, whose MOVED then teaches the owner.
//
// parse_redirect() classifies the error replies after which a command
// provably did not run and may go elsewhere: MOVED, ASK, TRYAGAIN,
// CLUSTERDOWN, READONLY (a master demoted to replica), LOADING, MASTERDOWN.
//
// Thread safety: SlotMap is internally locked; the rest are pure functions.
#pragma once

#include "redis/connection.hpp"
#include "redis/slot.hpp"

#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

namespace pathlock::redis {

class SlotMap {
 public:
  SlotMap();
  // The master serving `slot`, if known.
  std::optional<Endpoint> owner(int slot) const;
  // Every master known to serve a slot, in map order.
  std::vector<Endpoint> masters() const;
  // Replaces the map with a CLUSTER SLOTS reply got from `asked` (whose
  // address stands in for a node that reports an empty host). Throws
  // BackendError if the reply is malformed; the map is then unchanged.
  void load(const Reply& cluster_slots, const Endpoint& asked);
  // Records that `slot` moved to `node` (a MOVED reply).
  void assign(int slot, const Endpoint& node);

 private:
  mutable std::mutex mutex_;
  std::vector<Endpoint> nodes_;
  std::array<std::int16_t, kSlotCount> owner_;  // index into nodes_, -1 unknown
};

struct Redirect {
  enum class Kind : std::uint8_t {
    none,       // not a redirection: the reply stands
    moved,      // the slot lives on `node` now
    ask,        // this one command goes to `node`, after ASKING
    busy,       // TRYAGAIN, CLUSTERDOWN, LOADING, MASTERDOWN: wait, then again
    read_only,  // the node is a replica now: find the master again
  };
  Kind kind = Kind::none;
  int slot = -1;
  Endpoint node;
};

// Classifies an error reply; `from` is the node that sent it (MOVED/ASK with
// an empty host mean that node's host).
Redirect parse_redirect(const std::string& error, const Endpoint& from);

// The slot a command is routed by: that of its first key, or -1 for a
// command without keys (any node). Knows the key positions of EVAL, EVALSHA,
// FCALL(_RO), of keyless commands, and otherwise takes argv[1].
int command_slot(const std::vector<std::string>& argv);

}  // namespace pathlock::redis
