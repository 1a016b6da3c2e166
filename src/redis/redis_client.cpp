// The Redis client of the Redis backend: pool, exchange, retry rules, the
// subscriptions of waiting calls, and the translation of every failure into
// BackendError. See redis_client.hpp.
#include "redis/redis_client.hpp"

#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <thread>
#include <utility>

namespace pathlock::redis {
namespace {

// Thrown inside this file when a command was not (completely) written: the
// server cannot have run it, so the caller may retry on a fresh connection.
struct NotSent {
  std::string why;
};

// Thrown inside this file when a subscription's connection broke.
struct Broken {};

timeval to_timeval(Millis ms) {
  timeval tv{};
  tv.tv_sec = static_cast<decltype(tv.tv_sec)>(ms.count() / 1000);
  tv.tv_usec = static_cast<decltype(tv.tv_usec)>((ms.count() % 1000) * 1000);
  return tv;
}

Reply convert(const redisReply& r) {
  Reply out;
  switch (r.type) {
    case REDIS_REPLY_STRING: out.type = Reply::Type::string; break;
    case REDIS_REPLY_STATUS: out.type = Reply::Type::status; break;
    case REDIS_REPLY_ERROR: out.type = Reply::Type::error; break;
    case REDIS_REPLY_INTEGER: out.type = Reply::Type::integer; break;
    case REDIS_REPLY_ARRAY: out.type = Reply::Type::array; break;
    default: out.type = Reply::Type::nil; break;
  }
  if (r.str) out.str.assign(r.str, r.len);
  out.integer = r.integer;
  out.elements.reserve(r.elements);
  for (std::size_t i = 0; i < r.elements; ++i) out.elements.push_back(convert(*r.element[i]));
  return out;
}

// True if an idle connection can still carry a command: the server has
// sent nothing (a closed connection reads as EOF, a reset as an error).
bool looks_open(redisContext* ctx) {
  if (ctx->err) return false;
  pollfd p{};
  p.fd = ctx->fd;
  p.events = POLLIN;
  return ::poll(&p, 1, 0) == 0;
}

[[noreturn]] void malformed(const char* what) {
  throw BackendError(fmt::format("redis: unexpected reply ({})", what));
}

}  // namespace

const Reply& Reply::at(std::size_t i) const {
  if (type != Type::array || i >= elements.size()) malformed("missing array element");
  return elements[i];
}

const std::string& Reply::text() const {
  if (type != Type::string && type != Type::status) malformed("expected a string");
  return str;
}

long long Reply::number() const {
  if (type != Type::integer) malformed("expected an integer");
  return integer;
}

// A borrowed connection. It goes back to the pool when the lease ends,
// unless an exchange on it did not finish (then it is closed).
class RedisClient::Lease {
 public:
  Lease(RedisClient& client, redisContext* ctx) : client_(client), ctx_(ctx) {}
  ~Lease() { client_.give_back(ctx_, clean_); }
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  redisContext* get() const { return ctx_; }
  void set_clean(bool clean) { clean_ = clean; }

 private:
  RedisClient& client_;
  redisContext* ctx_;
  bool clean_ = true;
};

RedisClient::RedisClient(ClientOptions options) : options_(std::move(options)), server_(options_.url.describe()) {
  if (options_.pool_size == 0) throw InvalidRequest("pool_size must be at least 1");
  if (options_.connect_timeout < Millis{1}) throw InvalidRequest("connect_timeout must be at least 1 ms");
  if (options_.command_timeout < Millis{1}) throw InvalidRequest("command_timeout must be at least 1 ms");
  redisContext* first = connect();
  std::lock_guard guard(mutex_);
  ++open_;
  idle_.push_back(first);
}

RedisClient::~RedisClient() {
  for (redisContext* ctx : idle_) redisFree(ctx);
}

void RedisClient::fail(std::string_view what) const {
  throw BackendError(fmt::format("redis at {}: {}", server_, what));
}

redisContext* RedisClient::connect(bool listener) {
  redisContext* ctx =
      redisConnectWithTimeout(options_.url.host.c_str(), options_.url.port, to_timeval(options_.connect_timeout));
  if (!ctx) fail("cannot allocate a connection");
  if (ctx->err) {
    const std::string why = ctx->errstr;
    redisFree(ctx);
    fail(fmt::format("cannot connect: {}", why));
  }
  try {
    setup(ctx, listener);
  } catch (...) {
    redisFree(ctx);
    throw;
  }
  return ctx;
}

void RedisClient::setup(redisContext* ctx, bool listener) {
  if (redisSetTimeout(ctx, to_timeval(options_.command_timeout)) != REDIS_OK) fail("cannot set the command timeout");
  redisEnableKeepAlive(ctx);
  const auto run = [&](const std::vector<std::string>& argv) {
    std::vector<const char*> ptrs;
    std::vector<std::size_t> lens;
    for (const std::string& a : argv) {
      ptrs.push_back(a.data());
      lens.push_back(a.size());
    }
    auto* raw = static_cast<redisReply*>(
        redisCommandArgv(ctx, static_cast<int>(argv.size()), ptrs.data(), lens.data()));
    if (!raw) fail(fmt::format("connection failed during setup ({}): {}", argv.front(), ctx->errstr));
    Reply r = convert(*raw);
    freeReplyObject(raw);
    return r;
  };
  const RedisUrl& url = options_.url;
  if (url.password) {
    const Reply r = url.user ? run({"AUTH", *url.user, *url.password}) : run({"AUTH", *url.password});
    if (r.is_error()) fail(fmt::format("AUTH{} failed: {}", url.user ? " as " + *url.user : "", r.str));
  }
  if (url.db != 0) {
    const Reply r = run({"SELECT", std::to_string(url.db)});
    if (r.is_error()) fail(fmt::format("SELECT {} failed: {}", url.db, r.str));
  }
  // Fails on a server that wants a password the URL does not give (NOAUTH).
  if (const Reply r = run({"PING"}); r.is_error()) fail(fmt::format("PING failed: {}", r.str));
  // Names the connection for CLIENT LIST (best effort: an ACL may forbid it).
  run({"CLIENT", "SETNAME", fmt::format("pathlock-{}", ::getpid())});
  if (listener) return;  // reads no lock data: the eviction policy is moot
  // The eviction policy decides whether Redis may drop lock data under
  // memory pressure. Lock keys never get a TTL, so volatile-* policies
  // cannot pick them; allkeys-* policies can, and would silently free locks.
  const Reply r = run({"CONFIG", "GET", "maxmemory-policy"});
  if (r.is_error() || r.type != Reply::Type::array || r.elements.size() != 2) {
    if (!warned_config_.exchange(true))
      std::fprintf(stderr,
                   "pathlock: warning: redis at %s: cannot read maxmemory-policy (CONFIG GET: %s); make sure it "
                   "is noeviction, or Redis may evict lock data under memory pressure\n",
                   server_.c_str(), r.is_error() ? r.str.c_str() : "unexpected reply");
    return;
  }
  const std::string& policy = r.elements[1].str;
  if (policy != "noeviction" && policy.rfind("volatile-", 0) != 0)
    fail(fmt::format("maxmemory-policy is {}, which lets Redis evict lock data under memory pressure; set "
                     "maxmemory-policy noeviction (redis.conf, or CONFIG SET maxmemory-policy noeviction)",
                     policy));
}

redisContext* RedisClient::take(bool fresh) {
  std::unique_lock lock(mutex_);
  const auto wait_limit = options_.connect_timeout + options_.command_timeout * 2;
  const auto deadline = std::chrono::steady_clock::now() + wait_limit;
  while (true) {
    // Reuse an idle connection that still looks open; for a fresh one, close
    // idle ones only as far as needed to make room.
    while (!idle_.empty() && (!fresh || open_ >= options_.pool_size)) {
      redisContext* ctx = idle_.back();
      idle_.pop_back();
      if (!fresh && looks_open(ctx)) return ctx;
      redisFree(ctx);  // closed by the server, or making room for a fresh one
      --open_;
    }
    if (open_ < options_.pool_size) {
      ++open_;
      lock.unlock();
      try {
        return connect();
      } catch (...) {
        lock.lock();
        --open_;
        returned_.notify_one();
        throw;
      }
    }
    if (returned_.wait_until(lock, deadline) == std::cv_status::timeout && idle_.empty() &&
        open_ >= options_.pool_size)
      fail(fmt::format("all {} pooled connections stayed busy for {} ms", options_.pool_size, wait_limit.count()));
  }
}

void RedisClient::give_back(redisContext* ctx, bool reusable) {
  if (!ctx) return;
  std::lock_guard guard(mutex_);
  if (reusable && !ctx->err) {
    idle_.push_back(ctx);
  } else {
    redisFree(ctx);
    --open_;
  }
  returned_.notify_one();
}

Reply RedisClient::exchange(Lease& lease, const std::vector<std::string>& argv) {
  redisContext* ctx = lease.get();
  lease.set_clean(false);
  std::vector<const char*> ptrs;
  std::vector<std::size_t> lens;
  ptrs.reserve(argv.size());
  lens.reserve(argv.size());
  for (const std::string& a : argv) {
    ptrs.push_back(a.data());
    lens.push_back(a.size());
  }
  if (redisAppendCommandArgv(ctx, static_cast<int>(argv.size()), ptrs.data(), lens.data()) != REDIS_OK)
    throw NotSent{ctx->errstr};
  // A failed write leaves the command incomplete on the server side, which
  // discards it with the connection: it never ran.
  for (int done = 0; !done;)
    if (redisBufferWrite(ctx, &done) != REDIS_OK) throw NotSent{ctx->errstr};
  void* raw = nullptr;
  if (redisGetReply(ctx, &raw) != REDIS_OK || !raw) {
    const bool timed_out = ctx->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK ||
                                                        std::string_view(ctx->errstr) == "Resource temporarily unavailable");
    fail(timed_out ? fmt::format("no reply to {} within {} ms; its effect is unknown", argv.front(),
                                 options_.command_timeout.count())
                   : fmt::format("connection lost waiting for the reply to {} ({}); its effect is unknown",
                                 argv.front(), ctx->errstr));
  }
  Reply r = convert(*static_cast<redisReply*>(raw));
  freeReplyObject(raw);
  lease.set_clean(true);
  return r;
}

template <class Body>
Reply RedisClient::with_connection(Body&& body) {
  for (int attempt = 0;; ++attempt) {
    Lease lease(*this, take(attempt > 0));
    try {
      return body(lease);
    } catch (const NotSent& e) {
      if (attempt > 0) fail(fmt::format("cannot send a command: {}", e.why));
    }
  }
}

Reply RedisClient::call(const std::vector<std::string>& argv) {
  return with_connection([&](Lease& lease) { return exchange(lease, argv); });
}

Reply RedisClient::command(const std::vector<std::string>& argv) {
  Reply r = call(argv);
  if (r.is_error()) fail(fmt::format("{} failed: {}", argv.front(), r.str));
  return r;
}

void RedisClient::load(Script& script) {
  const Reply r = call({"SCRIPT", "LOAD", std::string(script.source)});
  script.sha = r.type == Reply::Type::string ? r.str : std::string();
}

Reply RedisClient::eval(const Script& script, const std::vector<std::string>& keys,
                        const std::vector<std::string>& args) {
  std::vector<std::string> argv;
  argv.reserve(3 + keys.size() + args.size());
  argv.push_back("EVALSHA");
  argv.push_back(script.sha);
  argv.push_back(std::to_string(keys.size()));
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), args.begin(), args.end());
  Reply r = with_connection([&](Lease& lease) {
    if (!script.sha.empty()) {
      Reply first = exchange(lease, argv);
      if (!first.is_error() || first.str.rfind("NOSCRIPT", 0) != 0) return first;
    }
    std::vector<std::string> eval = argv;
    eval[0] = "EVAL";
    eval[1] = std::string(script.source);
    return exchange(lease, eval);
  });
  if (r.is_error()) fail(fmt::format("script {} failed: {}", script.name, r.str));
  return r;
}

// ---- Redis Functions -------------------------------------------------------

void RedisClient::load_library(const std::string& name, const std::string& code) {
  {
    std::lock_guard<std::mutex> lock(libraries_mutex_);
    bool known = false;
    for (auto& [n, c] : libraries_)
      if (n == name) {
        c = code;
        known = true;
      }
    if (!known) libraries_.emplace_back(name, code);
  }
  const Reply r = call({"FUNCTION", "LOAD", "REPLACE", code});
  if (r.is_error()) fail(fmt::format("FUNCTION LOAD of library {} failed: {}", name, r.str));
}

Reply RedisClient::fcall(const std::string& function, const std::vector<std::string>& keys,
                         const std::vector<std::string>& args) {
  std::vector<std::string> argv;
  argv.reserve(3 + keys.size() + args.size());
  argv.push_back("FCALL");
  argv.push_back(function);
  argv.push_back(std::to_string(keys.size()));
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), args.begin(), args.end());
  Reply r = with_connection([&](Lease& lease) {
    Reply first = exchange(lease, argv);
    // "ERR Function not found": the server does not know the library (it
    // did not run). Load it on this connection, then try once more.
    if (!first.is_error() || first.str.find("Function not found") == std::string::npos) return first;
    std::vector<std::pair<std::string, std::string>> libraries;
    {
      std::lock_guard<std::mutex> lock(libraries_mutex_);
      libraries = libraries_;
    }
    for (const auto& [name, code] : libraries) {
      const Reply loaded = exchange(lease, {"FUNCTION", "LOAD", "REPLACE", code});
      if (loaded.is_error()) return loaded;
    }
    return exchange(lease, argv);
  });
  if (r.is_error()) fail(fmt::format("function {} failed: {}", function, r.str));
  return r;
}

std::unique_ptr<Subscription> RedisClient::subscribe(std::string channel) {
  return std::unique_ptr<Subscription>(new Subscription(*this, std::move(channel)));
}

// ---- Subscription ----------------------------------------------------------
//
// Life of the connection: connect (AUTH, SELECT, PING, SETNAME), SUBSCRIBE
// and its confirmation read with the command timeout, then only poll() +
// non-blocking-in-effect reads (redisBufferRead after poll reported data)
// until the destructor closes it. Nothing else is ever sent on it, and it is
// never handed to the pool: a connection in subscribe mode cannot run
// scripts, and stale messages in its buffer would corrupt later replies.

Subscription::Subscription(RedisClient& client, std::string channel) : client_(client), channel_(std::move(channel)) {
  open();
}

Subscription::~Subscription() { close(); }

void Subscription::close() {
  if (ctx_) redisFree(ctx_);
  ctx_ = nullptr;
}

void Subscription::open() {
  redisContext* ctx = client_.connect(/*listener=*/true);
  const char* argv[] = {"SSUBSCRIBE", channel_.c_str()};
  const std::size_t lens[] = {10, channel_.size()};
  auto* raw = static_cast<redisReply*>(redisCommandArgv(ctx, 2, argv, lens));
  if (!raw) {
    const std::string why = ctx->errstr;
    redisFree(ctx);
    client_.fail(fmt::format("connection lost subscribing to {} ({})", channel_, why));
  }
  const Reply r = convert(*raw);
  freeReplyObject(raw);
  if (r.is_error()) {
    // An ACL user without channel rights (Redis 7 creates users with
    // resetchannels), or SUBSCRIBE renamed away: wait without wake-ups.
    redisFree(ctx);
    if (!client_.warned_subscribe_.exchange(true))
      std::fprintf(stderr,
                   "pathlock: warning: redis at %s: SSUBSCRIBE %s refused (%s); waiting requests only re-check on a "
                   "timer. Grant the user the channels pl:* (ACL SETUSER ... &pl:*)\n",
                   client_.server_.c_str(), channel_.c_str(), r.str.c_str());
    return;
  }
  if (r.type != Reply::Type::array || r.elements.size() != 3 || r.elements[0].str != "ssubscribe") {
    redisFree(ctx);
    client_.fail(fmt::format("unexpected reply to SSUBSCRIBE {}", channel_));
  }
  ctx_ = ctx;
}

bool Subscription::drain(std::vector<std::string>& payloads) {
  bool got = false;
  while (true) {
    void* raw = nullptr;
    if (redisReaderGetReply(ctx_->reader, &raw) != REDIS_OK) throw Broken{};  // protocol error
    if (!raw) return got;
    const Reply r = convert(*static_cast<redisReply*>(raw));
    freeReplyObject(raw);
    if (r.is_error()) throw Broken{};
    // ["message", channel, payload]; anything else (there is nothing else
    // after the confirmation) is ignored.
    if (r.type == Reply::Type::array && r.elements.size() == 3 && r.elements[0].str == "smessage") {
      payloads.push_back(r.elements[2].str);
      got = true;
    }
  }
}

Subscription::Wake Subscription::wait(Millis timeout, std::vector<std::string>& payloads) {
  using Clock = std::chrono::steady_clock;
  if (!ctx_) {
    std::this_thread::sleep_for(timeout);
    return Wake::timeout;
  }
  const Clock::time_point deadline = Clock::now() + timeout;
  try {
    if (drain(payloads)) return Wake::message;  // already read with an earlier batch
    while (true) {
      const auto left = std::chrono::ceil<Millis>(deadline - Clock::now()).count();
      if (left <= 0) return Wake::timeout;
      pollfd p{};
      p.fd = ctx_->fd;
      p.events = POLLIN;
      const int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, INT_MAX)));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw Broken{};
      if (n == 0) return Wake::timeout;
      // poll() saw data (or EOF/error): this read does not block.
      if (redisBufferRead(ctx_) != REDIS_OK) throw Broken{};
      if (drain(payloads)) return Wake::message;
      // Part of a message only: wait for the rest.
    }
  } catch (const Broken&) {
    close();
    open();  // throws BackendError if the server is gone
    return Wake::reopened;
  }
}

}  // namespace pathlock::redis
