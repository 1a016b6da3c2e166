// One connection: connect (TLS or not), set up by role, exchange, typed
// failures.
// See connection.hpp.
#include "redis/connection.hpp"

#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <unistd.h>

#include <cstdio>
#include <new>

namespace pathlock::redis {

void Warnings::warn(std::string_view message, std::vector<LogField> fields) const {
  try {
    (log ? log : LogSink(log_to_stderr))(LogLevel::warning, message, fields);
  } catch (...) {  // a sink that throws loses its message, never the caller's call
  }
}
namespace {

[[noreturn]] void malformed(const char* what) {
  throw BackendError(fmt::format("redis: unexpected reply ({})", what));
}

std::string describe(const Endpoint& node, int db) { return fmt::format("redis at {}/{}", node.describe(), db); }

}  // namespace

Reply convert_reply(const redisReply& r) {
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
  for (std::size_t i = 0; i < r.elements; ++i) out.elements.push_back(convert_reply(*r.element[i]));
  return out;
}

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

Connection::Connection(std::unique_ptr<Stream> stream, Endpoint node, int db, Millis command_timeout)
    : stream_(std::move(stream)),
      reader_(redisReaderCreate()),
      node_(std::move(node)),
      name_(describe(node_, db)),
      command_timeout_(command_timeout) {
  if (!reader_) throw std::bad_alloc();
}

Connection::~Connection() { redisReaderFree(reader_); }

void Connection::fail(std::string_view what) const { throw BackendError(fmt::format("{}: {}", name_, what)); }

std::unique_ptr<Connection> Connection::open(const Endpoint& node, const ConnectionSettings& settings, Role role,
                                             Warnings& warnings) {
  const int db = role == Role::data || role == Role::listener ? settings.db : 0;
  const auto deadline = Stream::Clock::now() + settings.connect_timeout;
  std::unique_ptr<Stream> stream = Stream::open(node, settings.tls.get(), deadline, describe(node, db));
  std::unique_ptr<Connection> c(new Connection(std::move(stream), node, db, settings.command_timeout));
  c->setup(settings, role, warnings);
  return c;
}

// One command of the set-up: a connection that breaks here has carried
// nothing of the caller's, and says why in words.
Reply Connection::setup_exchange(const std::vector<std::string>& argv) {
  try {
    return exchange(argv);
  } catch (const BackendError& e) {
    // A TLS port closes a plain connection at its first command; a server
    // that wants a client certificate closes a TLS one right after the
    // handshake (TLS 1.3 checks it after the client's last handshake message).
    const std::string_view why = e.what();
    const bool closed = why.find("connection closed by the server") != std::string_view::npos ||
                        why.find("Connection reset") != std::string_view::npos ||
                        why.find("Broken pipe") != std::string_view::npos || why.find("alert") != std::string_view::npos;
    const char* hint = !closed ? ""
                       : tls() ? " (the server refused the connection after the TLS handshake: it wants a client "
                                 "certificate it did not get or does not trust; see tls cert_file and key_file)"
                               : " (if that port serves TLS, use a rediss:// URL)";
    throw Unreachable(fmt::format("{}: connection failed during set-up ({}): {}{}", name_, argv.front(), why, hint));
  }
}

void Connection::setup(const ConnectionSettings& settings, Role role, Warnings& warnings) {
  const auto run = [this](const std::vector<std::string>& argv) { return setup_exchange(argv); };
  if (settings.password) {
    const Reply r =
        settings.user ? run({"AUTH", *settings.user, *settings.password}) : run({"AUTH", *settings.password});
    // A sentinel usually has no password of its own while the master has one.
    const bool sentinel_without_password =
        role == Role::sentinel && r.is_error() && r.str.find("without any password configured") != std::string::npos;
    if (r.is_error() && !sentinel_without_password)
      fail(fmt::format("AUTH{} failed: {}", settings.user ? " as " + *settings.user : "", r.str));
  }
  if ((role == Role::data || role == Role::listener) && settings.db != 0) {
    const Reply r = run({"SELECT", std::to_string(settings.db)});
    if (r.is_error()) fail(fmt::format("SELECT {} failed: {}", settings.db, r.str));
  }
  // Fails on a server that wants a password the URL does not give (NOAUTH).
  if (const Reply r = run({"PING"}); r.is_error()) fail(fmt::format("PING failed: {}", r.str));
  if (role == Role::probe || role == Role::sentinel) return;
  // Names the connection for CLIENT LIST (best effort: an ACL may forbid it).
  run({"CLIENT", "SETNAME", fmt::format("pathlock-{}", ::getpid())});
  if (role == Role::listener) return;  // reads no lock data: the eviction policy is moot
  check_eviction_policy(warnings);
  learn_server_time(run({"TIME"}));
}

namespace {
long long steady_ms(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}
}  // namespace

void Connection::learn_server_time(const Reply& time) {
  if (time.type != Reply::Type::array || time.elements.size() != 2) {
    clock_read_.reset();  // refused (an ACL without TIME): calls carry no deadline
    return;
  }
  try {
    learn_server_clock(std::stoll(time.elements[0].str) * 1000 + std::stoll(time.elements[1].str) / 1000);
  } catch (const std::exception&) {
    clock_read_.reset();
  }
}

void Connection::learn_server_clock(long long server_ms) {
  const auto now = std::chrono::steady_clock::now();
  clock_read_ = now;
  clock_offset_ms_ = server_ms - steady_ms(now);
}

std::optional<long long> Connection::server_deadline(Millis budget) {
  constexpr std::chrono::seconds kClockRefresh{30};  // bounds the drift between the two clocks
  if (clock_read_ && std::chrono::steady_clock::now() - *clock_read_ > kClockRefresh) {
    try {
      learn_server_time(exchange({"TIME"}));
    } catch (const BackendError& e) {
      throw NotSent(fmt::format("{}: reading the server's clock before a call failed: {}", name_, e.what()));
    }
  }
  if (!clock_read_) return std::nullopt;
  return steady_ms(std::chrono::steady_clock::now()) + clock_offset_ms_ + budget.count();
}

// The eviction policy decides whether Redis may drop lock data under
// memory pressure. allkeys-* policies may evict any key, and would silently
// free locks: refused. Under volatile-* ones only keys with a TTL can be
// evicted, and the library gives live lock data none there (it reads the
// policy itself: docs/operations.md#eviction-and-memory-limits). Managed
// services that disable CONFIG still answer INFO, which names the policy.
void Connection::check_eviction_policy(Warnings& warnings) {
  const Reply r = setup_exchange({"CONFIG", "GET", "maxmemory-policy"});
  std::string policy, why;
  if (!r.is_error() && r.type == Reply::Type::array && r.elements.size() == 2) {
    policy = r.elements[1].str;
  } else {
    why = fmt::format("CONFIG GET: {}", r.is_error() ? r.str : "unexpected reply");
    const Reply info = setup_exchange({"INFO", "memory"});
    constexpr std::string_view kField = "maxmemory_policy:";
    const std::size_t at = info.is_error() ? std::string::npos : info.str.find(kField);
    if (at != std::string::npos) {
      const std::size_t from = at + kField.size();
      policy = info.str.substr(from, info.str.find_first_of("\r\n", from) - from);
    } else {
      why += fmt::format("; INFO memory: {}", info.is_error() ? info.str : "no maxmemory_policy");
      // A user the docs grant neither (the read-only operator of
      // docs/operations.md) skips the check without a warning: it cannot make
      // Redis evict anything, and the services' users check the policy.
      if (r.is_error() && r.str.rfind("NOPERM", 0) == 0 && info.is_error() && info.str.rfind("NOPERM", 0) == 0) return;
    }
  }
  if (policy.empty()) {
    if (!warnings.config.exchange(true))
      warnings.warn(fmt::format("{}: cannot read maxmemory-policy ({}); make sure it is noeviction or volatile-*, or "
                                "Redis may evict lock data under memory pressure",
                                name_, why),
                    {{"event", "maxmemory_policy_unknown"}, {"server", name_}});
    return;
  }
  if (policy != "noeviction" && policy.rfind("volatile-", 0) != 0)
    fail(fmt::format("maxmemory-policy is {}, which lets Redis evict lock data under memory pressure; set "
                     "maxmemory-policy noeviction (redis.conf, or CONFIG SET maxmemory-policy noeviction)",
                     policy));
}

void Connection::send(const std::vector<std::string>& argv) {
  broken_ = true;  // until the write is complete
  std::vector<const char*> ptrs;
  std::vector<std::size_t> lens;
  ptrs.reserve(argv.size());
  lens.reserve(argv.size());
  for (const std::string& a : argv) {
    ptrs.push_back(a.data());
    lens.push_back(a.size());
  }
  char* formatted = nullptr;
  const int len = redisFormatCommandArgv(&formatted, static_cast<int>(argv.size()), ptrs.data(), lens.data());
  if (len < 0 || !formatted) throw NotSent(fmt::format("{}: cannot send {}: out of memory", name_, argv.front()));
  const std::unique_ptr<char, void (*)(char*)> owned(formatted, redisFreeCommand);
  // A failed write leaves the command incomplete on the server side, which
  // discards it with the connection: it never ran.
  std::string why;
  if (stream_->write_all({formatted, static_cast<std::size_t>(len)}, Stream::Clock::now() + command_timeout_, why) !=
      Stream::Io::done)
    throw NotSent(fmt::format("{}: cannot send {}: {}", name_, argv.front(), why));
  broken_ = false;
}

std::optional<Reply> Connection::buffered_reply() {
  void* raw = nullptr;
  if (redisReaderGetReply(reader_, &raw) != REDIS_OK)
    fail(fmt::format("protocol error: {}", reader_->errstr));
  if (!raw) return std::nullopt;
  Reply r = convert_reply(*static_cast<redisReply*>(raw));
  freeReplyObject(raw);
  return r;
}

bool Connection::read_available() {
  std::string data, why;
  const Stream::Io io = stream_->read_some(data, Stream::Clock::now(), why);
  if (!data.empty()) redisReaderFeed(reader_, data.data(), data.size());
  return io == Stream::Io::done || io == Stream::Io::timeout;
}

bool Connection::wait_readable(int timeout_ms, int wake_fd) const {
  return stream_->wait_readable(timeout_ms, wake_fd);
}

Reply Connection::receive(std::string_view what) {
  broken_ = true;  // until a whole reply is read
  const auto deadline = Stream::Clock::now() + command_timeout_;
  std::string data, why;
  while (true) {
    if (std::optional<Reply> r = buffered_reply()) {
      broken_ = false;
      return std::move(*r);
    }
    data.clear();
    const Stream::Io io = stream_->read_some(data, deadline, why);
    if (io == Stream::Io::timeout)
      fail(fmt::format("no reply to {} within {} ms; its effect is unknown", what, command_timeout_.count()));
    if (io != Stream::Io::done)
      throw ReplyLost(
          fmt::format("{}: connection lost waiting for the reply to {} ({}); its effect is unknown", name_, what, why));
    if (redisReaderFeed(reader_, data.data(), data.size()) != REDIS_OK)
      fail(fmt::format("protocol error: {}", reader_->errstr));
  }
}

Reply Connection::exchange(const std::vector<std::string>& argv) {
  send(argv);
  return receive(argv.front());
}

bool Connection::looks_open() {
  if (broken_) return false;
  return stream_->looks_idle_and_open();
}

}  // namespace pathlock::redis
