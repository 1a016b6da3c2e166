// A service handler that moves a folder under a pathlock lock: the example of
// docs/guard.md. Built as `pathlock-example-move` so it keeps compiling.
#include <pathlock/engine.hpp>
#include <pathlock/factory.hpp>
#include <pathlock/guard.hpp>
#include <pathlock/keeper.hpp>

#include <atomic>
#include <iostream>
#include <string>

namespace {

struct Response {
  int status;
  std::string body;
};

// Stand-in for the storage layer: every write carries the fencing token, and
// storage rejects a token older than the newest it has seen for the path.
bool rewrite_parent_paths(const std::string& src, const std::string& dst, std::uint64_t fence) {
  std::cout << "  storage: moving rows of " << src << " under " << dst << " with fence " << fence << "\n";
  return true;
}

Response move_folder(pathlock::LockEngine& engine, pathlock::LeaseKeeper& keeper, const std::string& project,
                     const std::string& user, const std::string& src, const std::string& dst) {
  using namespace std::chrono_literals;
  pathlock::LockRequest request{project, user, "move_folder", {{"src", src}, {"dst", dst}}, 10s, 2s};
  std::atomic<bool> lease_lost{false};
  try {
    pathlock::LockGuard lock(engine, request, &keeper, [&](const pathlock::Lease&) { lease_lost = true; });
    if (!lock.owns_lock()) {
      const pathlock::Conflict& c = lock.conflict();
      return {409, c.owner + " is running " + c.op + " on " + c.path + "; try again later"};
    }
    if (!rewrite_parent_paths(src, dst, lock.grant().fence)) return {500, "storage failed"};
    if (lock.lost()) return {409, "the lock was lost before the move finished; storage rejected stale writes"};
    return {200, "moved"};
  } catch (const pathlock::InvalidRequest& e) {
    return {400, e.what()};
  } catch (const pathlock::BackendError& e) {
    return {503, e.what()};
  }  // the guard's destructor released the lock, whatever happened
}

}  // namespace

int main() {
  auto engine = pathlock::make_engine();
  pathlock::LeaseKeeper keeper(*engine);
  for (const auto& [src, dst] : {std::pair{"/p/A/C", "/p/B"}, std::pair{"/p/A", "/p/A/C"}}) {
    const Response r = move_folder(*engine, keeper, "project-42", "alice", src, dst);
    std::cout << "move " << src << " -> " << dst << ": " << r.status << " " << r.body << "\n";
  }
  return 0;
}
