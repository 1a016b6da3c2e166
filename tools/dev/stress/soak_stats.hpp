// Per-interval statistics of a soak run (soak.cpp): each worker process
// (`pathlock-stress run --stats FILE`) appends one line per interval of the
// soak's clock; the soak merges the lines of every worker it started.
//
//   stat <interval> <acquires> <grants> <waits> <cancelled> <abandoned> <backend_errors> <latency>
//
// <interval>: (CLOCK_MONOTONIC - epoch) / interval length, from 0.
// <latency>: the acquire latencies (request sent to answer, in µs) as a
// histogram of buckets 5% wide, "bucket:count" joined by commas ("-" when
// empty); bucket b holds latencies in [1.05^b, 1.05^(b+1)) µs.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace pathlock::stress {

class Histogram {
 public:
  void add(std::int64_t micros);
  void merge(const Histogram& other);
  long count() const { return count_; }
  // The smallest latency (µs, the bucket's upper bound) at or below which
  // `fraction` of the samples lie; 0 when empty.
  double percentile(double fraction) const;
  std::string text() const;
  static bool parse(const std::string& text, Histogram& out);

 private:
  std::map<int, long> buckets_;
  long count_ = 0;
};

// What one interval counted.
struct IntervalStats {
  long acquires = 0, grants = 0, waits = 0, cancelled = 0, abandoned = 0, backend_errors = 0;
  Histogram latency;
  void merge(const IntervalStats& other);
};

// What an acquire came to, for the stats.
enum class Outcome { granted, refused, cancelled, backend_error, invalid };

// A worker's side: the threads record, a thread of its own writes one line
// per interval as each ends (and the last, partial one on destruction).
class StatsWriter {
 public:
  StatsWriter(const std::string& path, std::int64_t epoch_ns, std::int64_t interval_ns);
  ~StatsWriter();
  StatsWriter(const StatsWriter&) = delete;
  StatsWriter& operator=(const StatsWriter&) = delete;
  void acquired(Outcome outcome, bool waited, std::int64_t latency_ns);
  void abandoned();

 private:
  long interval_now() const;
  void flush_until(long interval);  // writes every interval before `interval`
  void loop();

  std::ofstream out_;
  const std::int64_t epoch_ns_, interval_ns_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::map<long, IntervalStats> open_;
  std::thread writer_;
};

// The soak's side: every `stat` line of `files`, merged by interval.
// A file that is missing or a line that does not parse is skipped (a worker
// killed mid-write leaves at most its last line short).
std::map<long, IntervalStats> read_stats(const std::vector<std::string>& files);

}  // namespace pathlock::stress
