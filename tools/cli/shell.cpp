#include "shell.hpp"
#include "json_codec.hpp"
#include "shell_keep.hpp"

#include <pathlock/version.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <stop_token>
#include <thread>
#include <istream>
#include <optional>
#include <ostream>

namespace pathlock::cli {
namespace {

using json = nlohmann::json;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json error(const std::string& what) { return json{{"error", what}}; }

// The whole number after the first `skip` characters of `word`, if that is
// all there is.
template <class Number>
std::optional<Number> number_after(const std::string& word, std::size_t skip) {
  Number v{};
  const char* begin = word.data() + skip;
  const char* end = word.data() + word.size();
  const auto [ptr, ec] = std::from_chars(begin, end, v);
  if (ec != std::errc() || ptr != end || begin == end) return std::nullopt;
  return v;
}

Millis parse_ms(const std::string& word, std::size_t skip) {
  const auto v = number_after<long long>(word, skip);
  if (!v) throw InvalidRequest(fmt::format("'{}' needs a whole number of milliseconds", word));
  return Millis{*v};
}

// The N of a `limit=N` word: 1 to `max` (kMaxListLimit for locks,
// kMaxBlockers, kMaxWaiters: engine.hpp).
std::size_t parse_limit(const std::string& word, std::size_t max = kMaxListLimit) {
  const auto v = number_after<std::size_t>(word, 6);  // after "limit="
  if (!v || *v < 1 || *v > max) throw InvalidRequest(fmt::format("'{}' needs a whole number from 1 to {}", word, max));
  return *v;
}

// The value of option word `word` after its `skip`-character name, which
// must not have been given yet (`current` is still empty) nor be empty.
std::string once(const std::string& current, const std::string& word, std::size_t skip) {
  const std::string name = word.substr(0, skip);
  if (!current.empty()) throw InvalidRequest(fmt::format("{} is given twice", name));
  if (word.size() == skip) throw InvalidRequest(fmt::format("{} needs a value", name));
  return word.substr(skip);
}

// Option word `word` (its name the first `skip` characters), marked as
// given; an error when it was given before.
const std::string& first_time(bool& given, const std::string& word, std::size_t skip) {
  if (given) throw InvalidRequest(fmt::format("{} is given twice", word.substr(0, skip)));
  given = true;
  return word;
}

// The acquire that waits now (an `acquire ... wait=MS` line being
// answered), which a `cancel` line read meanwhile stops (docs/cli.md).
class WaitingAcquire {
 public:
  std::stop_token begin() {
    std::lock_guard guard(mutex_);
    source_ = std::stop_source();
    active_ = true;
    return source_.get_token();
  }
  // True when a `cancel` stopped it.
  bool end() {
    std::lock_guard guard(mutex_);
    active_ = false;
    return source_.stop_requested();
  }
  // Stops the waiting acquire; false when none waits (or it was stopped
  // by an earlier `cancel` already).
  bool cancel() {
    std::lock_guard guard(mutex_);
    return active_ && source_.request_stop();
  }

 private:
  std::mutex mutex_;
  std::stop_source source_;
  bool active_ = false;
};

// engine.acquire(req), stoppable by `waiting` when it waits. A stop that a
// `cancel` line made counts even when the grant came first: the grant is
// given back, so `{"cancelled":true}` always means nothing is held.
AcquireResult acquire_stoppable(LockEngine& engine, const LockRequest& req, WaitingAcquire* waiting) {
  if (!waiting || req.wait <= Millis{0}) return engine.acquire(req);
  AcquireResult res;
  try {
    res = engine.acquire(req, waiting->begin());
  } catch (...) {
    waiting->end();
    throw;
  }
  if (!waiting->end() || !res.granted()) return res;
  engine.release(req.ns, res.grant.id, res.grant.token);
  AcquireResult cancelled;
  cancelled.outcome = AcquireOutcome::cancelled;
  return cancelled;
}

// The targets of operation `op` on `paths`, one per role in the matrix's
// role order.
std::vector<Target> targets_of(LockEngine& engine, const std::string& op, const std::vector<std::string>& paths) {
  const int index = engine.matrix().op_index(op);
  if (index < 0) throw InvalidRequest(fmt::format("unknown operation '{}'", op));
  const OpInfo& info = engine.matrix().ops[static_cast<std::size_t>(index)];
  if (paths.size() != info.role_count)
    throw InvalidRequest(fmt::format("operation '{}' takes {} path(s), got {}", op, info.role_count, paths.size()));
  std::vector<Target> targets;
  for (std::size_t r = 0; r < info.role_count; ++r) targets.push_back(Target{std::string(info.roles[r]), paths[r]});
  return targets;
}

// `limit=N` of blockers and waiters: 1 to `max`, once.
std::size_t small_limit(const std::optional<std::size_t>& limit, const std::string& word, std::size_t max) {
  if (limit) throw InvalidRequest("limit= is given twice");
  return parse_limit(word, max);
}

json hello() {
  return json{{"client", "pathlock-shell"},
              {"version", kVersionString},
              {"features", json::array({"cancel", "blockers", "waiters", "matrix", "keep", "convert"})}};
}

// blockers OP PATH [DST_PATH] [fair=true|false] [limit=N] [converts=ID]:
// what refuses that request (or that conversion of lock ID) now.
// fair=false leaves out the places in line (queued).
json blockers(LockEngine& engine, const std::string& ns, const std::vector<std::string>& w,
              const std::vector<bool>& quoted) {
  std::optional<std::size_t> limit;
  std::optional<bool> fair;
  std::optional<std::string> converts;
  std::vector<std::string> positional;
  for (std::size_t i = 1; i < w.size(); ++i) {
    if (!quoted[i] && w[i].rfind("limit=", 0) == 0) limit = small_limit(limit, w[i], kMaxBlockers);
    else if (!quoted[i] && w[i].rfind("converts=", 0) == 0) {
      if (converts) throw InvalidRequest("converts= takes a lock id, once");
      converts = w[i].substr(9);
    } else if (!quoted[i] && w[i].rfind("fair=", 0) == 0) {
      if (fair || (w[i] != "fair=true" && w[i] != "fair=false")) throw InvalidRequest("fair= takes true or false, once");
      fair = w[i] == "fair=true";
    } else positional.push_back(w[i]);
  }
  if (positional.size() < 2 || positional.size() > 3)
    throw InvalidRequest("usage: blockers OP PATH [DST_PATH] [fair=true|false] [limit=N] [converts=ID]");
  const std::vector<Target> targets = targets_of(engine, positional[0], {positional.begin() + 1, positional.end()});
  ConvertRequest conversion{ns, converts.value_or(""), "", positional[0], targets};
  conversion.fair = fair.value_or(true);
  const BlockersPage page = converts ? engine.blockers(conversion, limit.value_or(kMaxBlockers))
                                     : engine.blockers(ns, positional[0], targets, limit.value_or(kMaxBlockers));
  json rows = json::array();
  for (const Blocker& b : page.blockers)
    if (!b.queued || fair.value_or(true)) rows.push_back(json_codec::blocker(b));
  return json{{"blockers", rows}, {"truncated", page.truncated}};
}

// waiters [PREFIX] [limit=N]: the places in line, oldest first.
json waiters(LockEngine& engine, const std::string& ns, const std::vector<std::string>& w,
             const std::vector<bool>& quoted) {
  std::optional<std::size_t> limit;
  std::optional<std::string> prefix;
  for (std::size_t i = 1; i < w.size(); ++i) {
    if (!quoted[i] && w[i].rfind("limit=", 0) == 0) limit = small_limit(limit, w[i], kMaxWaiters);
    else if (prefix) throw InvalidRequest("usage: waiters [PREFIX] [limit=N]");
    else prefix = w[i];
  }
  json rows = json::array();
  for (const WaiterInfo& x : engine.waiters(ns, prefix.value_or("/"), limit.value_or(kMaxWaiters)))
    rows.push_back(json_codec::waiter(x));
  return json{{"waiters", rows}};
}

// The options acquire and convert share: ttl=MS, wait=MS, fair=true|false
// and key=KEY, each once (docs/cli.md). True when w (not quoted) was one.
struct WaitOptions {
  Millis ttl{30000}, wait{0};
  bool fair = true;
  std::string key;
  bool seen_ttl = false, seen_wait = false, seen_fair = false;
  bool take(const std::string& w, bool quoted) {
    if (quoted) return false;
    if (w.rfind("ttl=", 0) == 0) ttl = parse_ms(first_time(seen_ttl, w, 4), 4);
    else if (w.rfind("wait=", 0) == 0) wait = parse_ms(first_time(seen_wait, w, 5), 5);
    else if (w == "fair=true" || w == "fair=false") fair = first_time(seen_fair, w, 5) == "fair=true";
    else if (w.rfind("fair=", 0) == 0) throw InvalidRequest("fair= takes true or false");
    else if (w.rfind("key=", 0) == 0) key = once(key, w, 4);
    else return false;
    return true;
  }
  // Into a LockRequest or a ConvertRequest.
  template <class Request>
  void apply(Request& r) const {
    r.ttl = ttl;
    r.wait = wait;
    r.fair = fair;
    r.idempotency_key = key;
  }
};

// acquire OWNER OP PATH [DST_PATH] [ttl=MS] [wait=MS] [fair=...] [reenter=ID token=TOKEN] [key=KEY]
json acquire(LockEngine& engine, const std::string& ns, const std::vector<std::string>& w,
             const std::vector<bool>& quoted, WaitingAcquire* waiting) {
  LockRequest req;
  req.ns = ns;
  std::vector<std::string> positional;
  WaitOptions o;
  for (std::size_t i = 1; i < w.size(); ++i) {
    if (o.take(w[i], quoted[i])) continue;
    if (!quoted[i] && w[i].rfind("reenter=", 0) == 0) req.reenter_id = once(req.reenter_id, w[i], 8);
    else if (!quoted[i] && w[i].rfind("token=", 0) == 0) req.reenter_token = once(req.reenter_token, w[i], 6);
    else positional.push_back(w[i]);
  }
  o.apply(req);
  if (positional.size() < 3 || positional.size() > 4)
    throw InvalidRequest(
        "usage: acquire OWNER OP PATH [DST_PATH] [ttl=MS] [wait=MS] [fair=true|false] [reenter=ID token=TOKEN] "
        "[key=IDEMPOTENCY_KEY]");
  if (req.reenter_id.empty() != req.reenter_token.empty())
    throw InvalidRequest("reenter=ID and token=TOKEN come together");
  req.owner = positional[0];
  req.op = positional[1];
  req.targets = targets_of(engine, req.op, {positional.begin() + 2, positional.end()});
  const AcquireResult res = acquire_stoppable(engine, req, waiting);
  return json_codec::acquire_result(res);
}

// convert ID TOKEN OP PATH [DST_PATH] [ttl=MS] [wait=MS] [fair=true|false] [key=KEY]
// (docs/design.md#conversion). A waiting conversion is not stopped by
// `cancel` (answered {"cancelled":false}): it ends at its wait.
json convert(LockEngine& engine, const std::string& ns, const std::vector<std::string>& w,
             const std::vector<bool>& quoted) {
  ConvertRequest req;
  req.ns = ns;
  std::vector<std::string> positional;
  WaitOptions o;
  for (std::size_t i = 1; i < w.size(); ++i)
    if (!o.take(w[i], quoted[i])) positional.push_back(w[i]);
  o.apply(req);
  if (positional.size() < 4 || positional.size() > 5)
    throw InvalidRequest(
        "usage: convert ID TOKEN OP PATH [DST_PATH] [ttl=MS] [wait=MS] [fair=true|false] [key=IDEMPOTENCY_KEY]");
  req.id = positional[0];
  req.token = positional[1];
  req.op = positional[2];
  req.targets = targets_of(engine, req.op, {positional.begin() + 3, positional.end()});
  return json_codec::acquire_result(engine.convert(req));
}

// locks [PREFIX] [limit=N] [after=CURSOR]
json locks(LockEngine& engine, const std::string& ns, const std::vector<std::string>& w,
           const std::vector<bool>& quoted) {
  const char* usage = "usage: locks [PREFIX] [limit=N] [after=CURSOR]";
  std::optional<std::string> prefix, after;
  std::optional<std::size_t> limit;
  for (std::size_t i = 1; i < w.size(); ++i) {
    if (!quoted[i] && w[i].rfind("limit=", 0) == 0) {
      if (limit) throw InvalidRequest("limit= is given twice");
      limit = parse_limit(w[i]);
    } else if (!quoted[i] && w[i].rfind("after=", 0) == 0) {
      if (after) throw InvalidRequest("after= is given twice");
      after = w[i].substr(6);
      if (after->empty()) throw InvalidRequest("after= needs a cursor: the \"next\" of the previous page");
    } else {
      if (prefix) throw InvalidRequest(usage);
      prefix = w[i];
    }
  }
  json locks = json::array();
  if (!limit) {  // the whole list, as before paging existed
    if (after) throw InvalidRequest("after= needs limit=");
    for (const LockInfo& l : engine.list(ns, prefix.value_or("/"))) locks.push_back(json_codec::lock(l));
    return json{{"locks", locks}};
  }
  const ListPage page = engine.list_page(ns, prefix.value_or("/"), *limit, after.value_or(""));
  for (const LockInfo& l : page.locks) locks.push_back(json_codec::lock(l));
  return json{{"locks", locks}, {"next", page.next.empty() ? json(nullptr) : json(page.next)}};
}

// keep ID TOKEN ttl=MS, kept ID, unkeep ID (the `keep` feature); nullopt
// for any other command.
std::optional<json> keeping(KeptLocks* kept, const std::vector<std::string>& w, const std::vector<bool>& quoted) {
  const std::string& cmd = w[0];
  if (cmd != "keep" && cmd != "kept" && cmd != "unkeep") return std::nullopt;
  if (!kept) throw InvalidRequest(fmt::format("'{}' needs the shell's input loop", cmd));
  if (cmd == "keep") {
    if (w.size() != 4 || quoted[3] || w[3].rfind("ttl=", 0) != 0) throw InvalidRequest("usage: keep ID TOKEN ttl=MS");
    return kept->keep(w[1], w[2], parse_ms(w[3], 4));
  }
  if (w.size() != 2) throw InvalidRequest(fmt::format("usage: {} ID", cmd));
  return cmd == "kept" ? kept->kept(w[1]) : kept->unkeep(w[1]);
}

json run(LockEngine& engine, const std::string& ns, const std::vector<std::string>& w, const std::vector<bool>& quoted,
         WaitingAcquire* waiting, KeptLocks* kept) {
  const std::string& cmd = w[0];
  auto arity = [&](std::size_t lo, std::size_t hi, const char* usage) {
    if (w.size() < lo || w.size() > hi) throw InvalidRequest(fmt::format("usage: {}", usage));
  };
  if (cmd == "acquire") return acquire(engine, ns, w, quoted, waiting);
  if (cmd == "convert") return convert(engine, ns, w, quoted);
  if (cmd == "release") {
    arity(3, 3, "release ID TOKEN");
    if (kept) kept->forget(w[1]);  // a released lock is no longer kept (nor lost)
    return json{{"released", engine.release(ns, w[1], w[2])}};
  }
  if (cmd == "renew") {
    arity(3, 4, "renew ID TOKEN [ttl=MS]");
    std::optional<Millis> ttl;
    if (w.size() == 4) {
      if (quoted[3] || w[3].rfind("ttl=", 0) != 0) throw InvalidRequest("usage: renew ID TOKEN [ttl=MS]");
      ttl = parse_ms(w[3], 4);
    }
    return json{{"renewed", engine.renew(ns, w[1], w[2], ttl)}};
  }
  if (cmd == "locks") return locks(engine, ns, w, quoted);
  if (cmd == "held") {
    arity(3, 3, "held ID TOKEN");
    return json{{"held", engine.is_held(ns, w[1], w[2])}};
  }
  if (cmd == "force-release") {
    arity(2, 2, "force-release ID");
    return json{{"released", engine.force_release(ns, w[1])}};
  }
  if (cmd == "hello") {
    arity(1, 1, "hello");
    return hello();
  }
  if (cmd == "blockers") return blockers(engine, ns, w, quoted);
  if (cmd == "waiters") return waiters(engine, ns, w, quoted);
  if (auto answer = keeping(kept, w, quoted)) return *answer;
  throw InvalidRequest(fmt::format(
      "unknown command '{}' (acquire, release, renew, held, locks, force-release, blockers, waiters, hello, cancel, "
      "keep, kept, unkeep)",
      cmd));
}

}  // namespace

std::optional<std::vector<std::string>> split_words(const std::string& line, std::vector<bool>& quoted,
                                                    std::string& error) {
  std::vector<std::string> words;
  quoted.clear();
  std::size_t i = 0;
  while (true) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i == line.size()) break;
    std::string word;
    if (line[i] == '"') {
      ++i;
      bool closed = false;
      while (i < line.size()) {
        const char c = line[i++];
        if (c == '"') {
          closed = true;
          break;
        }
        if (c == '\\') {
          if (i == line.size() || (line[i] != '"' && line[i] != '\\')) {
            error = "in a quoted word, a backslash must be followed by \" or \\";
            return std::nullopt;
          }
          word += line[i++];
        } else {
          word += c;
        }
      }
      if (!closed) {
        error = "unterminated quote";
        return std::nullopt;
      }
      if (i < line.size() && line[i] != ' ' && line[i] != '\t') {
        error = "a closing quote must end the word";
        return std::nullopt;
      }
      quoted.push_back(true);
    } else {
      while (i < line.size() && line[i] != ' ' && line[i] != '\t') word += line[i++];
      quoted.push_back(false);
    }
    words.push_back(std::move(word));
  }
  return words;
}

namespace {

// answer_line, with the shell's waiting acquire and, for a `cancel` line,
// what the reader found when it read it (nullopt: not a cancel line).
std::string answer(LockEngine& engine, const std::string& ns, const std::string& line, WaitingAcquire* waiting,
                   KeptLocks* kept, std::optional<bool> cancelled) {
  // Lines end with LF alone. A CR is answered with an error, never skipped:
  // a client that sends CRLF learns it at its first line, and every line
  // that is not empty gets its answer (docs/cli.md).
  if (line.find('\r') != std::string::npos)
    return dump(error("the line holds a carriage return (CR): lines end with LF alone, not CRLF"));
  const std::size_t first = line.find_first_not_of(" \t");
  if (first == std::string::npos || line[first] == '#') return "";
  std::vector<bool> quoted;
  std::string err;
  const auto words = split_words(line, quoted, err);
  if (!words) return dump(error(err));
  if (words->size() == 1 && (*words)[0] == "cancel" && !quoted[0])
    return dump(json{{"cancelled", cancelled.value_or(false)}});
  try {
    return dump(run(engine, ns, *words, quoted, waiting, kept));
  } catch (const std::exception& e) {
    return dump(error(e.what()));
  }
}

// Is `line` the command `cancel` (blanks around it allowed)?
bool is_cancel(const std::string& line) {
  const std::size_t first = line.find_first_not_of(" \t");
  const std::size_t last = line.find_last_not_of(" \t");
  return first != std::string::npos && line.compare(first, last - first + 1, "cancel") == 0;
}

// Lines read ahead of their answers, each with what a `cancel` line found.
struct LineQueue {
  std::mutex mutex;
  std::condition_variable added;
  std::deque<std::pair<std::string, std::optional<bool>>> lines;
  bool ended = false;
};

}  // namespace

std::string answer_line(LockEngine& engine, const std::string& ns, const std::string& line) {
  return answer(engine, ns, line, nullptr, nullptr, std::nullopt);
}

namespace {

// Ctrl-C (SIGINT) or SIGTERM while the shell runs: the handler only writes
// the signal's number to a pipe (async-signal-safe); a watcher thread reads
// it, stops the waiting acquire (nothing held, its answer written) and ends
// the line loop; then the shell dies of that signal, as it did before it
// handled any. Without a wait in progress the effect is the same as before.
class SignalWatch {
 public:
  explicit SignalWatch(WaitingAcquire& waiting, LineQueue& q) {
    if (::pipe2(pipe_, O_CLOEXEC) != 0) return;
    write_fd.store(pipe_[1]);
    struct sigaction sa {};
    sa.sa_handler = [](int sig) {
      const int saved = errno;
      const auto byte = static_cast<unsigned char>(sig);
      (void)!::write(write_fd.load(), &byte, 1);
      errno = saved;
    };
    ::sigemptyset(&sa.sa_mask);
    for (const int sig : {SIGINT, SIGTERM}) ::sigaction(sig, &sa, nullptr);
    thread_ = std::thread([this, &waiting, &q] {
      unsigned char byte = 0;
      while (::read(pipe_[0], &byte, 1) < 0 && errno == EINTR) {
      }
      if (byte == 0) return;  // the shell ended normally
      signal_.store(byte);
      waiting.cancel();
      std::lock_guard guard(q.mutex);
      q.ended = true;
      q.added.notify_one();
    });
  }
  ~SignalWatch() {
    if (!thread_.joinable()) return;
    for (const int sig : {SIGINT, SIGTERM}) ::signal(sig, SIG_DFL);
    const unsigned char zero = 0;
    (void)!::write(pipe_[1], &zero, 1);
    thread_.join();
    ::close(pipe_[0]);
    ::close(pipe_[1]);
  }
  // After a signal, once the waiting acquire (if any) was stopped and
  // answered: ends the process as the signal's default action does.
  void end_if_signalled() const {
    const int sig = signal_.load();
    if (sig == 0) return;
    ::signal(sig, SIG_DFL);
    ::raise(sig);
  }

 private:
  static inline std::atomic<int> write_fd{-1};
  int pipe_[2] = {-1, -1};
  std::atomic<int> signal_{0};
  std::thread thread_;
};

}  // namespace

// A reader thread reads ahead, so a `cancel` line stops the acquire that
// waits now; every line is still answered in order by this thread.
void run_shell(LockEngine& engine, const std::string& ns, std::istream& in, std::ostream& out) {
  WaitingAcquire waiting;
  KeptLocks kept(engine, ns);
  LineQueue q;
  SignalWatch signals(waiting, q);
  std::thread reader([&] {
    std::string line;
    while (std::getline(in, line)) {
      std::optional<bool> cancelled;
      if (is_cancel(line)) cancelled = waiting.cancel();
      std::lock_guard guard(q.mutex);
      q.lines.emplace_back(std::move(line), cancelled);
      q.added.notify_one();
    }
    std::lock_guard guard(q.mutex);
    q.ended = true;
    q.added.notify_one();
  });
  while (true) {
    std::unique_lock guard(q.mutex);
    q.added.wait(guard, [&] { return q.ended || !q.lines.empty(); });
    if (q.lines.empty()) break;
    auto [line, cancelled] = std::move(q.lines.front());
    q.lines.pop_front();
    guard.unlock();
    const std::string reply = answer(engine, ns, line, &waiting, &kept, cancelled);
    if (!reply.empty()) {
      out << reply << '\n';
      out.flush();
    }
    signals.end_if_signalled();
  }
  signals.end_if_signalled();
  reader.join();
}

}  // namespace pathlock::cli
