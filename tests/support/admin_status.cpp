#include "support/admin_status.hpp"

#include "admin.hpp"

#include <catch2/catch.hpp>

#include <sstream>

namespace pathlock::test {

AdminRun admin_run(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  AdminRun r;
  try {
    r.status = cli::run_admin(args, out, err);
  } catch (const std::exception& e) {  // main() turns these into exit status 1
    err << "error: " << e.what() << "\n";
    r.status = 1;
  }
  r.err = err.str();
  std::istringstream lines(out.str());
  for (std::string line; std::getline(lines, line);) r.lines.push_back(nlohmann::json::parse(line));
  return r;
}

std::vector<nlohmann::json> admin_status(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = cli::run_admin(args, out, err);
  INFO(err.str());
  REQUIRE(code == 0);
  std::vector<nlohmann::json> lines;
  std::istringstream in(out.str());
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

}  // namespace pathlock::test
