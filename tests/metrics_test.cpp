// The Prometheus exposition of Metrics, parsed back line by line, and the
// MetricsServer scraped over real HTTP (cpp-httplib's client).
#include <pathlock/memory.hpp>
#include <pathlock/metrics.hpp>
#ifdef PATHLOCK_TEST_WITH_METRICS_SERVER
#include <pathlock/metrics_server.hpp>

#include <httplib.h>
#endif

#include <catch2/catch.hpp>

#include <map>
#include <regex>
#include <set>
#include <sstream>

namespace pathlock::test {
namespace {

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// Parses the text format strictly: HELP and TYPE lines before a family's
// samples, every sample `name{label="value",...} number`. Fails the test on
// any other line.
std::vector<Sample> parse_prometheus(const std::string& text, std::map<std::string, std::string>& types) {
  static const std::regex sample_re(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? ([-+0-9.eE]+|\+Inf|NaN)$)");
  static const std::regex label_re(R"re(([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$))re");
  static const std::regex help_re(R"(^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) .+$)");
  static const std::regex type_re(R"(^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$)");
  std::vector<Sample> out;
  std::set<std::string> helped;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    INFO("line: " << line);
    std::smatch m;
    if (std::regex_match(line, m, help_re)) {
      CHECK(helped.insert(m[1]).second);
      continue;
    }
    if (std::regex_match(line, m, type_re)) {
      CHECK(helped.count(m[1]) == 1);  // HELP first
      CHECK(types.emplace(m[1], m[2]).second);
      continue;
    }
    REQUIRE(std::regex_match(line, m, sample_re));
    Sample s;
    s.name = m[1];
    s.value = m[4] == "+Inf" ? INFINITY : std::stod(m[4]);
    std::string labels = m[3];
    for (std::sregex_iterator it(labels.begin(), labels.end(), label_re), end; it != end; ++it)
      CHECK(s.labels.emplace((*it)[1], (*it)[2]).second);
    std::string family = s.name;
    for (const char* suffix : {"_bucket", "_sum", "_count"})
      if (!types.count(family) && family.size() > std::strlen(suffix) &&
          family.compare(family.size() - std::strlen(suffix), std::string::npos, suffix) == 0)
        family.resize(family.size() - std::strlen(suffix));
    CHECK(types.count(family) == 1);  // TYPE before samples
    if (types[family] == "counter") CHECK(family.size() > 6);
    if (types[family] == "counter") CHECK(family.compare(family.size() - 6, 6, "_total") == 0);
    if (types[family] == "histogram") CHECK(family.compare(family.size() - 8, 8, "_seconds") == 0);
    CHECK(family.rfind("pathlock_", 0) == 0);
    out.push_back(std::move(s));
  }
  return out;
}

// Every histogram: buckets cumulative in `le` order, +Inf == _count.
void check_histograms(const std::vector<Sample>& samples, const std::map<std::string, std::string>& types) {
  for (const auto& [family, type] : types) {
    if (type != "histogram") continue;
    std::map<std::string, std::vector<std::pair<double, double>>> buckets;  // label set (without le) -> (le, value)
    std::map<std::string, double> counts;
    for (const Sample& s : samples) {
      std::string key;
      for (const auto& [k, v] : s.labels)
        if (k != "le") key += k + "=" + v + ";";
      if (s.name == family + "_bucket") {
        REQUIRE(s.labels.count("le") == 1);
        const std::string le = s.labels.at("le");
        buckets[key].emplace_back(le == "+Inf" ? INFINITY : std::stod(le), s.value);
      } else if (s.name == family + "_count") {
        counts[key] = s.value;
      }
    }
    for (const auto& [key, list] : buckets) {
      INFO(family << " " << key);
      REQUIRE(!list.empty());
      for (std::size_t i = 1; i < list.size(); ++i) {
        CHECK(list[i].first > list[i - 1].first);
        CHECK(list[i].second >= list[i - 1].second);
      }
      CHECK(std::isinf(list.back().first));
      REQUIRE(counts.count(key) == 1);
      CHECK(list.back().second == counts[key]);
    }
  }
}

double value_of(const std::vector<Sample>& samples, const std::string& name, const std::map<std::string, std::string>& labels) {
  for (const Sample& s : samples)
    if (s.name == name && s.labels == labels) return s.value;
  return -1;
}

}  // namespace

TEST_CASE("metrics: the Prometheus text parses back, histograms are cumulative", "[metrics]") {
  auto metrics = std::make_shared<Metrics>();
  ObserveOptions observe;
  observe.metrics = metrics;
  auto engine = make_memory_engine(MemoryOptions{nullptr, nullptr, observe});
  const AcquireResult held = engine->acquire({"prom", "ann", "upload", {{"target", "/a/b"}}, Millis{30000}});
  REQUIRE(held.granted());
  REQUIRE_FALSE(engine->acquire({"prom", "bo", "delete_folder", {{"target", "/a"}}, Millis{30000}}).granted());
  REQUIRE_FALSE(engine->acquire({"prom", "cy", "delete_folder", {{"target", "/a"}}, Millis{30000}, Millis{5}}).granted());
  REQUIRE(engine->release("prom", held.grant.id, held.grant.token));
  metrics->observe_redis_call(std::chrono::microseconds(300));
  metrics->observe_redis_call(std::chrono::seconds(1000));  // past the last bound: +Inf only
  metrics->count_retry(RetryReason::moved);
  metrics->observe_call(Backend::postgres, std::chrono::milliseconds(2));
  metrics->count_retry(Backend::postgres, RetryReason::unreachable);
  metrics->count_failover(Backend::redis, FailoverKind::sentinel);

  std::map<std::string, std::string> types;
  const std::vector<Sample> samples = parse_prometheus(metrics->prometheus(), types);
  check_histograms(samples, types);
  CHECK(types["pathlock_acquires_total"] == "counter");
  CHECK(types["pathlock_wait_seconds"] == "histogram");
  CHECK(value_of(samples, "pathlock_acquires_total", {{"op", "upload"}, {"outcome", "granted"}}) == 1);
  CHECK(value_of(samples, "pathlock_acquires_total", {{"op", "delete_folder"}, {"outcome", "refused"}}) == 1);
  CHECK(value_of(samples, "pathlock_acquires_total", {{"op", "delete_folder"}, {"outcome", "timed_out"}}) == 1);
  CHECK(value_of(samples, "pathlock_refusals_total",
                 {{"op", "delete_folder"}, {"held_op", "upload"}, {"relation", "held_descendant"}}) == 2);
  CHECK(value_of(samples, "pathlock_wait_seconds_count", {{"op", "delete_folder"}}) == 1);
  CHECK(value_of(samples, "pathlock_hold_seconds_count", {{"op", "upload"}}) == 1);
  CHECK(value_of(samples, "pathlock_releases_total", {}) == 1);
  CHECK(value_of(samples, "pathlock_redis_retries_total", {{"reason", "moved"}}) == 1);
  CHECK(value_of(samples, "pathlock_redis_call_seconds_count", {}) == 2);
  CHECK(value_of(samples, "pathlock_redis_call_seconds_bucket", {{"le", "300"}}) == 1);
  CHECK(value_of(samples, "pathlock_redis_call_seconds_bucket", {{"le", "+Inf"}}) == 2);
  CHECK(value_of(samples, "pathlock_redis_call_seconds_sum", {}) == Approx(1000.0003));
  // The backend-neutral series (1.1): the same Redis figures under backend="redis",
  // PostgreSQL's under its own name (1.0 counted them as Redis calls).
  CHECK(types["pathlock_backend_call_seconds"] == "histogram");
  CHECK(value_of(samples, "pathlock_backend_call_seconds_count", {{"backend", "redis"}}) == 2);
  CHECK(value_of(samples, "pathlock_backend_call_seconds_sum", {{"backend", "redis"}}) == Approx(1000.0003));
  CHECK(value_of(samples, "pathlock_backend_call_seconds_count", {{"backend", "postgres"}}) == 1);
  CHECK(value_of(samples, "pathlock_backend_call_seconds_bucket", {{"backend", "postgres"}, {"le", "0.0025"}}) == 1);
  CHECK(value_of(samples, "pathlock_backend_retries_total", {{"backend", "redis"}, {"reason", "moved"}}) == 1);
  CHECK(value_of(samples, "pathlock_backend_retries_total", {{"backend", "postgres"}, {"reason", "unreachable"}}) == 1);
  CHECK(value_of(samples, "pathlock_redis_retries_total", {{"reason", "unreachable"}}) == 0);
  CHECK(value_of(samples, "pathlock_backend_failovers_total", {{"backend", "redis"}, {"kind", "sentinel"}}) == 1);
  CHECK(value_of(samples, "pathlock_redis_failovers_total", {{"kind", "sentinel"}}) == 1);
  CHECK(value_of(samples, "pathlock_backend_failovers_total", {{"backend", "postgres"}, {"kind", "cluster"}}) == 0);
  for (const Sample& sample : samples)  // the embedded backend makes no calls: no series of its own
    CHECK((sample.labels.count("backend") == 0 || sample.labels.at("backend") != "memory"));
  // Every operation's series from the start, at 0 (so increase() sees the first event).
  CHECK(value_of(samples, "pathlock_wait_seconds_count", {{"op", "purge"}}) == 0);
  CHECK(value_of(samples, "pathlock_waiting_requests", {{"op", "purge"}}) == 0);
}

TEST_CASE("metrics: label values are escaped", "[metrics]") {
  MatrixTable odd = default_matrix();
  odd.ops[0].name = "a\"b\\c\nd";
  Metrics metrics(odd);
  metrics.count_acquire(0, Outcome::granted);
  const std::string text = metrics.prometheus();
  CHECK(text.find("pathlock_acquires_total{op=\"a\\\"b\\\\c\\nd\",outcome=\"granted\"} 1\n") != std::string::npos);
  std::map<std::string, std::string> types;
  parse_prometheus(text, types);
}

#ifdef PATHLOCK_TEST_WITH_METRICS_SERVER
TEST_CASE("MetricsServer serves GET /metrics over HTTP on a port it picks", "[metrics]") {
  auto metrics = std::make_shared<Metrics>();
  metrics->count_acquire(default_matrix().op_index("upload"), Outcome::granted);
  MetricsServer server(metrics);
  CHECK(server.host() == "127.0.0.1");
  REQUIRE(server.port() > 0);
  CHECK(server.url() == "http://127.0.0.1:" + std::to_string(server.port()) + "/metrics");
  httplib::Client client("127.0.0.1", server.port());
  auto res = client.Get("/metrics");
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(res->get_header_value("Content-Type").rfind("text/plain; version=0.0.4", 0) == 0);
  CHECK(res->body == metrics->prometheus());
  CHECK(res->body.find("pathlock_acquires_total{op=\"upload\",outcome=\"granted\"} 1\n") != std::string::npos);
  metrics->count_acquire(default_matrix().op_index("upload"), Outcome::granted);
  res = client.Get("/metrics");
  REQUIRE(res);
  CHECK(res->body.find("pathlock_acquires_total{op=\"upload\",outcome=\"granted\"} 2\n") != std::string::npos);
  res = client.Get("/other");
  REQUIRE(res);
  CHECK(res->status == 404);
  // The same port twice: the second cannot listen.
  CHECK_THROWS_AS(MetricsServer(metrics, "127.0.0.1:" + std::to_string(server.port())), BackendError);
}

TEST_CASE("MetricsServer: a malformed address is InvalidRequest", "[metrics]") {
  auto metrics = std::make_shared<Metrics>();
  for (const char* bad : {"", "127.0.0.1", ":9464", "127.0.0.1:", "127.0.0.1:http", "127.0.0.1:65536", "127.0.0.1:-1",
                          "a b:1"})
    CHECK_THROWS_AS(MetricsServer(metrics, bad), InvalidRequest);
  CHECK_THROWS_AS(MetricsServer(nullptr), InvalidRequest);
  CHECK(parse_listen_address("localhost:9464") == std::pair<std::string, int>{"localhost", 9464});
}
#endif

}  // namespace pathlock::test
