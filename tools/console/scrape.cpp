// The console's scraper (scrape.hpp): URLs, the pulling threads, and the
// sources' part of /api/grid.
//
// Lock order: Impl::mu only; no pull (network) runs under it. Each source
// thread pulls, then waits on `wake` for its next turn: `every` elapsed, a
// page wanting a pull newer than its last one (`wanted`), or stop. Pages
// wait on `pulled`, notified after every pull.
#include "scrape.hpp"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>

namespace pathlock::console {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

bool printable_ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c > ' ' && c < 0x7f; });
}

milliseconds ms(Clock::duration d) {
  return std::chrono::duration_cast<milliseconds>(d);
}

std::string pull_failure(httplib::Error e, const ScrapeOptions& o) {
  switch (e) {
    case httplib::Error::Connection:
      return "cannot connect (refused, unreachable or no such host)";
    case httplib::Error::ConnectionTimeout:
      return fmt::format("no connection within {} ms", o.connect_timeout.count());
    case httplib::Error::Read:
      return fmt::format("no complete answer (nothing read for {} ms, or the connection was closed)",
                         o.read_timeout.count());
    case httplib::Error::Write:
      return "could not send the request";
    default:
      return "the request failed: " + httplib::to_string(e);
  }
}

const char* state_name(SourceState::State s) {
  switch (s) {
    case SourceState::State::ok:
      return "ok";
    case SourceState::State::error:
      return "error";
    default:
      return "pending";
  }
}

}  // namespace

ScrapeUrl parse_scrape_url(std::string_view url) {
  const auto bad = [&](std::string_view why) {
    return InvalidRequest(
        fmt::format("bad scrape URL '{}': {} (use http://HOST:PORT/metrics)", url.substr(0, 200), why));
  };
  std::string lower(url.substr(0, 8));
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower == "https://") throw bad("https is not supported, only http://");
  if (lower.substr(0, 7) != "http://") throw bad("it must start with http://");
  const std::string_view rest = url.substr(7);
  if (!printable_ascii(rest)) throw bad("it holds a blank, a control character or a non-ASCII byte");
  if (rest.find('#') != std::string_view::npos) throw bad("a fragment (#) means nothing here");
  const std::size_t path_at = rest.find_first_of("/?");
  const std::string_view authority = rest.substr(0, path_at);
  const std::string_view path = path_at == std::string_view::npos ? "" : rest.substr(path_at);
  if (authority.find('@') != std::string_view::npos) throw bad("user information (user@) is not supported");

  ScrapeUrl u{std::string(url), "", 80, ""};
  std::string_view host = authority, port;
  bool has_port = false;
  if (!authority.empty() && authority[0] == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) throw bad("an IPv6 address without its closing ']'");
    host = authority.substr(1, close - 1);
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty() && after[0] != ':') throw bad("text after the IPv6 address");
    has_port = !after.empty();
    if (has_port) port = after.substr(1);
    const auto ipv6 = [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.'; };
    if (host.empty() || !std::all_of(host.begin(), host.end(), ipv6)) throw bad("not an IPv6 address in brackets");
  } else {
    const std::size_t colon = authority.find(':');
    if (colon != authority.rfind(':')) throw bad("an IPv6 address goes in brackets (http://[::1]:9464/metrics)");
    has_port = colon != std::string_view::npos;
    if (has_port) {
      host = authority.substr(0, colon);
      port = authority.substr(colon + 1);
    }
    const auto name = [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
    };
    if (host.empty()) throw bad("no host");
    if (!std::all_of(host.begin(), host.end(), name)) throw bad("the host has a character no host name has");
  }
  u.host = host;
  if (has_port) {
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), u.port);
    if (port.empty() || ec != std::errc() || end != port.data() + port.size() || u.port < 1 || u.port > 65535)
      throw bad("the port must be a whole number from 1 to 65535");
  }
  u.path = path.empty() ? "/metrics" : path[0] == '?' ? "/" + std::string(path) : std::string(path);
  return u;
}

namespace {

struct Source {
  ScrapeUrl url;
  std::unique_ptr<httplib::Client> client;  // used by the thread; stop()ped by ~Impl
  std::thread thread;
  // Under Impl::mu:
  SourceState::State state = SourceState::State::pending;
  std::string error;
  Clock::time_point done_started{};  // when the last finished pull started
  Clock::time_point ended{}, ok_ended{};
  bool ended_once = false, ok_once = false;
  milliseconds took{0};
  RefusalText counts;
  Clock::time_point wanted{};  // a page wants a pull that started at or after this
  bool finished = false;       // the thread has left its loop
};

}  // namespace

struct Scraper::Impl {
  ScrapeOptions opt;
  std::mutex mu;
  std::condition_variable wake, pulled;
  bool stopping = false;
  std::atomic<bool> stop_flag{false};  // read by a pull in progress, without mu
  std::vector<std::unique_ptr<Source>> sources;

  explicit Impl(ScrapeOptions o) : opt(std::move(o)) {}
  ~Impl() {
    {
      std::lock_guard lock(mu);
      stopping = true;
    }
    stop_flag = true;
    wake.notify_all();
    // stop() cuts a request in progress; one that starts just after is cut
    // by the next stop(), so repeat until the thread has ended.
    for (auto& s : sources) {
      std::unique_lock lock(mu);
      while (s->thread.joinable() && !s->finished) {
        lock.unlock();
        s->client->stop();
        lock.lock();
        pulled.wait_for(lock, std::chrono::milliseconds(20), [&] { return s->finished; });
      }
    }
    for (auto& s : sources)
      if (s->thread.joinable()) s->thread.join();
  }

  // One GET of the source's text; "" and its counts, or why it failed.
  std::pair<std::string, RefusalText> pull(Source& s) const {
    std::string body, cut;
    const Clock::time_point deadline = Clock::now() + opt.pull_limit;
    const httplib::Headers headers{{"Accept", "text/plain; version=0.0.4"}};
    const httplib::Result res = s.client->Get(s.url.path, headers, [&](const char* data, std::size_t n) {
      if (stop_flag) cut = "the console is stopping";
      if (body.size() + n > opt.max_body) cut = fmt::format("the answer is longer than {} bytes", opt.max_body);
      if (Clock::now() > deadline) cut = fmt::format("the answer took longer than {} ms", opt.pull_limit.count());
      if (!cut.empty()) return false;
      body.append(data, n);
      return true;
    });
    if (!cut.empty()) return {cut, {}};
    if (!res) return {pull_failure(res.error(), opt), {}};
    if (res->status != 200) return {fmt::format("HTTP status {} (expected 200)", res->status), {}};
    RefusalText text = read_refusals(body);
    if (!text.error.empty()) return {"not Prometheus text: " + text.error, {}};
    return {"", std::move(text)};
  }

  void run(Source& s) {
    std::unique_lock lock(mu);
    while (!stopping) {
      const Clock::time_point started = Clock::now();
      lock.unlock();
      auto [error, counts] = pull(s);
      lock.lock();
      s.ended = Clock::now();
      s.done_started = started;
      s.ended_once = true;
      s.took = ms(s.ended - started);
      if (error.empty()) {
        s.state = SourceState::State::ok;
        s.error.clear();
        s.counts = std::move(counts);
        s.ok_ended = s.ended;
        s.ok_once = true;
      } else {
        s.state = SourceState::State::error;
        s.error = std::move(error);
      }
      pulled.notify_all();
      wake.wait_for(lock, opt.every, [&] { return stopping || s.wanted > s.done_started; });
    }
    s.finished = true;
    pulled.notify_all();
  }
};

Scraper::Scraper(ScrapeOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {
  Impl& m = *impl_;
  if (m.opt.urls.size() > kMaxScrapeSources)
    throw InvalidRequest(fmt::format("at most {} --scrape sources, got {}", kMaxScrapeSources, m.opt.urls.size()));
  std::vector<std::tuple<std::string, int, std::string>> seen;
  for (const std::string& text : m.opt.urls) {
    auto s = std::make_unique<Source>();
    s->url = parse_scrape_url(text);
    std::string host = s->url.host;
    std::transform(host.begin(), host.end(), host.begin(), [](unsigned char c) { return std::tolower(c); });
    auto key = std::make_tuple(host, s->url.port, s->url.path);
    if (std::find(seen.begin(), seen.end(), key) != seen.end())
      throw InvalidRequest(fmt::format("--scrape {} is given twice (its counts would be added twice)", text));
    seen.push_back(std::move(key));
    s->client = std::make_unique<httplib::Client>(s->url.host, s->url.port);
    s->client->set_connection_timeout(m.opt.connect_timeout);
    s->client->set_read_timeout(m.opt.read_timeout);
    s->client->set_write_timeout(m.opt.read_timeout);
    m.sources.push_back(std::move(s));
  }
  for (auto& s : m.sources) s->thread = std::thread([&m, src = s.get()] { m.run(*src); });
}

Scraper::~Scraper() = default;

std::vector<SourceState> Scraper::sources(milliseconds fresh, milliseconds wait) {
  Impl& m = *impl_;
  std::unique_lock lock(m.mu);
  const Clock::time_point asked = Clock::now(), newer_than = asked - fresh;
  const auto is_fresh = [&](const Source& s) { return s.ended_once && s.done_started >= newer_than; };
  const auto all_fresh = [&] {
    return std::all_of(m.sources.begin(), m.sources.end(), [&](const auto& s) { return is_fresh(*s); });
  };
  if (!all_fresh()) {
    for (auto& s : m.sources)
      if (!is_fresh(*s)) s->wanted = std::max(s->wanted, newer_than);
    m.wake.notify_all();
    m.pulled.wait_until(lock, asked + wait, all_fresh);
  }
  const Clock::time_point now = Clock::now();
  std::vector<SourceState> out;
  for (const auto& s : m.sources) {
    SourceState v;
    v.url = s->url.text;
    v.state = s->state;
    v.error = s->error;
    if (s->ended_once) v.pulled_ago = ms(now - s->ended);
    if (s->ok_once) v.ok_ago = ms(now - s->ok_ended);
    v.took = s->took;
    v.counts = s->counts;
    out.push_back(std::move(v));
  }
  return out;
}

nlohmann::json scraped_grid_json(const std::vector<SourceState>& sources, const MatrixTable& matrix) {
  using json = nlohmann::json;
  const std::size_t n = matrix.op_count;
  std::vector<std::uint64_t> cells(n * n, 0);
  std::map<std::pair<std::string, std::string>, std::uint64_t> unknown;
  json list = json::array();
  std::size_t reporting = 0;
  for (const SourceState& s : sources) {
    std::uint64_t known = 0, other = 0;
    for (const auto& [pair, count] : s.counts.pairs) {
      const int i = matrix.op_index(pair.first), j = matrix.op_index(pair.second);
      const bool in_matrix = i >= 0 && j >= 0;
      std::uint64_t& cell =
          in_matrix ? cells[static_cast<std::size_t>(i) * n + static_cast<std::size_t>(j)] : unknown[pair];
      std::uint64_t& sum = in_matrix ? known : other;
      cell = saturating_add(cell, count);
      sum = saturating_add(sum, count);
    }
    if (s.ok_ago) ++reporting;
    const auto ago = [](const std::optional<milliseconds>& d) { return d ? json(d->count()) : json(nullptr); };
    list.push_back({{"url", s.url},
                    {"state", state_name(s.state)},
                    {"error", s.error},
                    {"pulled_ms_ago", ago(s.pulled_ago)},
                    {"ok_ms_ago", ago(s.ok_ago)},
                    {"took_ms", s.took.count()},
                    {"refusals", known},
                    {"unknown_refusals", other},
                    {"family_seen", s.counts.family_seen}});
  }
  json refusals = json::array();
  for (std::size_t i = 0; i < n; ++i)
    refusals.push_back(json(std::vector<std::uint64_t>(cells.begin() + static_cast<std::ptrdiff_t>(i * n),
                                                       cells.begin() + static_cast<std::ptrdiff_t>((i + 1) * n))));
  std::vector<std::pair<std::pair<std::string, std::string>, std::uint64_t>> sorted(unknown.begin(), unknown.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  constexpr std::size_t kMaxUnknown = 100;
  json unknown_ops = json::array();
  for (std::size_t i = 0; i < sorted.size() && i < kMaxUnknown; ++i)
    unknown_ops.push_back(
        {{"op", sorted[i].first.first}, {"held_op", sorted[i].first.second}, {"count", sorted[i].second}});
  return {{"refusals", refusals},
          {"reporting", reporting},
          {"sources", list},
          {"unknown_ops", unknown_ops},
          {"unknown_ops_left_off", sorted.size() - unknown_ops.size()}};
}

}  // namespace pathlock::console
