// The console's reader of Prometheus text (tools/console/exposition.hpp):
// what pathlock's exporters write reads back exactly, the format's corners
// are accepted, and malformed or hostile text is refused with its line,
// never a crash.
#ifdef PATHLOCK_TEST_WITH_METRICS_SERVER
#include <catch2/catch.hpp>
#include <pathlock/metrics.hpp>
#include <random>
#include <string>

#include "exposition.hpp"

namespace {

using pathlock::console::read_refusals;
using pathlock::console::RefusalText;

RefusalText ok(const std::string& text) {
  RefusalText r = read_refusals(text);
  INFO(text);
  CHECK(r.error == "");
  return r;
}

std::string refused(const std::string& text) {
  const RefusalText r = read_refusals(text);
  INFO(text);
  CHECK(r.pairs.empty());
  CHECK(r.error.rfind("line ", 0) == 0);
  return r.error;
}

}  // namespace

TEST_CASE("console exposition: Metrics::prometheus() reads back as its snapshot", "[console][metrics]") {
  const pathlock::MatrixTable& m = pathlock::default_matrix();
  pathlock::Metrics metrics(m);
  const int upload = m.op_index("upload"), del = m.op_index("delete_folder"), move = m.op_index("move_folder");
  metrics.count_refusal(del, upload, 2);  // held_descendant
  metrics.count_refusal(del, upload, 2);
  metrics.count_refusal(del, upload, 3);  // queued
  metrics.count_refusal(move, del, 0);
  metrics.count_acquire(upload, pathlock::Outcome::granted);
  const RefusalText r = ok(metrics.prometheus());
  CHECK(r.family_seen);
  CHECK(r.pairs.size() == 2);
  CHECK(r.pairs.at({"delete_folder", "upload"}) == 3);  // summed over relations
  CHECK(r.pairs.at({"move_folder", "delete_folder"}) == 1);
  CHECK(r.total() == metrics.snapshot().refusals_total());

  // With no refusal the family's TYPE line still says it is a pathlock exporter.
  const RefusalText none = ok(pathlock::Metrics(m).prometheus());
  CHECK(none.family_seen);
  CHECK(none.pairs.empty());
  CHECK_FALSE(ok("other_metric 1\n").family_seen);
  CHECK_FALSE(ok("").family_seen);
}

TEST_CASE("console exposition: the format's corners are read", "[console][metrics]") {
  const RefusalText r =
      ok("# HELP pathlock_refusals_total text with \\\\ and \\n and \"quotes\" {\n"
         "# TYPE pathlock_refusals_total counter\n"
         "# any other comment: } { \" \\q\n"
         "\n"
         "   \t\n"
         "pathlock_refusals_total{op=\"a\\\"b\\\\c\\nd\",held_op=\"x\",relation=\"same\"} 3\n"
         "pathlock_refusals_total{ held_op = \"x\" , op = \"a\\\"b\\\\c\\nd\" , relation = \"queued\" , } 4 "
         "1712345678000\n"
         "  pathlock_refusals_total{op=\"x\",held_op=\"x\",relation=\"same\",shard=\"7\"}\t1e2\t-5\n"
         "pathlock_refusals_total{op=\"x\",held_op=\"x\",relation=\"same\",shard=\"8\"} +2.0\n"
         "other_metric NaN\n"
         "other_metric{} +Inf\n"
         "other:metric_2{a=\"\"} -Inf\n"
         "pathlock_refusals_total_other{op=\"x\",held_op=\"x\"} 1.5\n"
         "last_line_without_newline 0");
  CHECK(r.family_seen);
  REQUIRE(r.pairs.size() == 2);
  CHECK(r.pairs.at({"a\"b\\c\nd", "x"}) == 7);
  CHECK(r.pairs.at({"x", "x"}) == 102);
}

TEST_CASE("console exposition: malformed text is refused with its line", "[console][metrics]") {
  const std::string type = "# TYPE pathlock_refusals_total counter\n";
  const std::string good = "pathlock_refusals_total{op=\"a\",held_op=\"b\",relation=\"same\"} 1\n";
  CHECK(refused("<!doctype html>\n<html>") == "line 1, column 1: expected a metric name");
  CHECK(refused(good + "9lives 1\n") == "line 2, column 1: expected a metric name");
  CHECK(refused("m{a=\"x\\t\"} 1") == "line 1, column 7: unknown escape in a label value (only \\\\, \\\" and \\n)");
  CHECK(refused("m{a=\"open} 1") == "line 1, column 13: a label value without its closing quote");
  CHECK(refused("m{a=\"x\\") == "line 1, column 8: a label value without its closing quote");
  CHECK(refused("m{a=x} 1") == "line 1, column 5: expected a quoted label value");
  CHECK(refused("m{a\"x\"} 1") == "line 1, column 4: expected '=' after a label name");
  CHECK(refused("m{,} 1") == "line 1, column 3: expected a label name or '}'");
  CHECK(refused("m{a=\"1\" b=\"2\"} 1") == "line 1, column 9: expected ',' or '}' after a label value");
  CHECK(refused("m{a=\"1\",a=\"2\"} 1") == "line 1, column 9: a label given twice");
  CHECK(refused("m") == "line 1, column 2: expected a value");
  CHECK(refused("m{a=\"1\"}") == "line 1, column 9: expected a value");
  CHECK(refused("m-1 1") == "line 1, column 2: expected a blank before the value");
  CHECK(refused("m one") == "line 1, column 3: the value is not a number");
  CHECK(refused("m 1 2 3") == "line 1, column 7: text after the timestamp");
  CHECK(refused("m 1 2.5") == "line 1, column 5: the timestamp is not a whole number");
  CHECK(refused("m 1\r\n") == "line 1, column 3: the value is not a number");
  CHECK(refused("m ++1") == "line 1, column 3: the value is not a number");
  CHECK(refused("m 1e999") == "line 1, column 3: the value is not a number");
  std::string many = "m{";
  for (int i = 0; i < 33; ++i) many += "l" + std::to_string(i) + "=\"\",";
  CHECK(refused(many + "} 1").find("more than 32 labels") != std::string::npos);

  // The family's own rules.
  for (const char* value : {"NaN", "-1", "1.5", "+Inf", "9007199254740992"})
    CHECK(refused(type + "pathlock_refusals_total{op=\"a\",held_op=\"b\"} " + value) ==
          "line 2: a pathlock_refusals_total count that is not a whole number from 0 to 2^53");
  CHECK(refused(type + "pathlock_refusals_total{op=\"a\",relation=\"same\"} 1") ==
        "line 2: a pathlock_refusals_total sample without the labels op and held_op");
  CHECK(refused(type + good + "pathlock_refusals_total{relation=\"same\",held_op=\"b\",op=\"a\"} 2\n") ==
        "line 3: a pathlock_refusals_total series given twice");
  CHECK(refused("# TYPE pathlock_refusals_total gauge\n") ==
        "line 1: pathlock_refusals_total has TYPE 'gauge', not counter");
  CHECK(refused(type + type) == "line 2: a second TYPE line for pathlock_refusals_total");
  CHECK(refused(good + type) == "line 2: the TYPE line of pathlock_refusals_total after its samples");
  // One bad line refuses the whole text: no half-read counts.
  CHECK(refused(type + good + "pathlock_refusals_total{op=\"c\",held_op=\"d\"} x\n") ==
        "line 3, column 45: the value is not a number");
}

TEST_CASE("console exposition: hostile text never crashes and costs linear time", "[console][metrics]") {
  // Long runs of the characters the scanner reacts to, each a megabyte.
  const std::size_t mb = 1u << 20;
  for (const std::string& text :
       {std::string(mb, '{'), std::string(mb, '"'), std::string(mb, '\\'), std::string(mb, '\n'),
        "m{a=\"" + std::string(mb, '\\'), "m{a=\"" + std::string(mb, 'x') + "\"} 1", std::string(mb, 'm'),
        std::string(mb, '\0'), "m " + std::string(mb, '9'), std::string(mb, '#')}) {
    RefusalText r;
    CHECK_NOTHROW(r = read_refusals(text));
    CHECK(r.pairs.empty());
  }
  // Many distinct series of the family: read, each counted once.
  std::string wide = "# TYPE pathlock_refusals_total counter\n";
  for (int i = 0; i < 20000; ++i)
    wide += "pathlock_refusals_total{op=\"op" + std::to_string(i % 100) + "\",held_op=\"h\",n=\"" + std::to_string(i) +
            "\"} 1\n";
  const RefusalText r = ok(wide);
  CHECK(r.pairs.size() == 100);
  CHECK(r.total() == 20000);

  // Random mutations of real exporter text: each read either succeeds or
  // names a line; none throws. Fixed seed: the same cases every run.
  const pathlock::MatrixTable& m = pathlock::default_matrix();
  pathlock::Metrics metrics(m);
  for (int i = 0; i < m.op_count; ++i) metrics.count_refusal(i, (i + 1) % m.op_count, static_cast<std::size_t>(i % 4));
  const std::string base = metrics.prometheus();
  const std::string alphabet = std::string("{}\",=\\\n \t#:_aZ09.+-eE") + '\0' + "\xff\x80";
  std::mt19937 rng(21);
  int refused_count = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string text = base;
    const int edits = 1 + static_cast<int>(rng() % 8);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = rng() % text.size();
      switch (rng() % 3) {
        case 0:
          text[at] = alphabet[rng() % alphabet.size()];
          break;
        case 1:
          text.insert(at, 1, alphabet[rng() % alphabet.size()]);
          break;
        default:
          text.erase(at, 1 + rng() % 16);
      }
    }
    RefusalText got;
    REQUIRE_NOTHROW(got = read_refusals(text));
    if (!got.error.empty()) {
      ++refused_count;
      REQUIRE(got.error.rfind("line ", 0) == 0);
      REQUIRE(got.pairs.empty());
    }
  }
  CHECK(refused_count > 0);  // the mutations do hit the parser's checks
}
#endif
