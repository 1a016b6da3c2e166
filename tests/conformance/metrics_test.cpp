// Metrics and logs, the same on every backend (pathlock/metrics.hpp): a
// grant, a refusal, a wait that times out and a wait that is granted, each
// counted exactly (outcome, refusal grid, wait and hold histograms), the
// long-wait log naming the holder, and releases and renewals.
//
// Synchronisation without sleeps: the engine logs a long wait (long_wait is
// 1 ms here) from the waiting thread after its first refusal, so the test
// waits for that log line before releasing the holder; the waiter has then
// certainly waited.
#include "conformance/fixture.hpp"

#include <pathlock/metrics.hpp>

#include <condition_variable>
#include <mutex>
#include <stop_token>
#include <thread>

namespace pathlock::test {
namespace {

// A log sink that keeps every message; safe from any thread.
struct LogRecorder {
  struct Line {
    LogLevel level;
    std::string message;
    std::vector<LogField> fields;
    std::string field(const std::string& key) const {
      for (const LogField& f : fields)
        if (f.key == key) return f.value;
      return "";
    }
  };
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<Line> lines;

  LogSink sink() {
    return [this](LogLevel level, std::string_view message, const std::vector<LogField>& fields) {
      std::lock_guard guard(mutex);
      lines.push_back(Line{level, std::string(message), fields});
      changed.notify_all();
    };
  }
  // The first line whose "event" is `event` and "owner" is `owner`, waiting up to 10 s.
  std::optional<Line> wait_for(const std::string& event, const std::string& owner) {
    std::unique_lock guard(mutex);
    std::optional<Line> found;
    changed.wait_for(guard, std::chrono::seconds(10), [&] {
      for (const Line& l : lines)
        if (l.field("event") == event && l.field("owner") == owner) return (found = l).has_value();
      return false;
    });
    return found;
  }
};

// An engine of `backend` whose messages go to `log`, with options `tweak` changed.
template <class Tweak>
std::unique_ptr<LockEngine> engine_logging_to(const BackendUnderTest& backend, LogRecorder& log, Tweak&& tweak) {
  ObserveOptions observe;
  observe.log = log.sink();
  tweak(observe);
  return backend.make_observed(nullptr, observe);
}

}  // namespace

TEST_CASE("metrics count every outcome, the refusal grid and the waits, and a long wait is logged", "[metrics]") {
  const BackendUnderTest backend = each_backend();
  LogRecorder log;
  auto engine = engine_logging_to(backend, log, [](ObserveOptions& o) { o.long_wait = Millis{1}; });
  const std::string ns = unique_namespace(backend.name + "-metrics");
  const std::shared_ptr<Metrics> metrics = engine->metrics();
  REQUIRE(metrics);
  auto request = [&](const std::string& owner, const std::string& op, std::vector<Target> targets, Millis wait) {
    return LockRequest{ns, owner, op, std::move(targets), Millis{30000}, wait};
  };

  // granted
  const AcquireResult held = engine->acquire(request("alice", "upload", {{"target", "/m/A/f"}}, Millis{0}));
  REQUIRE(held.granted());
  // refused (no wait): a move of the folder around the upload
  const AcquireResult moved = engine->acquire(request("bob", "move_folder", {{"src", "/m/A"}, {"dst", "/m/B"}}, Millis{0}));
  REQUIRE_FALSE(moved.granted());
  CHECK(moved.conflict.relation == Relation::held_descendant);
  // timed out: a rename of the folder, waiting 30 ms
  const AcquireResult timed_out =
      engine->acquire(request("carol", "rename_folder", {{"target", "/m/A"}}, Millis{30}));
  REQUIRE_FALSE(timed_out.granted());
  // waited then granted: a delete of the folder, granted once alice releases
  AcquireResult waited;
  std::string waiter_error;
  std::thread waiter([&] {
    try {
      waited = engine->acquire(request("dave", "delete_folder", {{"target", "/m/A"}}, Millis{20000}));
    } catch (const std::exception& e) {
      waiter_error = e.what();
    }
  });
  const std::optional<LogRecorder::Line> long_wait = log.wait_for("long_wait", "dave");
  const bool released = engine->release(ns, held.grant.id, held.grant.token);
  waiter.join();
  REQUIRE(waiter_error.empty());
  REQUIRE(released);
  REQUIRE(long_wait.has_value());
  REQUIRE(waited.granted());

  // The long-wait line names the holder: owner, operation and path.
  CHECK(long_wait->level == LogLevel::warning);
  CHECK(long_wait->field("holder_owner") == "alice");
  CHECK(long_wait->field("holder_op") == "upload");
  CHECK(long_wait->field("holder_path") == "/m/A/f");
  CHECK(long_wait->field("op") == "delete_folder");
  CHECK(long_wait->message.find("alice") != std::string::npos);
  CHECK(long_wait->message.find("/m/A/f") != std::string::npos);
  CHECK(log.wait_for("long_wait", "carol").has_value());

  REQUIRE(engine->release(ns, waited.grant.id, waited.grant.token));
  const AcquireResult other = engine->acquire(request("eve", "upload", {{"target", "/m/C"}}, Millis{0}));
  REQUIRE(other.granted());
  CHECK(engine->renew(ns, other.grant.id, other.grant.token));
  CHECK_FALSE(engine->renew(ns, other.grant.id, "not-the-token"));
  CHECK_FALSE(engine->release(ns, other.grant.id, "not-the-token"));
  CHECK(engine->force_release(ns, other.grant.id));

  const MetricsSnapshot s = metrics->snapshot();
  CHECK(s.acquired("upload", Outcome::granted) == 2);
  CHECK(s.acquired("move_folder", Outcome::refused) == 1);
  CHECK(s.acquired("rename_folder", Outcome::timed_out) == 1);
  CHECK(s.acquired("delete_folder", Outcome::waited_then_granted) == 1);
  CHECK(s.acquires_total() == 5);
  CHECK(s.refused("move_folder", "upload", static_cast<std::size_t>(Relation::held_descendant)) == 1);
  CHECK(s.refused("rename_folder", "upload", static_cast<std::size_t>(Relation::held_descendant)) == 1);
  CHECK(s.refused("delete_folder", "upload", static_cast<std::size_t>(Relation::held_descendant)) == 1);
  CHECK(s.refusals_total() == 3);
  const auto op = [&](const std::string& name) {
    return static_cast<std::size_t>(engine->matrix().op_index(name));
  };
  CHECK(s.wait[op("rename_folder")].count() == 1);
  CHECK(s.wait[op("rename_folder")].sum >= 0.03);
  CHECK(s.wait[op("delete_folder")].count() == 1);
  CHECK(s.wait[op("move_folder")].count() == 0);
  CHECK(s.hold[op("upload")].count() == 2);  // alice's (released) and eve's (force-released)
  CHECK(s.hold[op("delete_folder")].count() == 1);
  CHECK(s.releases == 2);
  CHECK(s.force_releases == 1);
  CHECK(s.renewals == 1);
  CHECK(s.renewals_missing == 1);
  CHECK(s.long_waits == 2);
  CHECK(s.backend_errors == 0);
  // Calls are timed under their own backend's name, and under no other.
  const Backend called = backend.name == "postgres" ? Backend::postgres : Backend::redis;
  if (!backend.can.in_process) {
    CHECK(s.calls[static_cast<std::size_t>(called)].count() > 0);
    CHECK(s.calls[static_cast<std::size_t>(called == Backend::redis ? Backend::postgres : Backend::redis)].count() ==
          0);
  } else {
    for (const HistogramSnapshot& h : s.calls) CHECK(h.count() == 0);
  }
  CHECK(s.redis_calls.count() == s.calls[static_cast<std::size_t>(Backend::redis)].count());
}

TEST_CASE("metrics: a long hold is logged once when the holder renews, and counting can be off", "[metrics]") {
  const BackendUnderTest backend = each_backend();
  LogRecorder log;
  auto engine = engine_logging_to(backend, log, [](ObserveOptions& o) {
    o.long_hold = Millis{1};
    o.count = false;
  });
  CHECK_FALSE(engine->metrics());
  const std::string ns = unique_namespace(backend.name + "-hold");
  // An owner with a C1 control (U+009B, a terminal's CSI; valid UTF-8, so
  // accepted): the message shows it escaped, the field as it is.
  const std::string owner = "frank\xc2\x9b" "2J";
  const AcquireResult held =
      engine->acquire(LockRequest{ns, owner, "upload", {{"target", "/h/file"}}, Millis{30000}, Millis{0}});
  REQUIRE(held.granted());
  // The hold passes 1 ms; a renew notices it (the wait only makes sure of it).
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  REQUIRE(engine->renew(ns, held.grant.id, held.grant.token));
  REQUIRE(engine->renew(ns, held.grant.id, held.grant.token));
  REQUIRE(engine->release(ns, held.grant.id, held.grant.token));
  std::lock_guard guard(log.mutex);
  std::size_t long_holds = 0;
  for (const auto& l : log.lines) {
    if (l.field("event") != "long_hold") continue;
    ++long_holds;
    CHECK(l.field("owner") == owner);
    CHECK(l.message.find("by 'frank\\xc2\\x9b2J' on /h/file") != std::string::npos);
    CHECK(l.field("op") == "upload");
    CHECK(l.field("path") == "/h/file");
    CHECK(l.field("id") == held.grant.id);
  }
  CHECK(long_holds == 1);
}

TEST_CASE("metrics: the observer sees each call - a shared Metrics adds up engines", "[metrics]") {
  const BackendUnderTest backend = each_backend();
  std::mutex mutex;
  std::vector<std::pair<ObservedCall::Kind, Outcome>> calls;
  ObserveOptions observe;
  observe.metrics = std::make_shared<Metrics>();
  observe.observer = [&](const ObservedCall& c) {
    std::lock_guard guard(mutex);
    calls.emplace_back(c.kind, c.outcome);
  };
  auto first = backend.make_observed(nullptr, observe);
  auto second = backend.make_observed(nullptr, observe);
  CHECK(first->metrics() == observe.metrics);
  const std::string ns = unique_namespace(backend.name + "-observer");
  const AcquireResult a =
      first->acquire(LockRequest{ns, "gina", "upload", {{"target", "/o/x"}}, Millis{30000}, Millis{0}});
  REQUIRE(a.granted());
  const AcquireResult b =
      second->acquire(LockRequest{ns, "hank", "upload", {{"target", "/o/y"}}, Millis{30000}, Millis{0}});
  REQUIRE(b.granted());
  REQUIRE(first->release(ns, a.grant.id, a.grant.token));
  REQUIRE(second->release(ns, b.grant.id, b.grant.token));
  CHECK(observe.metrics->snapshot().acquired("upload", Outcome::granted) == 2);
  CHECK(observe.metrics->snapshot().releases == 2);
  std::lock_guard guard(mutex);
  REQUIRE(calls.size() == 4);
  CHECK(calls[0] == std::pair{ObservedCall::Kind::acquire, Outcome::granted});
  CHECK(calls[2].first == ObservedCall::Kind::release);
  // A Metrics made for other operations is refused.
  ObserveOptions wrong;
  MatrixTable other = default_matrix();
  other.op_count = 1;
  wrong.metrics = std::make_shared<Metrics>(other);
  CHECK_THROWS_AS(backend.make_observed(nullptr, wrong), InvalidRequest);
}

}  // namespace pathlock::test

namespace pathlock::test {

TEST_CASE("a stuck request shows while it waits: in line, counted as refused, and every series starts at 0",
          "[metrics]") {
  const BackendUnderTest backend = each_backend();
  LogRecorder log;
  auto engine = engine_logging_to(backend, log, [](ObserveOptions&) {});
  const std::string ns = unique_namespace(backend.name + "-inflight");
  const std::shared_ptr<Metrics> metrics = engine->metrics();
  REQUIRE(metrics);
  const auto op = [&](const std::string& name) { return static_cast<std::size_t>(engine->matrix().op_index(name)); };
  // Before anything happened, every operation's series is exported at 0.
  const std::string before = metrics->prometheus();
  CHECK(before.find("pathlock_refusals_total{op=\"move_folder\",held_op=\"upload\",relation=\"held_descendant\"} 0") !=
        std::string::npos);
  CHECK(before.find("pathlock_wait_seconds_count{op=\"delete_folder\"} 0") != std::string::npos);
  CHECK(before.find("pathlock_waiting_requests{op=\"move_folder\"} 0") != std::string::npos);

  const AcquireResult held = engine->acquire({ns, "alice", "upload", {{"target", "/s/A/f"}}});
  REQUIRE(held.granted());
  std::stop_source stop;
  std::thread waiter([&] {
    engine->acquire(LockRequest{ns, "bob", "move_folder", {{"src", "/s/A"}, {"dst", "/s/B"}}, Millis{30000},
                                Millis{60000}},
                    stop.get_token());
  });
  REQUIRE(until_waiting(ns, "bob"));
  const MetricsSnapshot during = metrics->snapshot();
  CHECK(during.waiting[op("move_folder")] == 1);
  CHECK(during.oldest_wait[op("move_folder")] >= 0.0);
  CHECK(during.refused("move_folder", "upload", static_cast<std::size_t>(Relation::held_descendant)) == 1);
  CHECK(metrics->prometheus().find("pathlock_waiting_requests{op=\"move_folder\"} 1") != std::string::npos);
  stop.request_stop();
  waiter.join();
  const MetricsSnapshot after = metrics->snapshot();
  CHECK(after.waiting[op("move_folder")] == 0);
  CHECK(after.oldest_wait[op("move_folder")] == 0.0);
  CHECK(after.acquired("move_folder", Outcome::cancelled) == 1);
  CHECK(after.refused("move_folder", "upload", static_cast<std::size_t>(Relation::held_descendant)) == 1);
  CHECK(engine->release(ns, held.grant.id, held.grant.token));
}

}  // namespace pathlock::test
