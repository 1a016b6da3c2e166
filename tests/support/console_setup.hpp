// What the console's Catch2 tests share (console_test.cpp,
// http_guard_test.cpp): an embedded engine counting into its metrics, the
// options of a ConsoleServer over it (namespaces a, b, c, web), and the
// lines it logs.
#pragma once

#include "console_server.hpp"
#include "support/metered_engine.hpp"

#include <catch2/catch.hpp>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace pathlock::test {

struct ConsoleSetup {
  std::shared_ptr<Metrics> metrics = std::make_shared<Metrics>();
  std::unique_ptr<LockEngine> engine = metered_memory_engine(metrics);
  std::mutex mu;
  std::vector<std::string> logged;

  console::ConsoleOptions options(bool admin) {
    console::ConsoleOptions o;
    o.admin = admin;
    o.metrics = metrics;
    o.namespaces = [] { return std::vector<std::string>{"a", "b", "c", "web"}; };
    o.log = [this](LogLevel, std::string_view message, const std::vector<LogField>&) {
      std::lock_guard lock(mu);
      logged.emplace_back(message);
    };
    return o;
  }
  std::vector<std::string> log() {
    std::lock_guard lock(mu);
    return logged;
  }
  Grant hold(const std::string& owner, const std::string& op, const std::string& path) {
    LockRequest r{.ns = "web", .owner = owner, .op = op, .targets = {{"target", path}}};
    const AcquireResult got = engine->acquire(r);
    REQUIRE(got.granted());
    return got.grant;
  }
};

}  // namespace pathlock::test
