// The Python binding's engine object (pathlock.Engine), shared by the
// binding's source files: module.cpp (acquire, the calls on one lock, the
// reads, factories, the keeper), results.cpp (result types), limits.cpp
// (limits per namespace); conversions in convert.hpp.
#pragma once

#include <pybind11/pybind11.h>

#include <pathlock/engine.hpp>
#include <pathlock/matrix.hpp>

#include <memory>
#include <string>

namespace pathlock {

struct PyEngine {
  std::shared_ptr<const matrix::MatrixFile> matrix;  // null: the shipped matrix
  std::unique_ptr<LockEngine> engine;
  std::string backend;
  LockEngine& get() const { return *engine; }
};

using EngineClass = pybind11::class_<PyEngine, std::shared_ptr<PyEngine>>;

namespace binding {
// The exceptions (InvalidRequest, BackendError, MatrixError); Grant,
// Conflict, AcquireResult; LockInfo, Blocker, WaiterInfo and the pages
// (results.cpp).
void register_errors(pybind11::module_& m);
void register_results(pybind11::module_& m);
void register_listings(pybind11::module_& m);
}  // namespace binding

// pathlock.Limits, pathlock.LimitRefusal, pathlock.LimitsStatus, and the
// engine's set_default_limits, set_limits and limits (limits.cpp).
void register_limits(pybind11::module_& m, EngineClass& engine);

}  // namespace pathlock
