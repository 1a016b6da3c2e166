// A service handler that moves a folder under a pathlock lock, and the
// storage side that checks every write: the complete example of
// docs/guard.md, which shows this file. The test suite builds and runs it
// (`pathlock-example-move`); it is installed with the docs.
#include <pathlock/engine.hpp>
#include <pathlock/factory.hpp>
#include <pathlock/guard.hpp>
#include <pathlock/keeper.hpp>

#include <cstdint>
#include <iostream>
#include <map>
#include <mutex>
#include <string>

namespace {

struct Response {
  int status;
  std::string body;
};

// The storage layer. Every write carries the lock's fence; storage keeps the
// highest fence it accepted per path and refuses lower ones, so a holder that
// lost its lease (a long pause, a partition) cannot overwrite the work of the
// next holder. Just before committing, it also asks pathlock "is this lock
// still held with this token?" (LockEngine::is_held): a cheap read that
// catches a lost lease early. The fence comparison is what makes a stale
// write impossible; the hold check only narrows the window in which one is
// attempted.
class FencedStore {
 public:
  bool write(pathlock::LockEngine& engine, const std::string& ns, const pathlock::Grant& grant,
             const std::string& path, const std::string& value) {
    std::lock_guard guard(mutex_);
    std::uint64_t& highest = fences_[path];
    if (grant.fence < highest) return false;                         // 1. compare the fence
    if (!engine.is_held(ns, grant.id, grant.token)) return false;    // 2. check the hold
    highest = grant.fence;                                           // 3. commit
    rows_[path] = value;
    return true;
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::uint64_t> fences_;
  std::map<std::string, std::string> rows_;
};

Response move_folder(pathlock::LockEngine& engine, pathlock::LeaseKeeper& keeper, FencedStore& store,
                     const std::string& project, const std::string& user, const std::string& src,
                     const std::string& dst) {
  using namespace std::chrono_literals;
  // 10 s lease kept alive by the keeper; wait up to 2 s for conflicting work.
  pathlock::LockRequest request{project, user, "move_folder", {{"src", src}, {"dst", dst}}, 10s, 2s};
  try {
    pathlock::LockGuard lock(engine, request, &keeper, [](const pathlock::Lease&) {});
    if (!lock.owns_lock()) {
      const pathlock::Conflict& c = lock.conflict();
      return {409, c.owner + " is running " + c.op + " on " + c.path + "; try again later"};
    }
    if (!store.write(engine, project, lock.grant(), dst, "moved from " + src)) return {409, "storage refused a stale write"};
    if (lock.lost()) return {409, "the lock was lost before the move finished; storage rejected stale writes"};
    return {200, "moved"};
  } catch (const pathlock::InvalidRequest& e) {  // e.g. a folder moved into itself
    return {400, e.what()};
  } catch (const pathlock::BackendError& e) {  // e.g. Redis unreachable
    return {503, e.what()};
  }  // the guard's destructor released the lock, whatever happened
}

}  // namespace

int main() {
  auto engine = pathlock::make_engine();
  pathlock::LeaseKeeper keeper(*engine);
  FencedStore store;
  int failures = 0;
  const auto expect = [&](const char* what, int got, int want) {
    std::cout << what << ": " << got << (got == want ? "" : " (unexpected)") << "\n";
    failures += got != want;
  };
  expect("move /p/A/C -> /p/B", move_folder(*engine, keeper, store, "project-42", "alice", "/p/A/C", "/p/B").status, 200);
  expect("move /p/A -> /p/A/C", move_folder(*engine, keeper, store, "project-42", "alice", "/p/A", "/p/A/C").status, 400);
  // A write with a lock that is no longer held is refused by storage.
  const auto r = engine->acquire({"project-42", "bob", "upload", {{"target", "/p/B/x"}}});
  if (!r.granted()) return 1;
  engine->release("project-42", r.grant.id, r.grant.token);
  expect("write after release", store.write(*engine, "project-42", r.grant, "/p/B/x", "late") ? 200 : 409, 409);
  return failures == 0 ? 0 : 1;
}
