// Rolling deploys on Redis (layout 3): two builds with different matrices
// serve one namespace at once, neither gets an error, and no refusal of
// either matrix is skipped (docs/operations.md "Changing the matrix: rolling
// deploys"). Against a real redis-server:
//   * a lock of matrix A refuses every overlapping request of matrix B (same
//     path, ancestor, descendant), named by its own record;
//   * once A's locks are gone, B's own rules alone decide (B then grants
//     what "any overlap" refused);
//   * `pathlock-stress run` processes with the shipped matrix and with
//     tests/data/refined.json share a namespace, and `pathlock-stress check`
//     over both matrices finds no violation; the checker fails a log where
//     holds of two matrices overlap;
//   * `pathlock admin status` names both matrices with their counts.
// The embedded backend is N/A: engines do not share state.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <pathlock/engine.hpp>

#include "matrix/table.hpp"
#include "support/admin_status.hpp"
#include "support/backends.hpp"
#include "support/process.hpp"
#include "support/redis_server.hpp"

using namespace pathlock;
using namespace std::chrono_literals;
using pathlock::test::admin_status;
using test::spawn;
using test::wait_exit;

namespace {

const std::string kRefined = PATHLOCK_SOURCE_DIR "/tests/data/refined.json";

const matrix::CompiledMatrix& refined() {
  static const std::unique_ptr<matrix::CompiledMatrix> m = matrix::compile_matrix_file(kRefined);
  return *m;
}

LockRequest request(const std::string& ns, const std::string& owner, const std::string& op,
                    std::vector<Target> targets) {
  return LockRequest{ns, owner, op, std::move(targets), 30000ms, 0ms};
}

}  // namespace

TEST_CASE("rollout: a lock of one matrix refuses every overlapping request of another", "[rollout][redis]") {
  test::TwoMatrices versions(refined().table(), "roll");
  auto& [ns, a, b] = versions;  // the shipped matrix, the product owner's new one
  const Grant held = test::granted(*a, request(ns, "alice", "upload", {{"target", "/p/A/f"}}));
  // refined.json lets a scan share anything with a scan, and its "write"
  // never meets "upload": B's own rules know nothing of A's operations, so
  // any overlap is a conflict, in every relation.
  for (const auto& [path, relation] : std::vector<std::pair<std::string, Relation>>{
           {"/p/A/f", Relation::same}, {"/p/A", Relation::held_descendant}, {"/p/A/f/x", Relation::held_ancestor}}) {
    INFO(path);
    const auto r = b->acquire(request(ns, "bob", "scan", {{"target", path}}));
    REQUIRE_FALSE(r.granted());
    CHECK(r.conflict.id == held.id);
    CHECK(r.conflict.op == "upload");  // from the lock's own record
    CHECK(r.conflict.role == "target");
    CHECK(r.conflict.path == "/p/A/f");
    CHECK(r.conflict.relation == relation);
  }
  // Beside it: granted. And the other way round, B's lock refuses A.
  const Grant beside = test::granted(*b, request(ns, "bob", "scan", {{"target", "/p/B"}}));
  const auto back = a->acquire(request(ns, "alice", "create", {{"target", "/p/B/new"}}));
  REQUIRE_FALSE(back.granted());
  CHECK(back.conflict.op == "scan");
  CHECK(back.conflict.relation == Relation::held_ancestor);
  // Each engine lists both matrices' locks, with their own operation names.
  CHECK(a->list(ns).size() == 2);
  CHECK(b->list(ns).size() == 2);
  CHECK(a->release(ns, held.id, held.token));
  CHECK(b->release(ns, beside.id, beside.token));
}

TEST_CASE("rollout: once the old matrix's locks are gone, the new matrix alone decides", "[rollout][redis]") {
  const auto& server = test::shared_redis_server();
  test::TwoMatrices versions(refined().table(), "roll");
  auto& [ns, a, b] = versions;
  const Grant old_lock = test::granted(*a, request(ns, "alice", "upload", {{"target", "/x"}}));
  const Grant scan1 = test::granted(*b, request(ns, "bob", "scan", {{"target", "/y"}}));
  // B's own rules: a scan does not refuse a scan on the same path.
  const auto scan2 = b->acquire(request(ns, "carol", "scan", {{"target", "/y"}}));
  CHECK(scan2.granted());
  // A's lock is another matrix's: the same request on its path is refused.
  REQUIRE_FALSE(b->acquire(request(ns, "carol", "scan", {{"target", "/x"}})).granted());
  {
    const auto status = admin_status({"status", "--redis", server.url(), "--namespace", ns});
    REQUIRE(status.size() == 1);
    CHECK(status[0]["layout"] == 4);
    REQUIRE(status[0]["matrices"].size() == 2);
    std::map<std::string, nlohmann::json> by_name;
    for (const auto& m : status[0]["matrices"]) by_name[m["name"].get<std::string>()] = m;
    CHECK(by_name.at("cloud-drive")["locks"] == 1);
    CHECK(by_name.at("cloud-drive")["fingerprint"] == std::string(default_matrix().fingerprint));
    CHECK(by_name.at("refined-test")["locks"] == 2);
    CHECK(by_name.at("refined-test")["version"] == "0.1");
    CHECK(by_name.at("refined-test")["waiters"] == 0);
  }
  // The old build's last lock goes: its matrix leaves the namespace.
  REQUIRE(a->release(ns, old_lock.id, old_lock.token));
  const auto now = b->acquire(request(ns, "carol", "scan", {{"target", "/x"}}));
  CHECK(now.granted());
  const auto again = b->acquire(request(ns, "dave", "scan", {{"target", "/x"}}));
  CHECK(again.granted());  // "any overlap" would refuse this; B's own rules allow it
  const auto status = admin_status({"status", "--redis", server.url(), "--namespace", ns});
  REQUIRE(status[0]["matrices"].size() == 1);
  CHECK(status[0]["matrices"][0]["name"] == "refined-test");
  CHECK(status[0]["matrices"][0]["locks"] == 4);
  // SCAN finds the namespace too.
  bool found = false;
  for (const auto& line : admin_status({"status", "--redis", server.url()})) found = found || line["namespace"] == ns;
  CHECK(found);
  for (const auto& l : b->list(ns)) CHECK(b->force_release(ns, l.id));
  CHECK(test::ns_keys(server, ns) == test::kOnlyMeta);
  CHECK(admin_status({"status", "--redis", server.url(), "--namespace", ns})[0]["matrices"].empty());
}

TEST_CASE("rollout checker: holds of two matrices that overlap are a violation", "[rollout]") {
  const std::string fp_b(refined().table().fingerprint);
  const std::string fp_a(default_matrix().fingerprint);
  const test::ScratchDir scratch("rollout-checker");
  const std::string same = scratch.path("rollout_same.log"), cross = scratch.path("rollout_cross.log");
  // scan/scan on one path: refined allows it within its own matrix...
  std::ofstream(same) << "hold\t1\tscan\ttarget=/p\t100\t200\t1:0\t90\ta1\t1\t" << fp_b << "\n"
                      << "hold\t2\tscan\ttarget=/p\t150\t250\t2:0\t95\ta2\t1\t" << fp_b << "\n";
  CHECK(wait_exit(spawn({PATHLOCK_STRESS, "check", "--matrix", kRefined, same})) == 0);
  // ...but a hold of the shipped matrix on a path inside it is a violation,
  // whatever either matrix says.
  std::ofstream(cross) << "hold\t1\tscan\ttarget=/p\t100\t200\t1:0\t90\ta1\t1\t" << fp_b << "\n"
                       << "hold\t2\tcreate\ttarget=/p/x\t150\t250\t2:0\t95\ta2\t1\t" << fp_a << "\n"
                       << "hold\t3\tcreate\ttarget=/q\t150\t250\t2:1\t96\ta3\t1\t" << fp_a << "\n";
  CHECK(wait_exit(spawn({PATHLOCK_STRESS, "check", "--matrix", kRefined, cross})) == 1);
  // A log of a matrix the check was not given cannot be judged.
  CHECK(wait_exit(spawn({PATHLOCK_STRESS, "check", cross})) != 0);
}

TEST_CASE("rollout: stress processes of two matrices on one namespace never hold conflicting locks",
          "[rollout][redis][stress]") {
  const auto& server = test::shared_redis_server();
  const std::string ns = test::unique_namespace("rollstress");
  const test::ScratchDir scratch("rollout");
  INFO("logs in " << scratch.dir());
  std::vector<pid_t> pids;
  std::vector<std::string> logs;
  for (int p = 0; p < 4; ++p) {
    logs.push_back(scratch.path(fmt::format("rollout-{}-{}.log", ns, p)));
    std::vector<std::string> argv{PATHLOCK_STRESS, "run", "--backend", "redis", "--redis", server.url(),
                                  "--namespace", ns, "--threads", "3", "--ops", "300", "--seed",
                                  std::to_string(p + 1), "--log", logs.back()};
    if (p % 2 == 1) {
      argv.push_back("--matrix");
      argv.push_back(kRefined);
    }
    pids.push_back(spawn(argv));
  }
  for (const pid_t pid : pids) CHECK(wait_exit(pid) == 0);
  std::vector<std::string> check{PATHLOCK_STRESS, "check", "--matrix", kRefined};
  check.insert(check.end(), logs.begin(), logs.end());
  CHECK(wait_exit(spawn(check)) == 0);
  // Both matrices took locks.
  std::map<std::string, long> holds;
  for (const auto& log : logs) {
    std::ifstream in(log);
    for (std::string line; std::getline(in, line);)
      if (line.rfind("hold\t", 0) == 0) ++holds[line.substr(line.rfind('\t') + 1)];
  }
  CHECK(holds[std::string(default_matrix().fingerprint)] > 100);
  CHECK(holds[std::string(refined().table().fingerprint)] > 100);
  // Everything released: only meta, and no matrix in use.
  CHECK(test::ns_keys(server, ns) == test::kOnlyMeta);
  CHECK(admin_status({"status", "--redis", server.url(), "--namespace", ns})[0]["matrices"].empty());
}

TEST_CASE("rollout: a place in line alone keeps its matrix in use - admin status counts it", "[rollout][redis]") {
  const auto& server = test::shared_redis_server();
  const std::string ns = test::unique_namespace("rollwait");
  auto b = test::redis_engine(server.url(), &refined().table());
  const auto scan = b->acquire(request(ns, "bob", "scan", {{"target", "/w"}}));
  REQUIRE(scan.granted());
  // A fair waiter of the shipped matrix, through the library as any client
  // would call it: refused (another matrix's lock overlaps), and in line.
  test::RedisConnection c(server.url());
  const auto r = test::call_function(c, default_matrix(), "acquire", ns,
                                     {"alice", "delete_folder", "30000", "id1", "tok1", "", "", "", "/", "1", "wA", "2000"});
  REQUIRE(r.elements.at(0).str == "refused");
  CHECK(r.elements.at(2).str == "scan");  // named by the lock's own record
  CHECK(r.elements.at(3).str == "target");
  {
    const auto status = admin_status({"status", "--redis", server.url(), "--namespace", ns});
    std::map<std::string, nlohmann::json> by_name;
    for (const auto& m : status.at(0)["matrices"]) by_name[m["name"].get<std::string>()] = m;
    CHECK(by_name.at("cloud-drive")["locks"] == 0);
    CHECK(by_name.at("cloud-drive")["waiters"] == 1);
    CHECK(by_name.at("refined-test")["locks"] == 1);
  }
  // The waiter refuses a fair overlapping request of the other matrix too.
  const auto behind = b->acquire(request(ns, "carol", "scan", {{"target", "/v"}}));
  REQUIRE_FALSE(behind.granted());
  CHECK(behind.conflict.queued);
  CHECK(behind.conflict.id == "wA");
  CHECK(test::call_function(c, default_matrix(), "leave", ns, {"wA"}).elements.at(1).integer == 1);
  const auto status = admin_status({"status", "--redis", server.url(), "--namespace", ns});
  REQUIRE(status.at(0)["matrices"].size() == 1);
  CHECK(status.at(0)["matrices"][0]["name"] == "refined-test");
  CHECK(b->release(ns, scan.grant.id, scan.grant.token));
}

TEST_CASE("rollout: at most 99 matrices in one namespace - the 100th gets a clear error and adds nothing",
          "[rollout][redis]") {
  const auto& server = test::shared_redis_server();
  const std::string ns = test::unique_namespace("roll99");
  auto a = test::redis_engine(server.url());
  std::vector<std::string> hset{"HSET", test::prefix_of(ns) + "meta", "layout", "3"};
  for (int t = 1; t <= 99; ++t) {
    hset.push_back(fmt::format("m:{}", t));
    hset.push_back(fmt::format("fp{}", t) + std::string(1, '\0') + "other" + std::string(1, '\0') + "1");
  }
  REQUIRE_FALSE(server.command(hset).is_error());
  CHECK_THROWS_WITH(a->acquire(request(ns, "alice", "upload", {{"target", "/a"}})),
                    Catch::Contains("99 matrices are in use"));
  CHECK(test::ns_keys(server, ns) == test::kOnlyMeta);
}
