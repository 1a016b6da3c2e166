// pathlock-memory-bench: the embedded backend alone, in one process, through
// the public API only (so the same source measures any version).
//
//   pathlock-memory-bench [--held N ...] [--seconds S] [--depth D] [--refused]
//                         [--idle N] [--wide N] [--hot N]
//
// held: pairs per second of one thread, acquire(rename_folder on a fresh
//   sibling of a held lock) + release, with N single-target locks held in the
//   namespace (the paths and operations of pathlock-bench, from tools/dev/bench/paths.hpp: /p/dXX/eXX/fXX/h...,
//   fanout 16, depth 5). One engine per N, all filled first, then measured in
//   alternating 0.2 s windows for S seconds each (a busy machine slows them
//   alike). Prints the ratio to the first N given.
// refused: with --held, also refused acquires per second of one thread
//   (delete_folder on the parent of a held lock, pathlock-bench's refused
//   ring from paths.hpp), for each N > 0, measured the same way.
// idle: bytes per idle namespace: N namespaces each used once (one lock taken
//   and released), heap growth measured with mallinfo2() after every one of
//   them was used, then again after 20 * N further calls on one namespace
//   (the backend trims idle namespaces with a bounded sweep).
// wide: microseconds per refusal whose witness lies below a folder with N
//   children (delete_folder /w refused by uploads /w/cNNNNN/x).
// hot: microseconds per pair (upload /hot by a new owner + release) while N
//   other owners hold an upload of /hot (the check passes over them).
// No assertions: numbers for docs/design.md. Options: one table
// (tools/common/options.hpp); a bad command line exits with status 2.
#include <pathlock/memory.hpp>

#include "bench/paths.hpp"
#include "common/options.hpp"

#include <fmt/format.h>
#include <malloc.h>

#include <charconv>
#include <chrono>
#include <stdexcept>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

using namespace pathlock;
using Steady = std::chrono::steady_clock;

namespace {

constexpr const char* kHeldOps[] = {"upload", "create", "rename_file", "delete_file"};

// pathlock-bench's paths, as one client (number 0) of it takes them.
std::string probe_path(int depth, std::size_t held, std::size_t k) { return bench::probe_path(depth, held, 0, k); }

// Steps counted over the measured windows, and the time they took.
struct Tally {
  std::size_t steps = 0;
  double seconds = 0;
  double rate() const { return static_cast<double>(steps) / seconds; }
};

// One engine holding `held` locks and the rings of requests its pairs and
// its refused acquires use.
struct Subject {
  std::size_t held = 0;
  std::unique_ptr<LockEngine> engine;
  std::vector<LockRequest> ring;
  std::vector<LockRequest> refused_ring;  // empty when held == 0
  Tally pairs, refusals;
};

std::unique_ptr<Subject> make_subject(std::size_t held, int depth) {
  auto s = std::make_unique<Subject>();
  s->held = held;
  s->engine = make_memory_engine();
  const std::string ns = "bench";
  for (std::size_t i = 0; i < held; ++i) {
    LockRequest req{ns, "filler", kHeldOps[i % 4], {{"target", bench::held_path(depth, i)}}, Millis{6LL * 3600 * 1000}};
    if (!s->engine->acquire(req).granted()) std::abort();
  }
  for (std::size_t k = 0; k < bench::kRing; ++k)
    s->ring.push_back(LockRequest{ns, "client", "rename_folder", {{"target", probe_path(depth, held, k)}}, Millis{30000}});
  for (std::size_t k = 0; held > 0 && k < bench::kRing; ++k)
    s->refused_ring.push_back(
        LockRequest{ns, "client", "delete_folder", {{"target", bench::refused_path(depth, held, 0, k)}}, Millis{30000}});
  return s;
}

// Runs step(k) in batches for `secs` seconds, k going on from the steps
// counted so far; the steps and time go into `tally` only when `count`.
template <class Step>
void run_window(Tally& tally, double secs, bool count, Step&& step) {
  std::size_t n = 0;
  const auto start = Steady::now();
  const auto end = start + std::chrono::duration<double>(secs);
  while (true) {
    for (int b = 0; b < 64; ++b, ++n) step(tally.steps + n);
    const auto now = Steady::now();
    if (now >= end) {
      if (count) {
        tally.steps += n;
        tally.seconds += std::chrono::duration<double>(now - start).count();
      }
      return;
    }
  }
}

// One acquire+release pair of s's ring.
void pair_step(Subject& s, std::size_t k) {
  const AcquireResult r = s.engine->acquire(s.ring[k % s.ring.size()]);
  if (!r.granted() || !s.engine->release("bench", r.grant.id, r.grant.token)) std::abort();
}

// One refused acquire of s's refused ring.
void refused_step(Subject& s, std::size_t k) {
  if (s.engine->acquire(s.refused_ring[k % s.refused_ring.size()]).granted()) std::abort();
}

// The subjects' windows of `kind` (pairs or refusals), alternating: a 0.2 s
// warm-up each, then `rounds` rounds of 0.2 s each, so a change of the
// machine's load falls on all of them alike.
template <class Step>
void alternate(std::vector<Subject*>& subjects, int rounds, Tally Subject::*kind, Step step) {
  for (int round = -1; round < rounds; ++round)
    for (Subject* s : subjects) run_window(s->*kind, 0.2, round >= 0, [&](std::size_t k) { step(*s, k); });
}

std::size_t heap_bytes() { return mallinfo2().uordblks; }

void idle_bytes(std::size_t count) {
  auto engine = make_memory_engine();
  const std::size_t before = heap_bytes();
  for (std::size_t i = 0; i < count; ++i) {
    const std::string ns = fmt::format("tenant-{}", i);
    const AcquireResult r = engine->acquire(LockRequest{ns, "o", "upload", {{"target", "/p/A/B/C/f"}}});
    if (!r.granted() || !engine->release(ns, r.grant.id, r.grant.token)) std::abort();
  }
  const std::size_t used = heap_bytes();
  for (std::size_t i = 0; i < 20 * count; ++i) engine->list("tenant-0", "/");
  const std::size_t swept = heap_bytes();
  fmt::print("idle namespaces {}: {:.0f} bytes each right after use, {:.0f} bytes each after {} more calls\n", count,
             static_cast<double>(used - before) / static_cast<double>(count),
             static_cast<double>(swept - before) / static_cast<double>(count), 20 * count);
}

void hot_folder(std::size_t owners) {
  auto engine = make_memory_engine();
  for (std::size_t i = 0; i < owners; ++i)
    if (!engine->acquire(LockRequest{"h", fmt::format("o{}", i), "upload", {{"target", "/hot"}}}).granted()) std::abort();
  const int rounds = 20000;
  const auto start = Steady::now();
  for (int i = 0; i < rounds; ++i) {
    const AcquireResult r = engine->acquire(LockRequest{"h", "newcomer", "upload", {{"target", "/hot"}}});
    if (!r.granted() || !engine->release("h", r.grant.id, r.grant.token)) std::abort();
  }
  const double us = std::chrono::duration<double, std::micro>(Steady::now() - start).count() / rounds;
  fmt::print("pair in a folder where {} other owners hold an upload: {:.2f} us\n", owners, us);
}

void wide_refusal(std::size_t children) {
  auto engine = make_memory_engine();
  for (std::size_t i = 0; i < children; ++i)
    if (!engine->acquire(LockRequest{"w", "o", "upload", {{"target", fmt::format("/w/c{:06}/x", i)}}}).granted())
      std::abort();
  const int rounds = 200;
  const auto start = Steady::now();
  for (int i = 0; i < rounds; ++i)
    if (engine->acquire(LockRequest{"w", "d", "delete_folder", {{"target", "/w"}}}).granted()) std::abort();
  const double us = std::chrono::duration<double, std::micro>(Steady::now() - start).count() / rounds;
  fmt::print("refusal below a folder of {} children: {:.1f} us per call\n", children, us);
}

// --seconds S: a decimal number of seconds, 0.2 to 3600.
double seconds_of(const std::string& text) {
  double v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end || !(v >= 0.2 && v <= 3600))
    throw std::invalid_argument(fmt::format("wants seconds from 0.2 to 3600, not '{}'", text));
  return v;
}

const options::Options kOptions = options::Options{}
                                      .repeated("held", [](const std::string& v) {
                                        options::parse_number(v, 0, 100000000, "--held");
                                      })
                                      .value("seconds", [](const std::string& v) { seconds_of(v); })
                                      .number("depth", 1, 64)
                                      .flag("refused")
                                      .number("idle", 0, 100000000)
                                      .number("wide", 0, 100000000)
                                      .number("hot", 0, 100000000);

}  // namespace

int main(int argc, char** argv) {
  const std::optional<options::Parsed> parsed = kOptions.parse_main(
      argc, argv, 1,
      "usage: pathlock-memory-bench [--held N]... [--seconds S] [--depth D] [--refused] [--idle N] [--wide N] "
      "[--hot N]\n");
  if (!parsed) return options::kExitUsage;
  const options::Parsed& p = *parsed;
  std::vector<std::size_t> held;
  for (const std::string& h : p.all("held"))
    held.push_back(static_cast<std::size_t>(options::parse_number(h, 0, 100000000, "--held")));
  const double seconds = p.has("seconds") ? seconds_of(p.get("seconds")) : 2.0;
  const int depth = static_cast<int>(p.number_or("depth", 5));
  const bool refused = p.has("refused");
  const auto idle = static_cast<std::size_t>(p.number_or("idle", 0)),
             wide = static_cast<std::size_t>(p.number_or("wide", 0)),
             hot = static_cast<std::size_t>(p.number_or("hot", 0));
  // Every subject is filled first, then measured (alternate()).
  std::vector<std::unique_ptr<Subject>> owned;
  std::vector<Subject*> subjects, with_held;
  for (std::size_t h : held) {
    owned.push_back(make_subject(h, depth));
    subjects.push_back(owned.back().get());
    if (h > 0) with_held.push_back(owned.back().get());
  }
  const int rounds = std::max(1, static_cast<int>(seconds / 0.2));
  alternate(subjects, rounds, &Subject::pairs, pair_step);
  const double first = subjects.empty() ? 0 : subjects.front()->pairs.rate();
  for (const Subject* s : subjects)
    fmt::print("held {:>8} depth {}: {:>9.0f} pairs/s ({:.2f}x of held {}; {:.1f} s measured in {} windows)\n", s->held,
               depth, s->pairs.rate(), s->pairs.rate() / first, held[0], s->pairs.seconds, rounds);
  if (refused) {
    alternate(with_held, rounds, &Subject::refusals, refused_step);
    for (const Subject* s : with_held)
      fmt::print("held {:>8} depth {}: {:>9.0f} refused acquires/s ({:.2f} us each)\n", s->held, depth,
                 s->refusals.rate(), 1e6 / s->refusals.rate());
  }
  if (idle) idle_bytes(idle);
  if (wide) wide_refusal(wide);
  if (hot) hot_folder(hot);
  return 0;
}
