// `pathlock admin status` run in process (tools/cli/admin.hpp), for the
// tests that read what an operator would see.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace pathlock::test {

// What `pathlock admin ARGS` ran in process answered: its exit status (an
// exception is 1, as main() makes it), its JSON lines and its stderr.
struct AdminRun {
  int status = 0;
  std::vector<nlohmann::json> lines;
  std::string err;
};
AdminRun admin_run(const std::vector<std::string>& args);

// Runs cli::run_admin(args); fails the test unless it exits 0 (its stderr
// is in the message). Returns its output, one JSON object per line.
std::vector<nlohmann::json> admin_status(const std::vector<std::string>& args);

}  // namespace pathlock::test
