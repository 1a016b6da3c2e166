#include "support/console_process.hpp"

#include <catch2/catch.hpp>
#include <fcntl.h>
#include <httplib.h>
#include <unistd.h>

namespace pathlock::test {

ConsoleProcess::ConsoleProcess(const std::vector<std::string>& args) {
  int err[2];
  REQUIRE(pipe2(err, O_CLOEXEC) == 0);
  std::vector<std::string> argv{PATHLOCK_CLI, "console"};
  argv.insert(argv.end(), args.begin(), args.end());
  child_.pid = spawn(argv, -1, -1, err[1]);
  close(err[1]);
  err_ = err[0];
  const std::string line = read_line(err_);  // "pathlock: console at http://127.0.0.1:PORT/"
  INFO(line);
  REQUIRE(line.rfind("pathlock: console at http://127.0.0.1:", 0) == 0);
  port_ = std::stoi(line.substr(line.rfind(':') + 1));
}

ConsoleProcess::~ConsoleProcess() {
  if (err_ >= 0) close(err_);
}

std::string ConsoleProcess::get(const std::string& path) const {
  httplib::Client c("127.0.0.1", port_);
  const auto res = c.Get(path, {{"X-Pathlock-Console", "1"}});
  REQUIRE(res);
  INFO(path << ": " << res->body);
  CHECK(res->status == 200);
  return res->body;
}

}  // namespace pathlock::test
