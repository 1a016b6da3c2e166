// The binding's result and listing types (Grant, Conflict, AcquireResult,
// LockInfo, Blocker, WaiterInfo, the pages) and its exceptions.
#include "convert.hpp"
#include "py_engine.hpp"

#include <pybind11/stl.h>

#include <pathlock/matrix.hpp>
#include <pathlock/path.hpp>

#include <string>

namespace py = pybind11;

namespace pathlock::binding {

// The id, owner and op that every listed lock, blocker and waiter has.
template <class T>
py::class_<T>& who(py::class_<T>&& c) {
  return c.def_readonly("id", &T::id).def_readonly("owner", &T::owner).def_readonly("op", &T::op);
}



void register_errors(py::module_& m) {
  // Exceptions: bad input is a ValueError, a backend failure a ConnectionError.
  static auto& invalid_request = py::register_exception<InvalidRequest>(m, "InvalidRequest", PyExc_ValueError);
  invalid_request.attr("__doc__") = "Bad input (unknown operation or role, bad path, TTL, namespace, ...); nothing was changed.";
  static auto& backend_error = py::register_exception<BackendError>(m, "BackendError", PyExc_ConnectionError);
  backend_error.attr("__doc__") =
      "The backend could not do its work (connection lost, timeout, another matrix in the namespace, ...).";
  static py::exception<matrix::MatrixError> matrix_error(m, "MatrixError", invalid_request.ptr());
  matrix_error.attr("__doc__") = "A matrix file that cannot be compiled; `problems` lists every problem found.";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const matrix::MatrixError& e) {
      py::object err = py::reinterpret_borrow<py::object>(matrix_error.ptr())(e.what());
      err.attr("problems") = py::cast(e.problems());
      PyErr_SetObject(matrix_error.ptr(), err.ptr());
    } catch (const PathError& e) {  // a path error is bad input, like any other
      PyErr_SetString(invalid_request.ptr(), e.what());
    }
  });

}

void register_grant(py::module_& m) {
  py::class_<Grant>(m, "Grant", "A granted lock: `token` is the secret that releases or renews it.")
      .def(py::init([](std::string id, std::string token, double expires_in) {
             Grant g;
             g.id = std::move(id);
             g.token = std::move(token);
             g.expires_in = to_millis(expires_in, "expires_in");
             return g;
           }),
           py::arg("id"), py::arg("token"), py::arg("expires_in") = 0.0,
           "The proof of a lock granted elsewhere (another process kept its id and token), for "
           "`acquire(..., reenter=Grant(id, token))`, which reads only id and token. To keep such a "
           "lock with a LeaseKeeper, give the lease left (`expires_in` seconds, e.g. the TTL of a "
           "renew() just done): the keeper counts the lease's end from it (0: already ended).")
      .def_readonly("id", &Grant::id)
      .def_readonly("token", &Grant::token)
      .def_readonly("fence", &Grant::fence, "Strictly increasing per namespace, per new lock.")
      .def_property_readonly("expires_in", [](const Grant& g) { return to_seconds(g.expires_in); },
                             "Lease left when granted, in seconds.")
      .def_readonly("holds", &Grant::holds, "Reentrant hold count.")
      .def("__repr__", [](const Grant& g) {
        return "Grant(id='" + g.id + "', fence=" + std::to_string(g.fence) + ", holds=" + std::to_string(g.holds) +
               ")";
      });
}

void register_conflict(py::module_& m) {
  py::class_<Conflict>(m, "Conflict", "The held lock (or older waiting request, `queued`) that refused a request.")
      .def_readonly("id", &Conflict::id)
      .def_readonly("op", &Conflict::op)
      .def_readonly("role", &Conflict::role)
      .def_readonly("path", &Conflict::path)
      .def_readonly("owner", &Conflict::owner)
      .def_property_readonly("expires_in", [](const Conflict& c) { return to_seconds(c.expires_in); })
      .def_readonly("requested_role", &Conflict::requested_role)
      .def_readonly("requested_path", &Conflict::requested_path)
      .def_property_readonly("relation", [](const Conflict& c) { return std::string(relation_name(c.relation)); },
                             "'same', 'held_ancestor' or 'held_descendant' (held path vs requested path).")
      .def_readonly("queued", &Conflict::queued)
      .def("__repr__", [](const Conflict& c) {
        return "Conflict(op='" + c.op + "', role='" + c.role + "', path='" + c.path + "', owner='" + c.owner + "')";
      })
      .def("__str__", &conflict_words);
}

void register_acquire_result(py::module_& m) {
  py::class_<AcquireResult>(m, "AcquireResult",
                            "The answer of acquire: `granted` and `grant`, or the `conflict` that refused it, or "
                            "`not_holder` (a reentry whose proof names no live lock). True when granted.")
      .def_property_readonly("granted", &AcquireResult::granted)
      .def_property_readonly("grant",
                             [](const AcquireResult& r) -> py::object {
                               return r.granted() ? py::cast(r.grant) : py::none();
                             })
      .def_property_readonly("conflict",
                             [](const AcquireResult& r) -> py::object {
                               return r.granted() || r.not_holder() || r.over_limit() ||
                                              (r.cancelled() && r.conflict.id.empty())
                                          ? py::none()
                                          : py::cast(r.conflict);
                             })
      .def_property_readonly("not_holder", &AcquireResult::not_holder)
      .def_property_readonly(
          "over_limit",
          [](const AcquireResult& r) -> py::object { return r.over_limit() ? py::cast(r.limit) : py::none(); },
          "Refused by a limit of the namespace: the LimitRefusal (limit, max, count); None otherwise.")
      .def_property_readonly("would_deadlock", &AcquireResult::would_deadlock,
                             "A conversion only: the lock that refuses it waits to convert to something this lock "
                             "refuses; answered at once, the lock unchanged (`conflict` names the other lock).")
      .def_property_readonly("cancelled", &AcquireResult::cancelled,
                             "Stopped before it returned (a StopSource, an asyncio cancellation): nothing is held.")
      .def("__bool__", [](const AcquireResult& r) { return r.granted(); })
      .def("__repr__", [](const AcquireResult& r) {
        if (r.granted()) return "AcquireResult(granted, id='" + r.grant.id + "')";
        if (r.not_holder()) return std::string("AcquireResult(not_holder)");
        if (r.cancelled()) return std::string("AcquireResult(cancelled)");
        if (r.would_deadlock()) return "AcquireResult(would_deadlock with " + r.conflict.id + ")";
        if (r.over_limit())
          return "AcquireResult(over_limit " + std::string(limit_name(r.limit.limit)) + " " +
                 std::to_string(r.limit.count) + "/" + std::to_string(r.limit.max) + ")";
        return "AcquireResult(refused by " + conflict_words(r.conflict) + ")";
      });
}

void register_results(py::module_& m) {
  register_grant(m);
  register_conflict(m);
  register_acquire_result(m);
}

void register_listings(py::module_& m) {
  who(py::class_<LockInfo>(m, "LockInfo", "A held lock, as listed."))
      .def_property_readonly("targets", [](const LockInfo& l) { return targets_list(l.targets); },
                             "[(role, canonical path)] in the matrix's role order.")
      .def_readonly("fence", &LockInfo::fence)
      .def_readonly("holds", &LockInfo::holds)
      .def_property_readonly("expires_in", [](const LockInfo& l) { return to_seconds(l.expires_in); })
      .def("__repr__", [](const LockInfo& l) {
        std::string targets;
        for (const Target& t : l.targets) targets += (targets.empty() ? "" : ", ") + t.role + "=" + py_quoted(t.path);
        return "LockInfo(id='" + l.id + "', owner=" + py_quoted(l.owner) + ", op='" + l.op + "', " + targets +
               ", fence=" + std::to_string(l.fence) + ")";
      });

  py::class_<ListPage>(m, "ListPage", "One page of a listing; `next` is '' on the last page.")
      .def_readonly("locks", &ListPage::locks)
      .def_readonly("next", &ListPage::next);

  who(py::class_<Blocker>(m, "Blocker", "A held lock or waiting request (`queued`) that refuses a request now."))
      .def_readonly("queued", &Blocker::queued)
      .def_readonly("role", &Blocker::role)
      .def_readonly("path", &Blocker::path)
      .def_readonly("requested_role", &Blocker::requested_role)
      .def_readonly("requested_path", &Blocker::requested_path)
      .def_property_readonly("relation", [](const Blocker& b) { return std::string(relation_name(b.relation)); })
      .def_readonly("fence", &Blocker::fence)
      .def_readonly("holds", &Blocker::holds)
      .def_property_readonly("expires_in", [](const Blocker& b) { return to_seconds(b.expires_in); })
      .def_property_readonly("waited", [](const Blocker& b) { return to_seconds(b.waited); });

  py::class_<BlockersPage>(m, "BlockersPage", "The answer of blockers(); `truncated`: more exist than `limit`.")
      .def_readonly("blockers", &BlockersPage::blockers)
      .def_readonly("truncated", &BlockersPage::truncated);

  who(py::class_<WaiterInfo>(m, "WaiterInfo", "A waiting request with a place in line."))
      .def_property_readonly("targets", [](const WaiterInfo& w) { return targets_list(w.targets); })
      .def_property_readonly("waited", [](const WaiterInfo& w) { return to_seconds(w.waited); })
      .def_property_readonly("expires_in", [](const WaiterInfo& w) { return to_seconds(w.expires_in); })
      .def_readonly("converts", &WaiterInfo::converts,
                    "A waiting conversion: the id of the lock it converts ('' otherwise).");

}

}  // namespace pathlock::binding
