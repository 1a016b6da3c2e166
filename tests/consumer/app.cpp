// A consumer of pathlock: its own matrix (rules.json, compiled by
// pathlock_compile_matrix into consumer_rules.hpp) and the shipped one, on
// the embedded backend. Exits 0 when pathlock behaves as the rules say.
// Built by tests/consumer/CMakeLists.txt (find_package or add_subdirectory)
// and, without the own matrix, with pkg-config flags (PATHLOCK_PKG_CONFIG).
#include <pathlock/metrics_server.hpp>
#include <pathlock/pathlock.hpp>
#ifndef PATHLOCK_PKG_CONFIG
#include "consumer_rules.hpp"
#endif

#include <cstdio>
#include <string>

namespace {

int failures = 0;

void expect(bool ok, const char* what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAIL", what);
  if (!ok) ++failures;
}

}  // namespace

int main() {
  using namespace pathlock;
  std::printf("pathlock %s (%d.%d.%d)\n", PATHLOCK_VERSION_STRING, PATHLOCK_VERSION_MAJOR, PATHLOCK_VERSION_MINOR,
              PATHLOCK_VERSION_PATCH);
  expect(std::string(kVersionString) == PATHLOCK_EXPECTED_VERSION, "version.hpp matches the package version");

  // The shipped matrix: moving a folder refuses an upload inside it.
  auto shipped = make_memory_engine();
  const AcquireResult move =
      shipped->acquire({"p", "alice", "move_folder", {{"src", "/p/A"}, {"dst", "/p/B"}}, Millis{30000}});
  expect(move.granted(), "shipped matrix: move_folder granted");
  const AcquireResult upload = shipped->acquire({"p", "bob", "upload", {{"target", "/p/A/C/f.txt"}}, Millis{30000}});
  expect(!upload.granted() && upload.conflict.op == "move_folder",
         "shipped matrix: upload inside a moving folder refused");
  // Metrics, and the exporter: the package carries its HTTP dependency.
  expect(shipped->metrics() && shipped->metrics()->snapshot().acquires_total() == 2, "metrics counted");
  {
    MetricsServer exporter(shipped->metrics());
    expect(exporter.port() > 0, "metrics server listens");
  }

#ifndef PATHLOCK_PKG_CONFIG
  // The consumer's own matrix, through the factory.
  EngineOptions options;
  options.matrix = &consumer::rules::kMatrix;
  auto own = make_engine(options);
  expect(own->matrix().name == "consumer-rules", "own matrix in use");
  const AcquireResult edit = own->acquire({"docs", "alice", "edit", {{"target", "/site/a/page"}}, Millis{30000}});
  expect(edit.granted(), "own matrix: edit granted");
  const AcquireResult publish = own->acquire({"docs", "bob", "publish", {{"target", "/site/a"}}, Millis{30000}});
  expect(!publish.granted() && publish.conflict.op == "edit", "own matrix: publish above an edit refused");
  const AcquireResult read = own->acquire({"docs", "carol", "read", {{"target", "/site/a/page"}}, Millis{30000}});
  expect(read.granted(), "own matrix: read beside an edit granted");
  bool threw = false;
  try {
    own->acquire({"docs", "dave", "move_folder", {{"src", "/x"}, {"dst", "/y"}}, Millis{30000}});
  } catch (const InvalidRequest&) {
    threw = true;
  }
  expect(threw, "own matrix: an operation of the shipped matrix is unknown");
#endif
  return failures == 0 ? 0 : 1;
}
