// `pathlock console --scrape URL`: the console pulls other engines'
// exporters (pathlock shell --metrics-listen, a service's MetricsServer)
// and draws their refusal counts (docs/console.md#the-metrics-page).
//
// Design: one thread per source pulls its URL every `every` with
// cpp-httplib's client (short timeouts, a bounded body, a bounded whole
// pull) and keeps the refusal counts of its last good pull (exposition.hpp).
// A page that asks for the counts when a source's last pull is older than
// `fresh` wakes that source and waits for it at most `wait`, then answers
// with what it has: a slow or dead source never holds the page for longer.
// A failed pull is recorded on its source (state "error", with why) and
// the source keeps the counts of its last good pull; nothing is fatal.
//
// Counts are summed by operation NAME over the console's matrix: another
// engine's matrix may have operations the console's does not know; those
// pairs are listed apart, never dropped silently.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <pathlock/engine.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "exposition.hpp"

namespace pathlock::console {

// One --scrape URL: http://HOST[:PORT][/PATH[?QUERY]]. The port defaults to
// 80, the path to /metrics; HOST may be a name, an IPv4 address or
// [IPv6]. Only http: there is no TLS client here.
struct ScrapeUrl {
  std::string text;  // as given
  std::string host;  // without brackets
  int port = 80;
  std::string path;  // "/metrics" when the URL has none
};
// Throws InvalidRequest saying what is wrong.
ScrapeUrl parse_scrape_url(std::string_view url);

inline constexpr std::size_t kMaxScrapeSources = 64;

struct ScrapeOptions {
  std::vector<std::string> urls;                    // at most kMaxScrapeSources
  std::chrono::milliseconds every{5000};            // pull each source this often
  std::chrono::milliseconds connect_timeout{1000};  // one connection attempt
  std::chrono::milliseconds read_timeout{2000};     // one read of the answer
  std::chrono::milliseconds pull_limit{5000};       // the whole answer (a slow trickle is cut)
  std::size_t max_body = 8u << 20;                  // bytes of text; a longer answer is an error
};

// A source as the page sees it.
struct SourceState {
  std::string url;
  enum class State { pending, ok, error } state = State::pending;  // pending: no pull finished yet
  std::string error;                                               // state error: why the last pull failed
  // How long ago the last pull (any) and the last good pull ended; none yet: nullopt.
  std::optional<std::chrono::milliseconds> pulled_ago, ok_ago;
  std::chrono::milliseconds took{0};  // the last pull, from connect to the parsed text
  RefusalText counts;                 // of the last good pull (error is always "")
};

class Scraper {
 public:
  // Checks every URL (InvalidRequest for a bad one, or for too many) and
  // starts pulling at once.
  explicit Scraper(ScrapeOptions options);
  // Stops the threads, cutting a pull in progress short (a connection
  // attempt still in progress may take up to connect_timeout).
  ~Scraper();
  Scraper(const Scraper&) = delete;
  Scraper& operator=(const Scraper&) = delete;

  // Every source in the order given. A source whose last pull started more
  // than `fresh` ago (or that never finished one) is asked to pull now, and
  // the call waits for those pulls at most `wait`.
  std::vector<SourceState> sources(std::chrono::milliseconds fresh, std::chrono::milliseconds wait);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The part of /api/grid that comes from the sources (docs/console.md#api):
// "refusals" (op_count x op_count, summed by operation name over the
// sources that had a good pull), "reporting" (how many did), "sources"
// (each one's state) and "unknown_ops" (pairs naming an operation that
// `matrix` lacks, largest first, at most 100; "unknown_ops_left_off" more).
nlohmann::json scraped_grid_json(const std::vector<SourceState>& sources, const MatrixTable& matrix);

}  // namespace pathlock::console
