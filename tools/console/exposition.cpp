// The console's reader of Prometheus text (exposition.hpp).
//
// A scanner over one line at a time: a cursor that only moves forward, so
// every loop ends at the line's end, and each line costs O(its length) (the
// labels of one line are at most kMaxLabels, so checking them for repeats
// stays cheap). Grammar of a sample line, blanks being spaces and tabs:
//   [blanks] name [blanks] ['{' [label {',' label} [',']] '}'] blanks value [blanks timestamp] [blanks]
//   label = [blanks] label_name [blanks] '=' [blanks] '"' escaped value '"' [blanks]
// A line whose first non-blank character is '#' is a comment; of comments
// only "# TYPE pathlock_refusals_total ..." matters here.
#include "exposition.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

namespace pathlock::console {
namespace {

constexpr std::size_t kMaxLabels = 32;
constexpr double kMaxExactCount = 9007199254740992.0;  // 2^53: every whole double below it is exact

bool is_blank(char c) {
  return c == ' ' || c == '\t';
}
bool is_letter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// A cursor over one line.
class Cursor {
 public:
  explicit Cursor(std::string_view line) : s_(line) {}
  bool done() const { return i_ >= s_.size(); }
  char peek() const { return done() ? '\0' : s_[i_]; }
  std::size_t at() const { return i_; }
  void skip_blanks() {
    while (!done() && is_blank(s_[i_])) ++i_;
  }
  bool eat(char c) {
    if (done() || s_[i_] != c) return false;
    ++i_;
    return true;
  }
  // A metric name ([a-zA-Z_:][a-zA-Z0-9_:]*, with `colon`) or a label name
  // ([a-zA-Z_][a-zA-Z0-9_]*); empty when none starts here.
  std::string_view name(bool colon) {
    const std::size_t from = i_;
    auto ok = [&](char c, bool first) { return is_letter(c) || (colon && c == ':') || (!first && is_digit(c)); };
    if (!done() && ok(s_[i_], true))
      while (!done() && ok(s_[i_], i_ == from)) ++i_;
    return s_.substr(from, i_ - from);
  }
  // The characters up to the next blank or the end.
  std::string_view token() {
    const std::size_t from = i_;
    while (!done() && !is_blank(s_[i_])) ++i_;
    return s_.substr(from, i_ - from);
  }
  // The rest of a label value after its opening quote, unescaped into
  // `out`; "" or the fault.
  std::string quoted(std::string& out) {
    while (!done()) {
      const char c = s_[i_++];
      if (c == '"') return "";
      if (c != '\\') {
        out += c;
        continue;
      }
      if (done()) break;
      const char e = s_[i_++];
      if (e == '\\' || e == '"')
        out += e;
      else if (e == 'n')
        out += '\n';
      else
        return fault(i_ - 2, "unknown escape in a label value (only \\\\, \\\" and \\n)");
    }
    return fault(i_, "a label value without its closing quote");
  }
  static std::string fault(std::size_t index, std::string_view what) {
    return fmt::format("column {}: {}", index + 1, what);
  }
  std::string fault(std::string_view what) const { return fault(i_, what); }

 private:
  std::string_view s_;
  std::size_t i_ = 0;
};

// A float as Prometheus writes one: a decimal number, NaN, Inf, +Inf, -Inf.
bool parse_float(std::string_view t, double& v) {
  if (!t.empty() && t[0] == '+') t.remove_prefix(1);
  if (t.empty() || t[0] == '+') return false;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  return ec == std::errc() && end == t.data() + t.size();
}

bool parse_timestamp(std::string_view t) {
  std::int64_t ms = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), ms);
  return !t.empty() && ec == std::errc() && end == t.data() + t.size();
}

// A label set written one way whatever its order, for finding repeats.
std::string series_key(std::vector<std::pair<std::string, std::string>> labels) {
  std::sort(labels.begin(), labels.end());
  std::string key;
  for (const auto& [n, v] : labels) key += fmt::format("{}:{}={}:{};", n.size(), n, v.size(), v);
  return key;
}

}  // namespace

std::string parse_sample_line(std::string_view line, Sample& out) {
  out = Sample{};
  Cursor c(line);
  c.skip_blanks();
  const std::string_view name = c.name(true);
  if (name.empty()) return c.fault("expected a metric name");
  out.name = name;
  const std::size_t name_end = c.at();
  c.skip_blanks();
  const bool labelled = c.eat('{');
  if (labelled) {
    while (true) {
      c.skip_blanks();
      if (c.eat('}')) break;
      const std::size_t label_at = c.at();
      const std::string_view label = c.name(false);
      if (label.empty()) return c.fault("expected a label name or '}'");
      c.skip_blanks();
      if (!c.eat('=')) return c.fault("expected '=' after a label name");
      c.skip_blanks();
      if (!c.eat('"')) return c.fault("expected a quoted label value");
      std::string value;
      if (std::string e = c.quoted(value); !e.empty()) return e;
      for (const auto& l : out.labels)
        if (l.first == label) return Cursor::fault(label_at, "a label given twice");
      if (out.labels.size() == kMaxLabels)
        return Cursor::fault(label_at, fmt::format("more than {} labels", kMaxLabels));
      out.labels.emplace_back(std::string(label), std::move(value));
      c.skip_blanks();
      if (c.eat(',')) continue;
      if (c.eat('}')) break;
      return c.fault("expected ',' or '}' after a label value");
    }
  }
  if (labelled ? !is_blank(c.peek()) : c.at() == name_end)
    return c.fault(c.done() ? "expected a value" : "expected a blank before the value");
  c.skip_blanks();
  const std::size_t value_at = c.at();
  const std::string_view value = c.token();
  if (value.empty()) return c.fault("expected a value");
  if (!parse_float(value, out.value)) return Cursor::fault(value_at, "the value is not a number");
  c.skip_blanks();
  if (c.done()) return "";
  const std::size_t ts_at = c.at();
  if (!parse_timestamp(c.token())) return Cursor::fault(ts_at, "the timestamp is not a whole number");
  c.skip_blanks();
  return c.done() ? "" : c.fault("text after the timestamp");
}

std::uint64_t RefusalText::total() const {
  std::uint64_t sum = 0;
  for (const auto& p : pairs) sum = saturating_add(sum, p.second);
  return sum;
}

RefusalText read_refusals(std::string_view text) {
  RefusalText r;
  std::set<std::string> series;  // label sets of the family's samples
  bool typed = false, sampled = false;
  std::size_t line_no = 0, pos = 0;
  Sample s;
  auto fail = [&](std::string_view what) {
    r.pairs.clear();
    r.error = fmt::format("line {}{}{}", line_no, what.rfind("column ", 0) == 0 ? ", " : ": ", what);
    return r;
  };
  while (pos < text.size()) {
    const std::size_t nl = text.find('\n', pos);
    const std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line_no;
    const std::size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos) continue;
    if (line[first] == '#') {  // a comment; "# TYPE NAME TYPE" of the family is checked
      Cursor c(line.substr(first + 1));
      c.skip_blanks();
      if (c.token() != "TYPE") continue;
      c.skip_blanks();
      if (c.token() != kRefusalFamily) continue;
      c.skip_blanks();
      const std::string_view type = c.token();
      c.skip_blanks();
      if (typed) return fail("a second TYPE line for pathlock_refusals_total");
      if (sampled) return fail("the TYPE line of pathlock_refusals_total after its samples");
      if (type != "counter" || !c.done())
        return fail(fmt::format("pathlock_refusals_total has TYPE '{}', not counter", type.substr(0, 32)));
      typed = r.family_seen = true;
      continue;
    }
    if (const std::string e = parse_sample_line(line, s); !e.empty()) return fail(e);
    if (s.name != kRefusalFamily) continue;
    sampled = r.family_seen = true;
    const std::string *op = nullptr, *held = nullptr;
    for (const auto& [n, v] : s.labels) {
      if (n == "op") op = &v;
      if (n == "held_op") held = &v;
    }
    if (!op || !held) return fail("a pathlock_refusals_total sample without the labels op and held_op");
    if (!(s.value >= 0 && s.value < kMaxExactCount && std::floor(s.value) == s.value))
      return fail("a pathlock_refusals_total count that is not a whole number from 0 to 2^53");
    if (!series.insert(series_key(s.labels)).second) return fail("a pathlock_refusals_total series given twice");
    if (s.value == 0) continue;  // exporters list every pair from the start, at 0: no refusal
    std::uint64_t& count = r.pairs[{*op, *held}];
    count = saturating_add(count, static_cast<std::uint64_t>(s.value));
  }
  return r;
}

}  // namespace pathlock::console
