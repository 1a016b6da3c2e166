// The client facade: topology discovery, routing with the retry rule,
// scripts, Functions libraries and WAIT. See redis_client.hpp.
//
// Extending: a new redirect-like reply (one after which the command did not
// run) goes into parse_redirect (cluster.cpp) and its handling into
// routed() below; a new deployment kind gets a Mode, its discovery in the
// constructor and rediscover(), and its choice of node in target().
#include "redis/redis_client.hpp"

#include "redis/sentinel.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include <algorithm>
#include <thread>

namespace pathlock::redis {

// One attempt of a routed call: a borrowed connection, and whether each
// command must be preceded by ASKING (the attempt follows an ASK reply).
struct RedisClient::Attempt {
  Connection& c;
  NodePool& pool;
  bool asking;

  Reply operator()(const std::vector<std::string>& argv) const {
    if (asking) {
      const Reply a = c.exchange({"ASKING"});
      if (a.is_error()) return a;
    }
    return c.exchange(argv);
  }
};

RedisClient::RedisClient(ClientOptions options) : options_(std::move(options)), server_(options_.url.describe()) {
  warnings_.log = options_.log;
  if (options_.pool_size == 0) throw InvalidRequest("pool_size must be at least 1");
  if (options_.connect_timeout < Millis{1}) throw InvalidRequest("connect_timeout must be at least 1 ms");
  if (options_.command_timeout < Millis{1}) throw InvalidRequest("command_timeout must be at least 1 ms");
  if (options_.replicas < 0) throw InvalidRequest("replicas must not be negative");
  if (options_.url.nodes.empty()) throw InvalidRequest("the redis url names no node");
  settings_ = ConnectionSettings{options_.url.user, options_.url.password, options_.url.db, options_.connect_timeout,
                                 options_.command_timeout, make_tls_context(options_.url, options_.tls, options_.log)};

  if (options_.url.kind == RedisUrl::Kind::sentinel) {
    mode_ = Mode::sentinel;
    try {
      master_ = ask_sentinels(options_.url, settings_, warnings_);
    } catch (const Unreachable& e) {
      fail(fmt::format("cannot connect: {}", e.what()));
    }
    { NodePool::Lease first = pool(master_).take(false); }  // checks the set-up now
    watcher_ = std::make_unique<SwitchWatcher>(options_.url, settings_, [this] { stale_ = true; });
    return;
  }

  // The first seed that answers tells whether this is a cluster.
  std::string errors;
  for (const Endpoint& seed : options_.url.nodes) {
    std::unique_ptr<Connection> probe;
    try {
      probe = Connection::open(seed, settings_, Connection::Role::probe, warnings_);
    } catch (const Unreachable& e) {
      errors += fmt::format("; {}", e.what());
      continue;
    }
    const Reply info = probe->exchange({"INFO", "cluster"});
    probe.reset();
    if (!info.is_error() && info.str.find("cluster_enabled:1") != std::string::npos) {
      mode_ = Mode::cluster;
      if (settings_.db != 0)
        fail(fmt::format("{} is a cluster node, and a cluster has only database 0", seed.describe()));
      discover_cluster(seed);
      const std::vector<Endpoint> masters = slots_.masters();
      { NodePool::Lease first = pool(masters.empty() ? seed : masters.front()).take(false); }
    } else {
      master_ = seed;
      { NodePool::Lease first = pool(master_).take(false); }
    }
    return;
  }
  fail(fmt::format("cannot connect to any node{}", errors));
}

RedisClient::~RedisClient() { watcher_.reset(); }

void RedisClient::fail(std::string_view what) const {
  if (options_.metrics) options_.metrics->count_backend_error();
  throw BackendError(fmt::format("redis at {}: {}", server_, what));
}

void RedisClient::discover_cluster(const Endpoint& seed) {
  NodePool::Lease c = pool(seed).take(false);
  const Reply r = c->exchange({"CLUSTER", "SLOTS"});
  if (r.is_error()) c->fail(fmt::format("CLUSTER SLOTS failed: {}", r.str));
  slots_.load(r, seed);
}

NodePool& RedisClient::pool(const Endpoint& node) {
  std::lock_guard guard(mutex_);
  std::unique_ptr<NodePool>& p = pools_[node.describe()];
  if (!p) p = std::make_unique<NodePool>(node, settings_, options_.pool_size, warnings_);
  return *p;
}

Endpoint RedisClient::target(int slot) {
  switch (mode_) {
    case Mode::cluster: {
      if (stale_.exchange(false)) rediscover(Clock::now());
      if (std::optional<Endpoint> owner = slots_.owner(slot)) return *owner;
      const std::vector<Endpoint> masters = slots_.masters();
      // Unknown slot: any master answers with MOVED if it is not the owner.
      return masters.empty() ? options_.url.nodes.front() : masters.front();
    }
    case Mode::sentinel:
      if (stale_.exchange(false)) rediscover(Clock::now());
      break;
    case Mode::standalone: break;
  }
  std::lock_guard guard(mutex_);
  return master_;
}

void RedisClient::rediscover(Clock::time_point seen) {
  if (mode_ == Mode::standalone) return;
  std::lock_guard refresh(refresh_mutex_);
  if (refreshed_ > seen) return;  // another call learnt it meanwhile
  refreshed_ = Clock::now();
  if (mode_ == Mode::sentinel) {
    try {
      const Endpoint master = ask_sentinels(options_.url, settings_, warnings_);
      std::lock_guard guard(mutex_);
      if (options_.metrics && !(master == master_)) options_.metrics->count_failover(Backend::redis, FailoverKind::sentinel);
      master_ = master;
    } catch (const BackendError&) {
    }
    return;
  }
  std::vector<Endpoint> candidates = slots_.masters();
  for (const Endpoint& seed : options_.url.nodes)
    if (std::find(candidates.begin(), candidates.end(), seed) == candidates.end()) candidates.push_back(seed);
  // Nodes unreachable in the last 30 s are asked last (partitions).
  const auto recent = [&](const Endpoint& node) {
    const auto it = unreachable_.find(node.describe());
    return it != unreachable_.end() && Clock::now() - it->second < std::chrono::seconds(30);
  };
  std::stable_partition(candidates.begin(), candidates.end(), [&](const Endpoint& n) { return !recent(n); });
  for (const Endpoint& node : candidates) {
    try {
      discover_cluster(node);
      return;
    } catch (const BackendError&) {
    }
  }
}

int RedisClient::wait_replicas(Connection& c) {
  const Millis timeout = std::max(Millis{1}, options_.command_timeout / 2);
  try {
    const Reply r = c.exchange({"WAIT", std::to_string(options_.replicas), std::to_string(timeout.count())});
    return r.type == Reply::Type::integer ? static_cast<int>(r.integer) : 0;
  } catch (const BackendError&) {
    return 0;  // the write stands, but nothing confirms its copies
  }
}

// Why an attempt of routed() did not run, and what the next one does about it.
struct RedisClient::Missed {
  std::string why;
  bool relearn = false, back_off = false, lost_node = false;
  bool fresh = false;                  // the next attempt takes a new connection
  std::optional<Endpoint> ask_node{};  // the next attempt goes there, ASKING
};

void RedisClient::count_retry(RetryReason reason) const {
  if (options_.metrics) options_.metrics->count_retry(Backend::redis, reason);
}

// A redirect or a refusal that the next attempt answers (MOVED, ASK,
// READONLY, BUSY).
void RedisClient::redirected(const Redirect& d, Missed& m) {
  switch (d.kind) {
    case Redirect::Kind::moved:
      slots_.assign(d.slot, d.node);
      m.relearn = true;
      count_retry(RetryReason::moved);
      break;
    case Redirect::Kind::ask:
      m.ask_node = d.node;
      count_retry(RetryReason::ask);
      break;
    case Redirect::Kind::read_only:
      m.relearn = m.back_off = m.lost_node = true;
      count_retry(RetryReason::read_only);
      break;
    case Redirect::Kind::busy:
      m.back_off = true;
      count_retry(RetryReason::busy);
      break;
    case Redirect::Kind::none: break;
  }
}

// Called in a catch block of routed(): rethrows what no other attempt can
// cure (one server: the node itself is gone), else notes the retry.
void RedisClient::not_run(const BackendError& e, bool unreachable, int attempt, Missed& m) {
  // A NotSent is usually a pooled connection the server had closed: once
  // more at once on a fresh one. Again: the node itself may be gone.
  if (mode_ == Mode::standalone && (unreachable || attempt > 1)) {
    if (options_.metrics) options_.metrics->count_backend_error();
    throw;
  }
  count_retry(unreachable ? RetryReason::unreachable : RetryReason::not_sent);
  m.why = e.what();
  m.fresh = !unreachable;
  m.lost_node = unreachable;
  m.relearn = m.back_off = unreachable || attempt > 1;
}

// Between attempts: gives up at the deadline, learns the topology again,
// counts a failover, and backs off (`pause` doubles up to 200 ms).
void RedisClient::between_attempts(int slot, const Endpoint& node, const Missed& m, int attempt,
                                   Clock::time_point started, Clock::time_point deadline, Millis& pause) {
  const bool lost_cluster_node = m.lost_node && mode_ == Mode::cluster;
  if (lost_cluster_node) {
    std::lock_guard refresh(refresh_mutex_);
    unreachable_[node.describe()] = Clock::now();
  }
  if (Clock::now() >= deadline) {
    if (lost_cluster_node) stale_ = true;  // no time left to relearn: the next call does it first
    fail(fmt::format("gave up after {} attempts in {} ms, none of which ran: {}", attempt,
                     options_.command_timeout.count(), m.why));
  }
  if (m.relearn) rediscover(started);
  // A node gone or demoted whose slot now has another master: a failover.
  if (m.lost_node && mode_ == Mode::cluster && options_.metrics && slot >= 0 && !(target(slot) == node))
    options_.metrics->count_failover(Backend::redis, FailoverKind::cluster);
  if (m.back_off) {
    std::this_thread::sleep_for(std::min(pause, std::chrono::ceil<Millis>(deadline - Clock::now())));
    pause = std::min(pause * 2, Millis{200});
  }
}

template <class Body>
Reply RedisClient::routed(int slot, int* acked, Body&& body) {
  const Clock::time_point begun = Clock::now();
  const Clock::time_point deadline = begun + options_.command_timeout;
  // The call's duration, retries included, however it ends.
  struct Timed {
    Metrics* m;
    Clock::time_point begun;
    ~Timed() {
      if (m) m->observe_call(Backend::redis, Clock::now() - begun);
    }
  } timed{options_.metrics, begun};
  Missed last;
  Millis pause{5};
  for (int attempt = 1;; ++attempt) {
    const Clock::time_point started = Clock::now();
    const bool asking = last.ask_node.has_value();
    const Endpoint node = asking ? *last.ask_node : target(slot);
    const bool fresh = last.fresh;
    last = Missed{};
    try {
      NodePool& p = pool(node);
      NodePool::Lease lease = p.take(fresh);
      Attempt x{*lease, p, asking};
      Reply r = body(x);
      const Redirect d = r.is_error() && mode_ != Mode::standalone ? parse_redirect(r.str, node) : Redirect{};
      if (d.kind == Redirect::Kind::none) {
        if (acked) *acked = options_.replicas > 0 ? wait_replicas(*lease) : 0;
        return r;
      }
      last.why = r.str;
      redirected(d, last);
    } catch (const NotSent& e) {
      not_run(e, false, attempt, last);
    } catch (const Unreachable& e) {
      not_run(e, true, attempt, last);
    }
    between_attempts(slot, node, last, attempt, started, deadline, pause);
  }
}

Reply RedisClient::call(const std::vector<std::string>& argv) {
  if (argv.empty()) throw InvalidRequest("redis: empty command");
  return routed(command_slot(argv), nullptr, [&](Attempt& x) { return x(argv); });
}

std::vector<Endpoint> RedisClient::masters() {
  if (mode_ == Mode::cluster) return slots_.masters();
  return {target(-1)};
}

Reply RedisClient::call_on(const Endpoint& node, const std::vector<std::string>& argv) {
  if (argv.empty()) throw InvalidRequest("redis: empty command");
  NodePool& p = pool(node);
  try {
    NodePool::Lease c = p.take(false);
    return c->exchange(argv);
  } catch (const NotSent&) {
    NodePool::Lease c = p.take(true);
    return c->exchange(argv);
  }
}

Reply RedisClient::command(const std::vector<std::string>& argv) {
  Reply r = call(argv);
  if (r.is_error()) fail(fmt::format("{} failed: {}", argv.front(), r.str));
  return r;
}

// A library's name is a hash of its whole text (library.hpp), so "already
// exists" means this very text is loaded: never REPLACE, which could swap
// another pathlock's code under its callers (docs/lua-protocol.md).
static bool already_loaded(const Reply& r) { return r.str.find("already exists") != std::string::npos; }

// Sends the registered libraries to the attempt's node, which said
// "Function not found" (a restart without persistence, FUNCTION FLUSH, a new
// master). Returns the node's refusal (e.g. NOPERM for a user without
// FUNCTION LOAD, then with a hint), or nothing when every library is there.
std::optional<Reply> RedisClient::load_libraries_on(Attempt& x) {
  std::vector<std::pair<std::string, std::string>> libraries;
  {
    std::lock_guard guard(mutex_);
    libraries = libraries_;
  }
  for (const auto& [name, code] : libraries) {
    Reply r = x({"FUNCTION", "LOAD", code});
    if (r.is_error() && !already_loaded(r)) {
      if (r.str.rfind("NOPERM", 0) == 0)
        r.str = fmt::format("the server lacks library {} and this user may not load it ({}); load it once as an "
                            "administrator (docs/operations.md#trust-model)",
                            name, r.str);
      return r;
    }
  }
  return std::nullopt;
}

void RedisClient::load_library(const std::string& name, const std::string& code) {
  // Loaded now only where it is missing: a service user without FUNCTION
  // rights works once an administrator has loaded the library. A user that
  // may not even list functions finds out at its first call, when a missing
  // library is loaded (or reported) there. Code the server refuses is never
  // registered.
  const Reply listed = routed(-1, nullptr, [&](Attempt& x) { return x({"FUNCTION", "LIST", "LIBRARYNAME", name}); });
  if (!listed.is_error() && listed.elements.empty()) {
    const Reply r = routed(-1, nullptr, [&](Attempt& x) { return x({"FUNCTION", "LOAD", code}); });
    if (r.is_error() && !already_loaded(r)) fail(fmt::format("FUNCTION LOAD of library {} failed: {}", name, r.str));
  }
  std::lock_guard guard(mutex_);
  const auto it = std::find_if(libraries_.begin(), libraries_.end(), [&](const auto& l) { return l.first == name; });
  if (it != libraries_.end())
    it->second = code;
  else
    libraries_.emplace_back(name, code);
}

// A reply that says the call ran after its deadline and changed nothing.
static bool late(const Reply& r) {
  return r.type == Reply::Type::array && r.elements.size() == 2 && r.elements[0].str == "late" &&
         r.elements[1].type == Reply::Type::integer;
}

Reply RedisClient::fcall(const std::string& function, const std::vector<std::string>& keys,
                         const std::vector<std::string>& args, int* acked, std::optional<std::size_t> deadline_at) {
  std::vector<std::string> argv;
  argv.reserve(3 + keys.size() + args.size());
  argv.push_back("FCALL");
  argv.push_back(function);
  argv.push_back(std::to_string(keys.size()));
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), args.begin(), args.end());
  const int slot = keys.empty() ? -1 : key_slot(keys.front());
  if (deadline_at && *deadline_at >= args.size()) throw std::logic_error("fcall: deadline argument out of range");
  std::string* deadline = deadline_at ? &argv[3 + keys.size() + *deadline_at] : nullptr;
  const auto send = [&](Attempt& x) {
    if (deadline) {
      const std::optional<long long> at = x.c.server_deadline(options_.command_timeout);
      *deadline = at ? std::to_string(*at) : std::string();
    }
    Reply r = x(argv);
    if (deadline && late(r)) {  // the estimate was behind: nothing ran; correct it and send again
      x.c.learn_server_clock(r.elements[1].integer);
      *deadline = std::to_string(*x.c.server_deadline(options_.command_timeout));
      r = x(argv);
    }
    return r;
  };
  Reply r = routed(slot, acked, [&](Attempt& x) {
    Reply first = send(x);
    if (!first.is_error() || first.str.find("Function not found") == std::string::npos) return first;
    if (std::optional<Reply> refused = load_libraries_on(x)) return std::move(*refused);
    return send(x);
  });
  if (r.is_error()) fail(fmt::format("function {} failed: {}", function, r.str));
  return r;
}

std::unique_ptr<Subscription> RedisClient::subscribe(std::string channel) {
  return std::make_unique<Subscription>(static_cast<SubscriptionHost&>(*this), std::move(channel));
}

std::unique_ptr<Connection> RedisClient::open_listener(const Endpoint& node) {
  return Connection::open(node, settings_, Connection::Role::listener, warnings_);
}

Endpoint RedisClient::node_for(std::string_view key) { return target(key_slot(key)); }

}  // namespace pathlock::redis
