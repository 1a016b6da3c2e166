// `pathlock admin status` run in process (tools/cli/admin.hpp), for the
// tests that read what an operator would see.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace pathlock::test {

// Runs cli::run_admin(args); fails the test unless it exits 0 (its stderr
// is in the message). Returns its output, one JSON object per line.
std::vector<nlohmann::json> admin_status(const std::vector<std::string>& args);

}  // namespace pathlock::test
