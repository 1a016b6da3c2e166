// The acquire function's arguments by name: the one definition the engine
// builds its calls from and the contract publishes (contract.hpp, the
// "functions" entry of acquire; docs/lua-protocol.md#acquire). Replies have
// theirs in replies.hpp.
//
// The arguments are kHead in order, then one path per role of the
// operation (role order: the name "path..."), then kTail, every optional
// group, all of them on every call: every client
// sends the same shape (docs/lua-protocol.md#arguments-by-name).
//
// Header-only, private to the Redis backend.
#pragma once

#include <array>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace pathlock::redis::acquire_args {

inline constexpr std::array<std::string_view, 8> kHead{
    "owner", "op", "ttl_ms", "new_id", "new_token", "reenter_id", "reenter_token", "idempotency_key"};
inline constexpr std::string_view kPaths = "path...";
// After the paths: the optional groups, in order (fair, waiter_id and
// reserve_ms; deadline_ms; default_limits), each a protocol version's
// addition, all sent on every call.
inline constexpr std::array<std::string_view, 5> kTail{"fair", "waiter_id", "reserve_ms", "deadline_ms",
                                                       "default_limits"};
inline constexpr std::array<std::size_t, 3> kTailGroups{3, 1, 1};

// The values of one acquire call, by name.
struct Values {
  std::string owner, op, ttl_ms, new_id, new_token, reenter_id, reenter_token, idempotency_key;
  std::vector<std::string> paths;
  bool fair = true;
  std::string waiter_id;       // "" when the request takes no place in line
  long long reserve_ms = 0;    // set per attempt (Call::set_reserve)
  std::string deadline_ms;     // set per send (RedisClient::fcall)
  std::string default_limits;  // pl:limits' text, "" when none
};

// The position of argument `name` in a call with `paths` paths; throws for
// a name the layout does not hold (a bug).
constexpr std::size_t index_of(std::string_view name, std::size_t paths) {
  for (std::size_t i = 0; i < kHead.size(); ++i)
    if (kHead[i] == name) return i;
  for (std::size_t i = 0; i < kTail.size(); ++i)
    if (kTail[i] == name) return kHead.size() + paths + i;
  throw std::logic_error("acquire has no argument of that name");
}

// One call's arguments, with the per-attempt and per-send fields by name.
class Call {
 public:
  explicit Call(Values v) : paths_(v.paths.size()) {
    argv_ = {std::move(v.owner),      std::move(v.op),         std::move(v.ttl_ms),        std::move(v.new_id),
             std::move(v.new_token),  std::move(v.reenter_id), std::move(v.reenter_token), std::move(v.idempotency_key)};
    for (std::string& p : v.paths) argv_.push_back(std::move(p));
    argv_.push_back(v.fair ? "1" : "0");
    argv_.push_back(std::move(v.waiter_id));
    argv_.push_back(std::to_string(v.reserve_ms));
    argv_.push_back(std::move(v.deadline_ms));
    argv_.push_back(std::move(v.default_limits));
  }
  const std::vector<std::string>& argv() const { return argv_; }
  const std::string& at(std::string_view name) const { return argv_.at(index_of(name, paths_)); }
  void set_reserve(long long ms) { argv_.at(index_of("reserve_ms", paths_)) = std::to_string(ms); }
  std::size_t deadline_index() const { return index_of("deadline_ms", paths_); }

 private:
  std::size_t paths_;
  std::vector<std::string> argv_;
};

}  // namespace pathlock::redis::acquire_args
