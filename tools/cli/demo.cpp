// `pathlock demo`: the article's story as a readable timeline.
#include "demo.hpp"

#include <fmt/format.h>

#include <map>
#include <ostream>
#include <thread>
#include <vector>

namespace pathlock::cli {
namespace {

class Timeline {
 public:
  Timeline(LockEngine& engine, std::ostream& out) : engine_(engine), out_(out), start_(std::chrono::steady_clock::now()) {}

  // Requests a lock and prints one line; remembers the grant under `who`.
  bool request(const std::string& who, const std::string& op, std::vector<Target> targets, Millis ttl = Millis{30000}) {
    std::string what = op;
    for (const Target& t : targets) what += (what == op ? " " : " -> ") + t.path;
    const AcquireResult r = engine_.acquire(LockRequest{"demo", who, op, std::move(targets), ttl, Millis{0}});
    if (r.granted()) {
      grants_[who] = r.grant;
      line(who, what, fmt::format("GRANTED  fence {}", r.grant.fence));
    } else {
      const Conflict& c = r.conflict;
      line(who, what,
           fmt::format("REFUSED  {}'s {} holds {} {} ({})", c.owner, c.op, c.role, c.path,
                       c.relation == Relation::same            ? "same path"
                       : c.relation == Relation::held_ancestor ? "held path contains this one"
                                                               : "held path lies inside this one"));
    }
    return r.granted();
  }

  void release(const std::string& who) {
    const Grant g = grants_.at(who);
    grants_.erase(who);
    const bool ok = engine_.release("demo", g.id, g.token);
    line(who, "release", ok ? "released" : "NOT RELEASED");
  }

  // Releases every lock the story still holds, so a shared backend is left clean.
  void release_all() {
    for (const auto& [who, grant] : grants_)
      if (engine_.release("demo", grant.id, grant.token)) line(who, "release", "released");
    grants_.clear();
  }

  void note(const std::string& text) { out_ << fmt::format("{:>8}  {}\n", "", text); }

  void show_locks() {
    for (const LockInfo& l : engine_.list("demo", "/")) {
      std::string targets;
      for (const Target& t : l.targets) targets += fmt::format(" {}={}", t.role, t.path);
      note(fmt::format("  held: {} {}{} (fence {}, {} ms left)", l.owner, l.op, targets, l.fence, l.expires_in.count()));
    }
  }

 private:
  void line(const std::string& who, const std::string& what, const std::string& outcome) {
    const auto ms = std::chrono::duration_cast<Millis>(std::chrono::steady_clock::now() - start_).count();
    out_ << fmt::format("{:>6}ms  {:<6} {:<38} {}\n", ms, who, what, outcome);
  }

  LockEngine& engine_;
  std::ostream& out_;
  std::chrono::steady_clock::time_point start_;
  std::map<std::string, Grant> grants_;
};

}  // namespace

int run_demo(LockEngine& engine, std::ostream& out) {
  // A matrix given with --matrix must know the story's operations and roles.
  for (const auto& [op, roles] : std::vector<std::pair<std::string_view, std::vector<std::string_view>>>{
           {"upload", {"target"}}, {"create", {"target"}}, {"move_folder", {"src", "dst"}},
           {"rename_file", {"target"}}, {"delete_folder", {"target"}}}) {
    const int index = engine.matrix().op_index(op);
    for (const std::string_view role : roles)
      if (index < 0 || engine.matrix().code_of(index, role) < 0)
        throw InvalidRequest(fmt::format("the demo needs operation '{}' with role '{}'; matrix '{}' has none", op, role,
                                         engine.matrix().name));
  }
  Timeline t(engine, out);
  out << "pathlock demo: moving /p/A/C while others work under /p/A/C/D, beside /p/A/a.txt and /p/B\n"
      << "matrix '" << engine.matrix().name << "' version " << engine.matrix().version << "\n\n";
  t.note("Carol and Dave work inside /p/A/C/D; uploads and creates do not block each other.");
  t.request("carol", "upload", {{"target", "/p/A/C/D"}});
  t.request("dave", "create", {{"target", "/p/A/C/D"}});
  t.note("Alice wants to move /p/A/C to /p/Archive: work inside it must finish first.");
  t.request("alice", "move_folder", {{"src", "/p/A/C"}, {"dst", "/p/Archive"}});
  t.release("carol");
  t.release("dave");
  t.request("alice", "move_folder", {{"src", "/p/A/C"}, {"dst", "/p/Archive"}});
  t.note("While the move runs, /p/A/C, everything under it and its ancestors are locked for");
  t.note("conflicting work; the sibling file /p/A/a.txt and the folder /p/B are not.");
  t.request("erin", "upload", {{"target", "/p/A/C/D"}});
  t.request("frank", "rename_file", {{"target", "/p/A/a.txt"}});
  t.request("gina", "upload", {{"target", "/p/B"}});
  t.request("henry", "delete_folder", {{"target", "/p/A"}});
  t.request("ivan", "create", {{"target", "/p/A/CD"}});
  t.note("Names are compared by whole components: /p/A/CD is not inside /p/A/C.");
  t.show_locks();
  t.release("alice");
  t.release("frank");
  t.request("henry", "delete_folder", {{"target", "/p/A"}});
  t.note("Leases end on their own: Judy's upload has a 150 ms lease and is never released.");
  t.request("judy", "upload", {{"target", "/p/B/tmp"}}, Millis{150});
  t.request("kim", "delete_folder", {{"target", "/p/B"}});
  std::this_thread::sleep_for(Millis{200});
  t.release("gina");
  t.request("kim", "delete_folder", {{"target", "/p/B"}});
  t.show_locks();
  t.note("The end: everything still held is released.");
  t.release_all();
  return 0;
}

}  // namespace pathlock::cli
