// A real `pathlock console ARGS...` child process for tests that read its
// HTTP API as an operator's browser would. Declarations only, so any test may
// include it; its definition is built, and tests use it, only in the metrics
// server build (#ifdef PATHLOCK_TEST_WITH_METRICS_SERVER around the uses).
#pragma once

#include "support/process.hpp"

#include <string>
#include <vector>

namespace pathlock::test {

class ConsoleProcess {
 public:
  // Starts `pathlock console ARGS...` (listening on 127.0.0.1:0) and waits
  // for its "console at" line; fails the test if it does not come.
  explicit ConsoleProcess(const std::vector<std::string>& args);
  ~ConsoleProcess();
  ConsoleProcess(const ConsoleProcess&) = delete;
  ConsoleProcess& operator=(const ConsoleProcess&) = delete;
  // GET `path` with the console's header; fails the test unless it answers 200.
  std::string get(const std::string& path) const;

 private:
  ChildGuard child_;
  int err_ = -1;
  int port_ = 0;
};

}  // namespace pathlock::test
