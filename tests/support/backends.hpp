// Backends under test: every conformance test runs once per entry.
#pragma once

#include <pathlock/engine.hpp>

#include <memory>
#include <string>
#include <vector>

namespace pathlock::test {

// Names of the backends the conformance suite runs against.
std::vector<std::string> backend_names();

// The backends that support waiting (LockRequest::wait > 0).
std::vector<std::string> waiting_backend_names();

// A fresh engine of backend `name` for `matrix` (nullptr: default matrix).
std::unique_ptr<LockEngine> make_test_engine(const std::string& name, const MatrixTable* matrix = nullptr);

// A namespace name no other test uses (backends may share one server).
std::string unique_namespace(const std::string& hint = "t");

}  // namespace pathlock::test
