#include "soak_stats.hpp"

#include "stress.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <sstream>

namespace pathlock::stress {

namespace {
const double kBucketBase = std::log(1.05);
}

void Histogram::add(std::int64_t micros) {
  const int bucket = micros < 1 ? 0 : static_cast<int>(std::log(static_cast<double>(micros)) / kBucketBase);
  ++buckets_[bucket];
  ++count_;
}

void Histogram::merge(const Histogram& other) {
  for (const auto& [b, c] : other.buckets_) buckets_[b] += c;
  count_ += other.count_;
}

double Histogram::percentile(double fraction) const {
  const long want = static_cast<long>(std::ceil(fraction * static_cast<double>(count_)));
  long seen = 0;
  for (const auto& [b, c] : buckets_) {
    seen += c;
    if (seen >= want) return std::exp(kBucketBase * (b + 1));
  }
  return 0;
}

std::string Histogram::text() const {
  std::string out;
  for (const auto& [b, c] : buckets_) out += fmt::format("{}{}:{}", out.empty() ? "" : ",", b, c);
  return out.empty() ? "-" : out;
}

bool Histogram::parse(const std::string& text, Histogram& out) {
  if (text == "-") return true;
  std::stringstream s(text);
  for (std::string item; std::getline(s, item, ',');) {
    const auto colon = item.find(':');
    if (colon == std::string::npos) return false;
    const int b = std::stoi(item.substr(0, colon));
    const long c = std::stol(item.substr(colon + 1));
    if (b < 0 || c < 0) return false;
    out.buckets_[b] += c;
    out.count_ += c;
  }
  return true;
}

void IntervalStats::merge(const IntervalStats& o) {
  acquires += o.acquires;
  grants += o.grants;
  waits += o.waits;
  cancelled += o.cancelled;
  abandoned += o.abandoned;
  backend_errors += o.backend_errors;
  latency.merge(o.latency);
}

StatsWriter::StatsWriter(const std::string& path, std::int64_t epoch_ns, std::int64_t interval_ns)
    : out_(path, std::ios::app), epoch_ns_(epoch_ns), interval_ns_(interval_ns), writer_([this] { loop(); }) {}

StatsWriter::~StatsWriter() {
  {
    std::lock_guard guard(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  writer_.join();
  std::lock_guard guard(mutex_);
  flush_until(interval_now() + 1);
}

long StatsWriter::interval_now() const { return static_cast<long>((monotonic_ns() - epoch_ns_) / interval_ns_); }

void StatsWriter::acquired(Outcome outcome, bool waited, std::int64_t latency_ns) {
  std::lock_guard guard(mutex_);
  IntervalStats& s = open_[interval_now()];
  ++s.acquires;
  s.waits += waited ? 1 : 0;
  s.grants += outcome == Outcome::granted ? 1 : 0;
  s.cancelled += outcome == Outcome::cancelled ? 1 : 0;
  s.backend_errors += outcome == Outcome::backend_error ? 1 : 0;
  s.latency.add(latency_ns / 1000);
}

void StatsWriter::abandoned() {
  std::lock_guard guard(mutex_);
  ++open_[interval_now()].abandoned;
}

void StatsWriter::flush_until(long interval) {
  while (!open_.empty() && open_.begin()->first < interval) {
    const auto& [i, s] = *open_.begin();
    out_ << fmt::format("stat\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n", i, s.acquires, s.grants, s.waits, s.cancelled,
                        s.abandoned, s.backend_errors, s.latency.text());
    open_.erase(open_.begin());
  }
  out_.flush();
}

// Wakes at each interval's end (a little after, so that its last calls are
// in) and writes it.
void StatsWriter::loop() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    const long next = interval_now() + 1;
    const std::int64_t wait_ns = epoch_ns_ + next * interval_ns_ - monotonic_ns() + 20000000;
    wake_.wait_for(lock, std::chrono::nanoseconds(wait_ns), [this] { return stop_; });
    flush_until(interval_now());
  }
}

namespace {

bool parse_stat(const std::string& line, long& interval, IntervalStats& s) {
  std::vector<std::string> f;
  std::stringstream in(line);
  for (std::string field; std::getline(in, field, '\t');) f.push_back(field);
  if (f.size() != 9 || f[0] != "stat") return false;
  try {
    interval = std::stol(f[1]);
    long* counts[] = {&s.acquires, &s.grants, &s.waits, &s.cancelled, &s.abandoned, &s.backend_errors};
    for (int i = 0; i < 6; ++i) *counts[i] = std::stol(f[2 + static_cast<std::size_t>(i)]);
    return Histogram::parse(f[8], s.latency);
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

std::map<long, IntervalStats> read_stats(const std::vector<std::string>& files) {
  std::map<long, IntervalStats> merged;
  for (const std::string& file : files) {
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) {
      long interval = 0;
      IntervalStats s;
      if (parse_stat(line, interval, s)) merged[interval].merge(s);
    }
  }
  return merged;
}

}  // namespace pathlock::stress
