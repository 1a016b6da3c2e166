// Slot map, redirect parsing and key positions; see cluster.hpp.
#include "redis/cluster.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <set>
#include <string_view>

namespace pathlock::redis {
namespace {

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  return out;
}

// "host:port" (host may be empty or an IPv6 address without brackets).
std::optional<Endpoint> parse_address(std::string_view text, const Endpoint& from) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::string_view port_text = text.substr(colon + 1);
  // Redis 7 may append the cluster bus port ("host:port@bus").
  port_text = port_text.substr(0, port_text.find('@'));
  int port = 0;
  const auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port <= 0 || port > 65535)
    return std::nullopt;
  std::string host(text.substr(0, colon));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty()) host = from.host;
  return Endpoint{std::move(host), port};
}

}  // namespace

SlotMap::SlotMap() { owner_.fill(-1); }

std::optional<Endpoint> SlotMap::owner(int slot) const {
  std::lock_guard guard(mutex_);
  if (slot < 0 || slot >= kSlotCount || owner_[static_cast<std::size_t>(slot)] < 0) return std::nullopt;
  return nodes_[static_cast<std::size_t>(owner_[static_cast<std::size_t>(slot)])];
}

std::vector<Endpoint> SlotMap::masters() const {
  std::lock_guard guard(mutex_);
  std::vector<bool> used(nodes_.size(), false);
  for (const std::int16_t i : owner_)
    if (i >= 0) used[static_cast<std::size_t>(i)] = true;
  std::vector<Endpoint> out;
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    if (used[i]) out.push_back(nodes_[i]);
  return out;
}

void SlotMap::load(const Reply& reply, const Endpoint& asked) {
  if (reply.type != Reply::Type::array) throw BackendError("redis cluster: CLUSTER SLOTS did not return an array");
  std::vector<Endpoint> nodes;
  std::array<std::int16_t, kSlotCount> owner;
  owner.fill(-1);
  for (const Reply& range : reply.elements) {
    // [start, end, [host, port, id, ...], replicas...]
    const long long start = range.at(0).number(), end = range.at(1).number();
    const Reply& master = range.at(2);
    if (start < 0 || end >= kSlotCount || start > end)
      throw BackendError(fmt::format("redis cluster: CLUSTER SLOTS range {}-{} is out of bounds", start, end));
    Endpoint node{master.at(0).text(), static_cast<int>(master.at(1).number())};
    if (node.host.empty() || node.host == "?") node.host = asked.host;
    auto it = std::find(nodes.begin(), nodes.end(), node);
    if (it == nodes.end()) it = nodes.insert(nodes.end(), std::move(node));
    const auto index = static_cast<std::int16_t>(it - nodes.begin());
    for (long long s = start; s <= end; ++s) owner[static_cast<std::size_t>(s)] = index;
  }
  std::lock_guard guard(mutex_);
  nodes_ = std::move(nodes);
  owner_ = owner;
}

void SlotMap::assign(int slot, const Endpoint& node) {
  if (slot < 0 || slot >= kSlotCount) return;
  std::lock_guard guard(mutex_);
  auto it = std::find(nodes_.begin(), nodes_.end(), node);
  if (it == nodes_.end()) it = nodes_.insert(nodes_.end(), node);
  owner_[static_cast<std::size_t>(slot)] = static_cast<std::int16_t>(it - nodes_.begin());
}

Redirect parse_redirect(const std::string& error, const Endpoint& from) {
  Redirect out;
  const std::string_view e = error;
  const std::string_view word = e.substr(0, e.find(' '));
  if (word == "MOVED" || word == "ASK") {
    // "MOVED 3999 127.0.0.1:6381"
    const std::size_t a = e.find(' '), b = e.find(' ', a + 1);
    if (b == std::string_view::npos) return out;
    int slot = -1;
    const std::string_view slot_text = e.substr(a + 1, b - a - 1);
    if (std::from_chars(slot_text.data(), slot_text.data() + slot_text.size(), slot).ec != std::errc()) return out;
    const std::optional<Endpoint> node = parse_address(e.substr(b + 1), from);
    if (!node || slot < 0 || slot >= kSlotCount) return out;
    out.kind = word == "MOVED" ? Redirect::Kind::moved : Redirect::Kind::ask;
    out.slot = slot;
    out.node = *node;
  } else if (word == "TRYAGAIN" || word == "CLUSTERDOWN" || word == "LOADING" || word == "MASTERDOWN") {
    out.kind = Redirect::Kind::busy;
  } else if (word == "READONLY") {
    out.kind = Redirect::Kind::read_only;
  }
  return out;
}

// Commands without a key. Made when the library is loaded, never at a first
// call (docs/design.md#fork).
const std::set<std::string, std::less<>> keyless{
    "PING",   "INFO",  "TIME",    "SCRIPT", "FUNCTION", "CLUSTER", "CONFIG",  "CLIENT", "COMMAND", "DBSIZE",
    "ECHO",   "HELLO", "AUTH",    "SELECT", "ROLE",     "WAIT",    "ACL",     "MEMORY", "SLOWLOG", "LATENCY",
    "PUBLISH", "SCAN", "FLUSHDB", "FLUSHALL", "LASTSAVE", "SAVE",  "BGSAVE",  "DEBUG",  "RANDOMKEY", "READONLY",
    "READWRITE", "ASKING", "MULTI", "EXEC", "DISCARD", "SENTINEL", "PUBSUB",  "SHUTDOWN"};

int command_slot(const std::vector<std::string>& argv) {
  if (argv.size() < 2) return -1;
  const std::string name = upper(argv[0]);
  if (keyless.count(name)) return -1;
  if (name == "EVAL" || name == "EVALSHA" || name == "EVAL_RO" || name == "EVALSHA_RO" || name == "FCALL" ||
      name == "FCALL_RO") {
    if (argv.size() < 4 || argv[2] == "0") return -1;
    return key_slot(argv[3]);
  }
  return key_slot(argv[1]);
}

}  // namespace pathlock::redis
