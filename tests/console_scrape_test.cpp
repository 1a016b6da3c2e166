// `pathlock console --scrape` (tools/console/scrape.hpp) against real
// exporters: `pathlock shell --metrics-listen` child processes (one with
// another matrix), a dead port, pages that are not Prometheus text, and an
// HTTP server of this test serving hostile text.
#ifdef PATHLOCK_TEST_WITH_METRICS_SERVER
#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <pathlock/memory.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "cmake/pathlock_child_process.hpp"
#include "console_server.hpp"
#include "support/metered_engine.hpp"
#include "scrape.hpp"
#include "support/process.hpp"

namespace {

using namespace pathlock;
using json = nlohmann::json;
using Counts = std::map<std::pair<std::string, std::string>, std::uint64_t>;

// A real `pathlock shell --metrics-listen 127.0.0.1:0`: commands through its
// stdin, answers from its stdout, its exporter's URL from its stderr.
class MetricsShell {
 public:
  explicit MetricsShell(const std::vector<std::string>& extra = {}) {
    int in[2], out[2], err[2];
    REQUIRE(pipe2(in, O_CLOEXEC) == 0);
    REQUIRE(pipe2(out, O_CLOEXEC) == 0);
    REQUIRE(pipe2(err, O_CLOEXEC) == 0);
    std::vector<std::string> argv{PATHLOCK_CLI, "shell", "--metrics-listen", "127.0.0.1:0"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    child_.pid = test::spawn(argv, in[0], out[1], err[1]);
    close(in[0]);
    close(out[1]);
    close(err[1]);
    to_ = in[1];
    from_ = out[0];
    err_ = err[0];
    const std::string line = test::read_line(err_);  // "pathlock: metrics at http://127.0.0.1:PORT/metrics"
    INFO(line);
    const auto at = line.find("metrics at ");
    REQUIRE(at != std::string::npos);
    url_ = line.substr(at + 11);
  }
  ~MetricsShell() {
    for (int fd : {to_, from_, err_})
      if (fd >= 0) close(fd);
  }
  const std::string& url() const { return url_; }
  json ask(const std::string& command) {
    const std::string line = command + "\n";
    REQUIRE(write(to_, line.data(), line.size()) == static_cast<ssize_t>(line.size()));
    const std::string answer = test::read_line(from_);
    INFO(command << " -> " << answer);
    REQUIRE_FALSE(answer.empty());
    return json::parse(answer);
  }
  // What its exporter serves now.
  std::string metrics() const {
    httplib::Client client("127.0.0.1", std::stoi(url_.substr(url_.rfind(':') + 1)));
    const auto res = client.Get("/metrics");
    REQUIRE(res);
    REQUIRE(res->status == 200);
    return res->body;
  }
  void kill() {
    ::kill(child_.pid, SIGKILL);
    waitpid(child_.pid, nullptr, 0);
    child_.pid = -1;
  }

 private:
  test::ChildGuard child_;  // killed when the test ends, also on a failed REQUIRE
  int to_ = -1, from_ = -1, err_ = -1;
  std::string url_;
};

// The refusals an exporter's text reports, by (op, held_op), read with a
// regex over pathlock's own line layout (not with the reader under test).
Counts refusals_in(const std::string& text) {
  static const std::regex sample(
      R"re(pathlock_refusals_total\{op="([a-z_]+)",held_op="([a-z_]+)",relation="[a-z_]+"\} ([0-9]+))re");
  Counts out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    // Every series is exported from the start at 0: count the ones that happened.
    if (std::regex_match(line, m, sample) && std::stoull(m[3].str()) > 0)
      out[{m[1].str(), m[2].str()}] += std::stoull(m[3].str());
  }
  return out;
}

Counts plus(Counts a, const Counts& b) {
  for (const auto& [k, v] : b) a[k] += v;
  return a;
}

// The grid's cells that are not zero, by operation names.
Counts nonzero_cells(const json& grid) {
  Counts out;
  const json& ops = grid["ops"];
  for (std::size_t i = 0; i < ops.size(); ++i)
    for (std::size_t j = 0; j < ops.size(); ++j)
      if (const std::uint64_t n = grid["refusals"][i][j]; n > 0)
        out[{ops[i]["name"].get<std::string>(), ops[j]["name"].get<std::string>()}] = n;
  return out;
}

// The console under test, over an embedded engine of its own.
struct Console {
  std::shared_ptr<Metrics> metrics = std::make_shared<Metrics>();
  std::unique_ptr<LockEngine> engine = test::metered_memory_engine(metrics);
  std::unique_ptr<console::ConsoleServer> server;
  std::unique_ptr<httplib::Client> client;

  explicit Console(std::vector<std::string> scrape) {
    console::ConsoleOptions o;
    o.metrics = metrics;
    o.namespaces = [] { return std::vector<std::string>{"web"}; };
    o.scrape = std::move(scrape);
    o.scrape_fresh = std::chrono::milliseconds(0);  // every /api/grid pulls anew: no waiting in the test
    server = std::make_unique<console::ConsoleServer>(*engine, o);
    client = std::make_unique<httplib::Client>("127.0.0.1", server->port());
  }
  json get(const std::string& path) {
    const auto res = client->Get(path);
    REQUIRE(res);
    INFO(path << " -> " << res->body);
    REQUIRE(res->status == 200);
    return json::parse(res->body);
  }
};

}  // namespace

TEST_CASE("console --scrape: the grid is the sum of what the engines' own /metrics report", "[console][metrics]") {
  MetricsShell a, b;
  REQUIRE(a.ask("acquire ann upload /s/A/f")["granted"] == true);
  CHECK(a.ask("acquire bob delete_folder /s/A")["granted"] == false);  // delete_folder x upload
  CHECK(a.ask("acquire cat delete_folder /s")["granted"] == false);    // delete_folder x upload
  REQUIRE(b.ask("acquire dan delete_folder /t")["granted"] == true);
  CHECK(b.ask("acquire eve upload /t/x")["granted"] == false);       // upload x delete_folder
  CHECK(b.ask("acquire fay delete_folder /t")["granted"] == false);  // delete_folder x delete_folder
  REQUIRE(b.ask("acquire gil upload /u/f")["granted"] == true);
  CHECK(b.ask("acquire hal delete_folder /u")["granted"] == false);  // delete_folder x upload

  Console c({a.url(), b.url()});
  // The console's own dry run counts into its metrics, but with sources the
  // grid is theirs alone.
  REQUIRE(c.engine->acquire({.ns = "web", .owner = "zed", .op = "upload", .targets = {{"target", "/z"}}}).granted());
  REQUIRE(c.get("/api/why?ns=web&op=delete_folder&path=/z")["blockers"].size() == 1);
  CHECK(c.metrics->snapshot().refusals_total() == 1);

  json grid = c.get("/api/grid");
  const Counts reported = plus(refusals_in(a.metrics()), refusals_in(b.metrics()));
  CHECK(reported == Counts{{{"delete_folder", "upload"}, 3},
                           {{"upload", "delete_folder"}, 1},
                           {{"delete_folder", "delete_folder"}, 1}});
  CHECK(nonzero_cells(grid) == reported);
  CHECK(grid["counted_by"] == "sources");
  CHECK(grid["reporting"] == 2);
  REQUIRE(grid["sources"].size() == 2);
  for (const auto& [i, shell, count] : {std::tuple{0, &a, 2}, std::tuple{1, &b, 3}}) {
    const json& s = grid["sources"][i];
    INFO(s.dump());
    CHECK(s["url"] == shell->url());
    CHECK(s["state"] == "ok");
    CHECK(s["error"] == "");
    CHECK(s["refusals"] == count);
    CHECK(s["unknown_refusals"] == 0);
    CHECK(s["family_seen"] == true);
    CHECK(s["ok_ms_ago"].is_number());
  }
  CHECK(grid["unknown_ops"].empty());
  // The matrix's rules are the console's, as before.
  const int del = default_matrix().op_index("delete_folder");
  CHECK(grid["rules"][del][del] == json({"same", "held_ancestor", "held_descendant"}));

  // A refusal made now is in the next answer (its pull is older than scrape_fresh).
  CHECK(a.ask("acquire ivy delete_folder /")["granted"] == false);
  grid = c.get("/api/grid");
  const Counts now = plus(refusals_in(a.metrics()), refusals_in(b.metrics()));
  CHECK(now.at({"delete_folder", "upload"}) == 4);
  CHECK(nonzero_cells(grid) == now);
}

TEST_CASE("console --scrape: a failing source is reported, the others count, other matrices are listed apart",
          "[console][metrics]") {
  MetricsShell live;
  MetricsShell other({"--matrix", PATHLOCK_SOURCE_DIR "/tests/data/refined.json"});  // write, move, scan
  REQUIRE(live.ask("acquire ann upload /a/f")["granted"] == true);
  CHECK(live.ask("acquire bob delete_folder /a")["granted"] == false);
  REQUIRE(other.ask("acquire cat write /r/x")["granted"] == true);
  CHECK(other.ask("acquire dan write /r/x")["granted"] == false);
  CHECK(refusals_in(other.metrics()) == Counts{{{"write", "write"}, 1}});

  Console html({});  // another console: "/" is its page, not Prometheus text
  const int dead = child_process::free_loopback_port();
  REQUIRE(dead > 0);
  const std::string dead_url = "http://127.0.0.1:" + std::to_string(dead) + "/metrics";
  Console c({live.url(), other.url(), dead_url, html.server->url(), html.server->url() + "no/such/page"});

  json grid = c.get("/api/grid");
  INFO(grid["sources"].dump(1));
  CHECK(nonzero_cells(grid) == Counts{{{"delete_folder", "upload"}, 1}});
  CHECK(grid["reporting"] == 2);
  CHECK(grid["unknown_ops"] == json::parse(R"([{"op": "write", "held_op": "write", "count": 1}])"));
  CHECK(grid["unknown_ops_left_off"] == 0);
  const json& s = grid["sources"];
  REQUIRE(s.size() == 5);
  CHECK(s[1]["state"] == "ok");
  CHECK(s[1]["refusals"] == 0);
  CHECK(s[1]["unknown_refusals"] == 1);
  CHECK(s[2]["url"] == dead_url);
  CHECK(s[2]["state"] == "error");
  CHECK(s[2]["error"] == "cannot connect (refused, unreachable or no such host)");
  CHECK(s[2]["ok_ms_ago"].is_null());
  CHECK(s[2]["pulled_ms_ago"].is_number());
  CHECK(s[3]["state"] == "error");
  CHECK(s[3]["error"] == "not Prometheus text: line 1, column 1: expected a metric name");
  CHECK(s[4]["error"] == "HTTP status 404 (expected 200)");

  // The live engine goes away: its source is an error, and keeps the counts
  // of its last good pull (counters only grow; a gap would read as a drop).
  live.kill();
  grid = c.get("/api/grid");
  CHECK(grid["sources"][0]["state"] == "error");
  CHECK(grid["sources"][0]["error"].get<std::string>().find("cannot connect") == 0);
  CHECK(grid["sources"][0]["ok_ms_ago"].is_number());
  CHECK(nonzero_cells(grid) == Counts{{{"delete_folder", "upload"}, 1}});
  CHECK(grid["reporting"] == 2);
}

TEST_CASE("console --scrape: hostile exporter text is drawn as text, refused, or cut", "[console][metrics]") {
  std::mutex mu;
  std::string text;  // what the exporter serves, under mu
  httplib::Server exporter;
  exporter.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
    std::lock_guard lock(mu);
    res.set_content(text, "text/plain; version=0.0.4");
  });
  const int port = exporter.bind_to_any_port("127.0.0.1");
  REQUIRE(port > 0);
  std::thread serving([&] { exporter.listen_after_bind(); });
  struct Stop {
    httplib::Server& s;
    std::thread& t;
    ~Stop() {
      s.stop();
      t.join();
    }
  } stop{exporter, serving};
  auto serve = [&](std::string t) {
    std::lock_guard lock(mu);
    text = std::move(t);
  };

  serve(
      "# TYPE pathlock_refusals_total counter\n"
      "pathlock_refusals_total{op=\"upload\",held_op=\"create\",relation=\"same\"} 5\n"
      "pathlock_refusals_total{op=\"<img src=x onerror=alert(1)>\",held_op=\"a\\\"b\\\\c\\nd\",relation=\"same\"} 7\n"
      "pathlock_refusals_total{op=\"\xff\xfe\",held_op=\"upload\",relation=\"same\"} 1\n");
  Console c({"http://127.0.0.1:" + std::to_string(port) + "/metrics"});
  json grid = c.get("/api/grid");
  CHECK(grid["sources"][0]["state"] == "ok");
  CHECK(nonzero_cells(grid) == Counts{{{"upload", "create"}, 5}});
  REQUIRE(grid["unknown_ops"].size() == 2);
  CHECK(grid["unknown_ops"][0] ==
        json({{"op", "<img src=x onerror=alert(1)>"}, {"held_op", "a\"b\\c\nd"}, {"count", 7}}));
  CHECK(grid["unknown_ops"][1]["op"] == "\xef\xbf\xbd\xef\xbf\xbd");  // invalid UTF-8 replaced, never refused

  serve("pathlock_refusals_total{op=\"upload\",held_op=\"create\"} 6\n<html>\n");
  grid = c.get("/api/grid");
  CHECK(grid["sources"][0]["state"] == "error");
  CHECK(grid["sources"][0]["error"] == "not Prometheus text: line 2, column 1: expected a metric name");
  CHECK(nonzero_cells(grid) == Counts{{{"upload", "create"}, 5}});  // the last good pull's

  serve(std::string(9u << 20, '#'));  // longer than the 8 MiB a pull reads
  grid = c.get("/api/grid");
  CHECK(grid["sources"][0]["error"] == "the answer is longer than 8388608 bytes");
}

TEST_CASE("console --scrape: a source that never answers does not hold the page", "[console][metrics]") {
  // A listening socket nobody accepts on: the connection opens, no answer comes.
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(listen(fd, 8) == 0);
  REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  const std::string url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/metrics";

  using std::chrono::milliseconds;
  const auto start = std::chrono::steady_clock::now();
  {
    console::Scraper scraper({.urls = {url}, .read_timeout = std::chrono::seconds(60)});
    const auto sources = scraper.sources(milliseconds(0), milliseconds(200));
    REQUIRE(sources.size() == 1);
    CHECK(sources[0].state == console::SourceState::State::pending);
    CHECK_FALSE(sources[0].pulled_ago);
  }  // the destructor cuts the pull short
  // Far below the 60 s the pull would have waited (a bound that holds on a slow machine too).
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
  close(fd);
}

TEST_CASE("console --scrape: URLs", "[console]") {
  const auto url = console::parse_scrape_url("http://127.0.0.1:9464/metrics");
  CHECK((url.host == "127.0.0.1" && url.port == 9464 && url.path == "/metrics"));
  CHECK(console::parse_scrape_url("http://localhost").path == "/metrics");
  CHECK(console::parse_scrape_url("http://localhost").port == 80);
  CHECK(console::parse_scrape_url("HTTP://Exporter.internal:80/x?y=1").path == "/x?y=1");
  CHECK(console::parse_scrape_url("http://h?y=1").path == "/?y=1");
  CHECK(console::parse_scrape_url("http://[::1]:9464").host == "::1");
  const std::map<std::string, std::string> bad{
      {"https://h/metrics", "https is not supported, only http://"},
      {"h:9464/metrics", "it must start with http://"},
      {"http://", "no host"},
      {"http://:80/", "no host"},
      {"http://h:0/", "the port must be a whole number from 1 to 65535"},
      {"http://h:65536/", "the port must be a whole number from 1 to 65535"},
      {"http://h:/", "the port must be a whole number from 1 to 65535"},
      {"http://u:p@h/", "user information (user@) is not supported"},
      {"http://h/a b", "it holds a blank, a control character or a non-ASCII byte"},
      {"http://h/\xc3\xa9", "it holds a blank, a control character or a non-ASCII byte"},
      {"http://h/#top", "a fragment (#) means nothing here"},
      {"http://[::1/", "an IPv6 address without its closing ']'"},
      {"http://[zz]/", "not an IPv6 address in brackets"},
      {"http://::1/", "an IPv6 address goes in brackets (http://[::1]:9464/metrics)"},
      {"http://h!/", "the host has a character no host name has"},
  };
  for (const auto& [text, why] : bad) {
    INFO(text);
    CHECK_THROWS_WITH(console::parse_scrape_url(text),
                      "bad scrape URL '" + text + "': " + why + " (use http://HOST:PORT/metrics)");
  }
  // The same exporter twice would count twice.
  CHECK_THROWS_WITH(Console({"http://127.0.0.1:9/metrics", "http://127.0.0.1:9"}),
                    "--scrape http://127.0.0.1:9 is given twice (its counts would be added twice)");
}
#endif
