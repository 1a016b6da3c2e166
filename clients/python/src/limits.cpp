// Limits per namespace in the Python binding (docs/python.md#limits-per-namespace):
// pathlock.Limits (three optional ints), the refusal an AcquireResult
// carries (result.over_limit), and the engine's calls that set and read them.
#include "py_engine.hpp"

#include <pybind11/stl.h>

#include <optional>
#include <string>

namespace py = pybind11;

namespace pathlock {

namespace {

std::optional<std::uint64_t> count_arg(const std::optional<long long>& v, const char* name) {
  if (!v) return std::nullopt;
  if (*v < 0) throw InvalidRequest(std::string(name) + ": a limit must be 0 or more, or None");
  return static_cast<std::uint64_t>(*v);
}

std::string limits_repr(const Limits& l) {
  const auto one = [](const std::optional<std::uint64_t>& v) { return v ? std::to_string(*v) : std::string("None"); };
  return "Limits(locks=" + one(l.locks) + ", places=" + one(l.places) + ", owner_locks=" + one(l.owner_locks) + ")";
}

void register_types(py::module_& m) {
  py::class_<Limits>(m, "Limits",
                     "Limits of a namespace: the most live `locks`, `places` in line and locks per owner "
                     "(`owner_locks`); None: no limit.")
      .def(py::init([](std::optional<long long> locks, std::optional<long long> places,
                       std::optional<long long> owner_locks) {
             return Limits{count_arg(locks, "locks"), count_arg(places, "places"),
                           count_arg(owner_locks, "owner_locks")};
           }),
           py::kw_only(), py::arg("locks") = py::none(), py::arg("places") = py::none(),
           py::arg("owner_locks") = py::none())
      .def_readonly("locks", &Limits::locks)
      .def_readonly("places", &Limits::places)
      .def_readonly("owner_locks", &Limits::owner_locks)
      .def("__eq__", [](const Limits& a, const Limits& b) { return a == b; })
      .def("__repr__", &limits_repr);
  py::class_<LimitRefusal>(m, "LimitRefusal", "The limit that refused an acquire, its value and the count now.")
      .def_property_readonly("limit", [](const LimitRefusal& r) { return std::string(limit_name(r.limit)); },
                             "'locks', 'places' or 'owner_locks'.")
      .def_readonly("max", &LimitRefusal::max)
      .def_readonly("count", &LimitRefusal::count)
      .def("__repr__", [](const LimitRefusal& r) {
        return "LimitRefusal(" + std::string(limit_name(r.limit)) + ", max=" + std::to_string(r.max) +
               ", count=" + std::to_string(r.count) + ")";
      });
  py::class_<LimitsStatus>(m, "LimitsStatus", "A namespace's limits and its use of them (Engine.limits).")
      .def_readonly("defaults", &LimitsStatus::defaults)
      .def_readonly("overrides", &LimitsStatus::overrides, "The namespace's own limits, or None.")
      .def_readonly("effective", &LimitsStatus::effective)
      .def_readonly("locks", &LimitsStatus::locks)
      .def_readonly("places", &LimitsStatus::places)
      .def_readonly("owner_locks", &LimitsStatus::owner_locks)
      .def_readonly("owner", &LimitsStatus::owner);
}

}  // namespace

void register_limits(py::module_& m, EngineClass& engine) {
  register_types(m);
  engine
      .def(
          "set_default_limits",
          [](PyEngine& self, const Limits& limits) {
            py::gil_scoped_release nogil;
            self.get().set_default_limits(limits);
          },
          py::arg("limits"), "The default limits of every namespace without limits of its own.")
      .def(
          "set_limits",
          [](PyEngine& self, const std::string& ns, const std::optional<Limits>& limits) {
            py::gil_scoped_release nogil;
            self.get().set_limits(ns, limits);
          },
          py::arg("ns"), py::arg("limits"), "Namespace `ns`'s own limits (replacing the default); None removes them.")
      .def(
          "limits",
          [](PyEngine& self, const std::string& ns) {
            py::gil_scoped_release nogil;
            return self.get().limits(ns);
          },
          py::arg("ns"), "The limits in force in `ns` and its use of them (a LimitsStatus).");
}

}  // namespace pathlock
