// The cases derived from one compiled matrix (matrix_cases.inc, written by
// pathlock-matrixc next to the generated header) and the two helpers every
// runner of them needs. Installed beside pathlock_matrix_check.cpp, which
// includes it; pathlock's own suite (tests/conformance/matrix_cases_test.cpp)
// includes the same file, so both runners read the cases one way.
//
// Include it only where the matrix's output directory (which holds
// matrix_cases.inc) is on the include path. Header-only: consumers compile
// it with the runner and need nothing but the pathlock headers.
#pragma once

#include <pathlock/engine.hpp>

#include <algorithm>
#include <chrono>
#include <future>
#include <sstream>
#include <stop_token>
#include <thread>
#include <string>
#include <vector>

namespace pathlock::matrix_cases {

// One line of matrix_cases.inc: a lock of held_op on held_targets, then a
// request of req_op on req_targets whose target of role req_role stands in
// `relation` to the held one; `granted` is the matrix's verdict. A refusal
// names the held lock's held_role at held_path.
struct MatrixCase {
  const char* held_op;
  const char* held_targets;
  const char* held_role;
  const char* held_path;
  const char* req_op;
  const char* req_targets;
  const char* req_role;
  const char* relation;
  bool granted;
};

inline const MatrixCase kCases[] = {
#define PATHLOCK_MATRIX_CASE(ho, ht, hr, hp, ro, rt, rr, rel, g) {ho, ht, hr, hp, ro, rt, rr, rel, g},
#include "matrix_cases.inc"
#undef PATHLOCK_MATRIX_CASE
};

// "src=/a,dst=/b" -> {{"src", "/a"}, {"dst", "/b"}}
inline std::vector<Target> parse_targets(const std::string& text) {
  std::vector<Target> out;
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t comma = std::min(text.find(',', i), text.size());
    const std::string part = text.substr(i, comma - i);
    const std::size_t eq = part.find('=');
    out.push_back(Target{part.substr(0, eq), part.substr(eq + 1)});
    i = comma + 1;
  }
  return out;
}

// The same targets with the one of role `role` moved beside /t/h (where
// every case puts its target under test): the same request never conflicts
// there.
inline std::vector<Target> beside(std::vector<Target> targets, const std::string& role) {
  for (Target& t : targets)
    if (t.role == role) t.path = "/t/beside" + t.path.substr(std::string("/t/h").size());
  return targets;
}

// One line of conversion_cases.inc (pathlock-matrixc's emit_conversions.cpp
// says what each kind sets up): `held` a lock of another owner, `other` a
// waiter's request (deadlock: the held lock's own conversion), `from` the
// converting lock as it is, `to` what it converts to, with to_role's target
// under test at `relation` to the held one. `outcome` is granted, refused or
// would_deadlock; a refusal names the `held` lock, the `other` waiter's place
// or the `from` lock. An empty op: no such lock.
struct ConversionCase {
  const char* kind;
  const char* held_op;
  const char* held_targets;
  const char* held_role;
  const char* other_op;
  const char* other_targets;
  const char* from_op;
  const char* from_targets;
  const char* to_op;
  const char* to_targets;
  const char* to_role;
  const char* relation;
  bool fair;
  const char* outcome;
  const char* names;
  bool other_granted;
};

inline const ConversionCase kConversionCases[] = {
#define PATHLOCK_CONVERSION_CASE(...) {__VA_ARGS__},
#include "conversion_cases.inc"
#undef PATHLOCK_CONVERSION_CASE
};

namespace detail {

// Polls `done` every 2 ms for up to 10 s.
template <class Fn>
bool until(Fn&& done) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

// One conversion case being run on namespace `ns`: the locks it took, what
// went wrong so far, and a request waiting in another thread (stopped and
// joined before the case ends).
struct ConversionRun {
  LockEngine& engine;
  const ConversionCase& c;
  std::string ns;
  std::ostringstream why{};
  Grant held{}, mine{};
  std::stop_source stop{};
  std::future<AcquireResult> waiting{};

  Grant take(const char* owner, const char* op, const char* targets) {
    const AcquireResult r = engine.acquire(LockRequest{ns, owner, op, parse_targets(targets)});
    if (!r.granted()) why << owner << "'s " << op << " was refused on a namespace of its own; ";
    return r.grant;
  }
  static AcquireResult call(LockEngine& e, const LockRequest& r, std::stop_token s) { return e.acquire(r, s); }
  static AcquireResult call(LockEngine& e, const ConvertRequest& r, std::stop_token s) { return e.convert(r, s); }
  // `request` in another thread, waiting up to 20 s or until stopped; true
  // once it holds a place in line.
  template <class Request>
  bool wait_in_line(Request request) {
    waiting = std::async(std::launch::async, [this, request] { return call(engine, request, stop.get_token()); });
    if (until([&] { return !engine.waiters(ns).empty(); })) return true;
    why << "the waiting request never took a place in line; ";
    return false;
  }
  ConvertRequest conversion(const Grant& g, const char* op, const char* targets, bool fair) const {
    ConvertRequest r = ConvertRequest::of(ns, g, op, parse_targets(targets));
    r.fair = fair;
    return r;
  }
  // The lock of `g` is listed with operation `op` and fence `fence`.
  void listed_as(const Grant& g, const std::string& op, std::uint64_t fence, const char* what) {
    for (const LockInfo& l : engine.list(ns))
      if (l.id == g.id) {
        if (l.op != op || l.fence != fence) why << what << ": the lock is " << l.op << " fenced " << l.fence << "; ";
        return;
      }
    why << what << ": the lock is not listed; ";
  }
  // Stops and joins the waiting request, releases everything; nothing may be left.
  std::string finish() {
    if (waiting.valid()) {
      stop.request_stop();
      const AcquireResult w = waiting.get();
      if (w.granted()) engine.release(ns, w.grant.id, w.grant.token);
    }
    for (const Grant* g : {&mine, &held})
      if (!g->id.empty() && !engine.release(ns, g->id, g->token)) why << "a release failed; ";
    if (!engine.list(ns).empty() || !engine.waiters(ns).empty()) why << "locks or waiters left at the end; ";
    return why.str();
  }
};

// Granted: the lock keeps its id, with a fence above every other; refused:
// the refusal names what the case says and the lock is as it was.
inline void judge(ConversionRun& run, const AcquireResult& got) {
  const ConversionCase& c = run.c;
  if (got.granted() != (std::string(c.outcome) == "granted")) {
    run.why << "expected " << c.outcome << ", got " << (got.granted() ? "granted" : "refused");
    if (!got.granted()) run.why << " by " << got.conflict.op << "/" << got.conflict.role << " at " << got.conflict.path;
    run.why << "; ";
  } else if (got.granted()) {
    if (got.grant.id != run.mine.id || got.grant.fence <= std::max(run.held.fence, run.mine.fence))
      run.why << "the converted lock has another id or a fence not above every other; ";
    run.listed_as(run.mine, c.to_op, got.grant.fence, "granted");
  } else {
    const Conflict& k = got.conflict;
    const std::string names = c.names;
    if (!got.conflicted() || k.requested_role != c.to_role || k.queued != (names == "other") ||
        (names == "held" && (k.id != run.held.id || k.op != c.held_op || k.role != c.held_role ||
                             k.path != "/t/h/x" || relation_name(k.relation) != c.relation)) ||
        (names == "other" && k.owner != "waiter"))
      run.why << "the refusal names " << k.owner << "'s " << k.op << "/" << k.role << " at " << k.path << " ("
              << relation_name(k.relation) << (k.queued ? ", queued" : "") << "), not the " << names << " lock; ";
    run.listed_as(run.mine, c.from_op, run.mine.fence, "refused");
  }
}

}  // namespace detail

// Runs one conversion case on `ns` (a namespace of its own); returns what
// went wrong ("" if nothing).
inline std::string conversion_case(LockEngine& engine, const ConversionCase& c, const std::string& ns) {
  detail::ConversionRun run{engine, c, ns};
  const std::string kind = c.kind;
  if (*c.held_op) run.held = run.take("holder", c.held_op, c.held_targets);
  run.mine = run.take("converter", c.from_op, c.from_targets);
  if (!run.why.str().empty()) return run.finish();
  if (kind == "deadlock") {
    ConvertRequest first = run.conversion(run.mine, c.to_op, c.to_targets, true);
    first.wait = std::chrono::seconds(20);
    if (!run.wait_in_line(first)) return run.finish();
    const AcquireResult got = engine.convert(run.conversion(run.held, c.other_op, c.other_targets, true));
    if (!got.would_deadlock() || got.conflict.id != run.mine.id) run.why << "the second conversion is not would_deadlock; ";
    run.listed_as(run.held, c.held_op, run.held.fence, "would_deadlock");
    run.stop.request_stop();
    if (!run.waiting.get().cancelled()) run.why << "the stopped conversion was not cancelled; ";
    run.listed_as(run.mine, c.from_op, run.mine.fence, "cancelled");
    return run.finish();
  }
  if (*c.other_op) {
    LockRequest waiter{ns, "waiter", c.other_op, parse_targets(c.other_targets)};
    waiter.wait = std::chrono::seconds(20);
    if (!run.wait_in_line(waiter)) return run.finish();
  }
  detail::judge(run, engine.convert(run.conversion(run.mine, c.to_op, c.to_targets, c.fair)));
  if (kind == "ahead") {
    const bool in = run.waiting.wait_for(std::chrono::milliseconds(c.other_granted ? 10000 : 50)) ==
                    std::future_status::ready;
    if (in != c.other_granted) run.why << "the waiter " << (in ? "got in" : "did not get in") << " after the conversion; ";
  }
  return run.finish();
}

}  // namespace pathlock::matrix_cases
