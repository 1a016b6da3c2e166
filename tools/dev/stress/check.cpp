// pathlock-stress check: the history checker (stress.cpp has the log format).
//
// `check` reads every log and reports violations of two rules:
// - Exclusion: it sweeps the holds in time order and, for every pair of
//   overlapping holds, asks the matrix whether the earlier grant (smaller
//   fence) refuses the later one on any overlapping pair of targets. Each
//   hold names its matrix by fingerprint: the shipped one or one given with
//   --matrix FILE (several runs with different matrices may share a
//   namespace during a rolling deploy, docs/operations.md). A pair of holds
//   of one matrix is judged by that matrix; a pair of holds of two different
//   matrices is a violation when any of their targets overlap (same path,
//   ancestor or descendant; this covers either matrix refusing it): the
//   rule the Redis layout enforces across matrices.
// - Fencing (lines with sent_ns, id and holds): one fence names one lock,
//   and fences strictly increase in grant order: if hold A had its answer
//   before hold B's request was sent and B is a new lock (holds 1), then
//   fence A < fence B. This holds across server restarts only if the
//   server kept every acknowledged write.
// All logs given to one check must come from one namespace. It prints the
// number of holds, possible holds, processes and violations, and exits 1 if
// there is any violation, or if a log cannot be read or has a malformed line
// (the run is no evidence then either). CLOCK_MONOTONIC is one clock for every process on
// a machine, so logs of several processes compare directly.
#include "stress.hpp"

#include <pathlock/matrix.hpp>
#include <pathlock/path.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>

namespace pathlock::stress {

namespace {

struct Hold {
  const MatrixTable* matrix = nullptr;
  std::uint64_t fence = 0;
  std::string op;
  std::vector<Target> targets;
  std::int64_t from = 0, to = 0;
  std::string who;
  // Present on lines written by `run` (not on hand-written 7-field lines).
  bool has_grant_details = false;
  std::int64_t sent = 0;
  std::string id;
  std::uint32_t holds = 0;
};

// The matrices a check knows, by fingerprint; the shipped one first.
using Matrices = std::map<std::string, const MatrixTable*>;

// The matrix of a log line whose fingerprint field is `fp` ("" on lines of
// older logs: the shipped matrix); nullptr when the check was not given it.
const MatrixTable* matrix_of(const Matrices& known, const std::string& fp) {
  if (fp.empty()) return &default_matrix();
  const auto it = known.find(fp);
  return it == known.end() ? nullptr : it->second;
}

// Parses a `hold` line; false if it is malformed.
bool parse_hold(const std::vector<std::string>& f, const Matrices& known, Hold& h,
                std::vector<std::pair<int, std::string>>& codes) {
  if ((f.size() != 7 && f.size() != 10 && f.size() != 11) || f[0] != "hold") return false;
  h.matrix = matrix_of(known, f.size() == 11 ? f[10] : "");
  if (!h.matrix) throw std::runtime_error("a hold of matrix " + f[10] + ", which no --matrix FILE gives");
  const MatrixTable& m = *h.matrix;
  h.fence = std::stoull(f[1]);
  h.op = f[2];
  h.from = std::stoll(f[4]);
  h.to = std::stoll(f[5]);
  h.who = f[6];
  if (f.size() >= 10) {
    h.has_grant_details = true;
    h.sent = std::stoll(f[7]);
    h.id = f[8];
    h.holds = static_cast<std::uint32_t>(std::stoul(f[9]));
    if (h.id.empty() || h.holds == 0 || h.sent > h.from) return false;
  }
  const int op = m.op_index(h.op);
  if (op < 0 || h.to < h.from) return false;
  codes.clear();
  std::stringstream ts(f[3]);
  for (std::string t; std::getline(ts, t, ',');) {
    const auto eq = t.find('=');
    const int code = m.code_of(op, t.substr(0, eq));
    if (eq == std::string::npos || code < 0) return false;
    codes.emplace_back(code, t.substr(eq + 1));
  }
  return true;
}

struct Item {
  Hold hold;
  std::vector<std::pair<int, std::string>> codes;
};

// The fencing rule (file comment); prints the first few violations and
// returns how many it found.
long check_fences(const std::vector<Item>& items) {
  long violations = 0;
  auto report = [&](const std::string& what) {
    if (++violations <= 10) std::cout << "FENCE VIOLATION: " << what << "\n";
  };
  std::vector<const Hold*> detailed;
  for (const Item& it : items)
    if (it.hold.has_grant_details) detailed.push_back(&it.hold);
  // One fence names one lock, and one lock has one fence.
  std::map<std::uint64_t, const Hold*> by_fence;
  std::map<std::string, const Hold*> by_id;
  for (const Hold* h : detailed) {
    const auto [f, fresh_fence] = by_fence.emplace(h->fence, h);
    if (!fresh_fence && f->second->id != h->id)
      report(fmt::format("fence {} was given to lock {} ({}) and to lock {} ({})", h->fence, f->second->id,
                         f->second->who, h->id, h->who));
    const auto [i, fresh_id] = by_id.emplace(h->id, h);
    if (!fresh_id && i->second->fence != h->fence)
      report(fmt::format("lock {} had fence {} and fence {}", h->id, i->second->fence, h->fence));
  }
  // Grant order: walk the new locks by the time their request was sent,
  // keeping the highest fence among holds answered before that time.
  std::vector<const Hold*> by_answer = detailed, fresh;
  for (const Hold* h : detailed)
    if (h->holds == 1) fresh.push_back(h);
  std::sort(by_answer.begin(), by_answer.end(), [](const Hold* a, const Hold* b) { return a->from < b->from; });
  std::sort(fresh.begin(), fresh.end(), [](const Hold* a, const Hold* b) { return a->sent < b->sent; });
  const Hold* highest = nullptr;
  std::size_t answered = 0;
  for (const Hold* b : fresh) {
    for (; answered < by_answer.size() && by_answer[answered]->from < b->sent; ++answered)
      if (!highest || by_answer[answered]->fence > highest->fence) highest = by_answer[answered];
    if (highest && highest->fence >= b->fence)
      report(fmt::format("new lock {} ({}) got fence {}, but lock {} ({}) had fence {} before it was asked for",
                         b->id, b->who, b->fence, highest->id, highest->who, highest->fence));
  }
  return violations;
}

// What a check read from its logs.
struct LogLines {
  std::vector<Item> items;  // the holds
  long maybe = 0;           // the possible holds
  std::map<std::string, int> processes;
};

// Takes in one line of a log; false if it is malformed. Throws when it
// names a matrix the check was not given.
bool take_line(const std::string& line, const Matrices& known, LogLines& out) {
  std::vector<std::string> f;
  std::stringstream s(line);
  for (std::string field; std::getline(s, field, '\t');) f.push_back(field);
  try {
    if ((f.size() == 7 || f.size() == 8) && f[0] == "maybe") {  // possibly held; see the file comment
      const MatrixTable* m = matrix_of(known, f.size() == 8 ? f[7] : "");
      if (!m) throw std::runtime_error("a line of matrix " + f[7] + ", which no --matrix FILE gives");
      const bool ok = m->op_index(f[1]) >= 0 && std::stoll(f[3]) <= std::stoll(f[4]) && std::stol(f[5]) > 0;
      ++out.maybe;
      out.processes[f[6].substr(0, f[6].find(':'))]++;
      return ok;
    }
    Item it;
    if (!parse_hold(f, known, it.hold, it.codes)) return false;
    out.processes[it.hold.who.substr(0, it.hold.who.find(':'))]++;
    out.items.push_back(std::move(it));
    return true;
  } catch (const std::invalid_argument&) {  // a number that does not parse
    return false;
  } catch (const std::out_of_range&) {
    return false;
  }
}

// Reads every log into `out`; false (after saying why) when one cannot be
// read or has a malformed line.
bool read_logs(const std::vector<std::string>& files, const Matrices& known, LogLines& out) {
  for (const std::string& file : files) {
    std::ifstream in(file);
    if (!in) {
      std::cerr << "error: cannot read " << file << "\n";
      return false;
    }
    for (std::string line; std::getline(in, line);)
      if (!take_line(line, known, out)) {
        std::cerr << "error: " << file << ": bad line: " << line << "\n";
        return false;
      }
  }
  return true;
}

// Does `earlier`, while held, refuse `later`? Holds of one matrix: when
// that matrix refuses an overlapping pair of their targets. Holds of two
// matrices: when any of their targets overlap (which covers either matrix
// refusing).
bool refuses(const Item& earlier, const Item& later) {
  const MatrixTable* m = earlier.hold.matrix;
  const bool one_matrix = m == later.hold.matrix;
  for (const auto& [hc, hp] : earlier.codes)
    for (const auto& [rc, rp] : later.codes) {
      if (!paths_overlap(hp, rp)) continue;
      if (!one_matrix) return true;
      const Relation rel = hp == rp ? Relation::same
                           : path_within(rp, hp) ? Relation::held_ancestor
                                                 : Relation::held_descendant;
      if (m->refuses(rel, hc, rc)) return true;
    }
  return false;
}

// The exclusion rule (file comment) over holds sorted by grant time;
// prints the first few violations and returns how many it found.
long check_exclusion(const std::vector<Item>& items, long& overlapping_pairs) {
  long violations = 0;
  std::vector<const Item*> active;  // holds whose interval may still overlap
  for (const Item& it : items) {
    active.erase(std::remove_if(active.begin(), active.end(), [&](const Item* a) { return a->hold.to <= it.hold.from; }),
                 active.end());
    for (const Item* a : active) {
      ++overlapping_pairs;
      const bool a_first = a->hold.fence < it.hold.fence;
      if (a_first ? refuses(*a, it) : refuses(it, *a)) {
        ++violations;
        if (violations <= 10)
          std::cout << fmt::format("VIOLATION: fence {} {} ({}) and fence {} {} ({}) held at once\n", a->hold.fence,
                                   a->hold.op, a->hold.who, it.hold.fence, it.hold.op, it.hold.who);
      }
    }
    active.push_back(&it);
  }
  return violations;
}

}  // namespace

CheckResult check_logs(const std::vector<std::string>& files, const std::vector<std::string>& matrix_files) {
  std::deque<matrix::MatrixFile> compiled;
  Matrices known{{std::string(default_matrix().fingerprint), &default_matrix()}};
  for (const std::string& file : matrix_files) {
    compiled.push_back(matrix::MatrixFile::load(file));
    known[std::string(compiled.back().table().fingerprint)] = &compiled.back().table();
  }
  CheckResult r;
  LogLines logs;
  if (!read_logs(files, known, logs)) return r;
  r.readable = true;
  std::vector<Item>& items = logs.items;
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.hold.from < b.hold.from; });
  r.holds = static_cast<long>(items.size());
  r.maybe = logs.maybe;
  r.processes = static_cast<long>(logs.processes.size());
  r.violations = check_exclusion(items, r.overlapping_pairs);
  r.fence_violations = check_fences(items);
  return r;
}

int check(const options::Parsed& opt) {
  const CheckResult r = check_logs(opt.positional, opt.all("matrix"));
  if (!r.readable) return options::kExitFailure;
  std::cout << fmt::format(
      "{} holds and {} possible holds (acquires with unknown outcome) from {} processes, {} overlapping pairs "
      "checked, {} violations, {} fence violations\n",
      r.holds, r.maybe, r.processes, r.overlapping_pairs, r.violations, r.fence_violations);
  return r.clean() ? options::kExitOk : options::kExitFailure;
}

}  // namespace pathlock::stress
