// pathlock._pathlock: the C++ engine bound for Python with pybind11.
//
// A Python-facing layer only: every call goes to the same LockEngine the C++
// services use (include/pathlock/*.hpp); nothing of the engine is
// re-implemented here. Durations are seconds (float) on the Python side,
// milliseconds in C++. Every engine call releases the GIL, so other Python
// threads run while one waits or talks to Redis. The pure-Python part of the
// package (context manager, asyncio) is clients/python/pathlock/__init__.py; the
// types are documented in clients/python/pathlock/_pathlock.pyi and docs/python.md.
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <pathlock/engine.hpp>
#include <pathlock/keeper.hpp>
#include <pathlock/memory.hpp>
#include <pathlock/path.hpp>
#include <pathlock/version.hpp>
#ifdef PATHLOCK_WITH_REDIS
#include <pathlock/redis.hpp>
#endif

#include <pathlock/matrix.hpp>

#include <fmt/format.h>

#include "convert.hpp"
#include "py_engine.hpp"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <future>
#include <stop_token>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace py = pybind11;
using namespace pathlock;
using namespace pathlock::binding;

namespace {

// The engine's acquire (or convert: `call`), stoppable by `stop`, with the
// GIL released, and never losing a grant to a Python exception: while it
// waits, the calling thread (the main thread is the one that gets signals)
// wakes every 50 ms to run Python's signal handlers; when one raises
// (Ctrl-C: KeyboardInterrupt) the wait is stopped, a grant that raced the
// stop is given back (`give_back`: released for an acquire; a conversion
// stays made), and the exception propagates. After a grant, pending handlers
// run once more before it is handed out, so a Ctrl-C that came during the
// wait never lands on the bytecode that would have stored the grant.
template <class Call, class GiveBack>
AcquireResult guarded(Call call, bool waits, std::stop_source stop, GiveBack give_back) {
  AcquireResult out;
  if (!waits) {
    py::gil_scoped_release nogil;
    out = call(stop.get_token());
  } else {
    std::future<AcquireResult> answer =
        std::async(std::launch::async, [&call, token = stop.get_token()] { return call(token); });
    while (true) {
      {
        py::gil_scoped_release nogil;
        if (answer.wait_for(std::chrono::milliseconds(50)) == std::future_status::ready) break;
      }
      if (PyErr_CheckSignals() == 0) continue;
      py::error_already_set raised;  // takes the exception a handler raised
      stop.request_stop();
      AcquireResult late;
      {
        py::gil_scoped_release nogil;
        late = answer.get();
      }
      if (late.granted()) give_back(late);
      throw raised;
    }
    out = answer.get();  // rethrows the engine's exception, if any
  }
  if (out.granted() && PyErr_CheckSignals() != 0) {
    py::error_already_set raised;
    give_back(out);
    throw raised;
  }
  return out;
}

AcquireResult acquire_guarded(LockEngine& engine, const LockRequest& req, std::stop_source stop) {
  return guarded([&](std::stop_token token) { return engine.acquire(req, std::move(token)); }, req.wait > Millis{0},
                 std::move(stop), [&](const AcquireResult& r) {
                   py::gil_scoped_release nogil;
                   try {
                     engine.release(req.ns, r.grant.id, r.grant.token);
                   } catch (...) {  // the lease ends on its own
                   }
                 });
}

AcquireResult convert_guarded(LockEngine& engine, const ConvertRequest& req, std::stop_source stop) {
  return guarded([&](std::stop_token token) { return engine.convert(req, std::move(token)); }, req.wait > Millis{0},
                 std::move(stop), [](const AcquireResult&) {});
}

// A matrix compiled at run time, shared by every engine made with it (the
// engine keeps it alive).
struct PyMatrix {
  std::shared_ptr<const matrix::MatrixFile> compiled;
  const MatrixTable& table() const { return compiled->table(); }
};

// An engine and what it must not outlive. After os.fork() the C++ engine
// sees to itself: a Redis engine makes new connections in the child, an
// embedded one refuses with BackendError (docs/python.md#fork).

const MatrixTable* table_of(const std::shared_ptr<PyMatrix>& m) { return m ? &m->table() : nullptr; }

// A Python callable called from a C++ thread: the GIL is taken to call it
// and to drop it, and an exception it raises is reported as unraisable (it
// cannot propagate into the keeper's thread).
class PyCallback {
 public:
  explicit PyCallback(py::function fn) : fn_(new py::function(std::move(fn)), [](py::function* f) {
    py::gil_scoped_acquire gil;
    delete f;
  }) {}
  template <class... Args>
  void operator()(Args&&... args) const {
    py::gil_scoped_acquire gil;
    try {
      (*fn_)(std::forward<Args>(args)...);
    } catch (py::error_already_set& e) {
      e.discard_as_unraisable("pathlock lost-lease callback");
    }
  }

 private:
  std::shared_ptr<py::function> fn_;
};

// A LeaseKeeper with the engine it renews through kept alive.
struct PyKeeper {
  std::shared_ptr<PyEngine> engine;
  std::unique_ptr<LeaseKeeper> keeper;

  LeaseKeeper& get() {
    if (!keeper) throw InvalidRequest("LeaseKeeper: closed");
    return *keeper;
  }
  // Joins the keeper's thread without the GIL: a lost-lease callback in
  // flight needs it to finish.
  void close() {
    std::unique_ptr<LeaseKeeper> k = std::move(keeper);
    py::gil_scoped_release nogil;
    k.reset();
  }
  ~PyKeeper() {
    if (!keeper) return;
    if (PyGILState_Check()) {
      close();
    } else {
      keeper.reset();
    }
  }
};

std::string version() { return PATHLOCK_VERSION_STRING; }

// release and is_held: (ns, id, token) -> bool, without the GIL.
template <bool (LockEngine::*Method)(std::string_view, std::string_view, std::string_view)>
bool id_token_call(PyEngine& self, const std::string& ns, const std::string& id, const std::string& token) {
  py::gil_scoped_release nogil;
  return (self.get().*Method)(ns, id, token);
}

void register_matrix(py::module_& m) {
  py::class_<PyMatrix, std::shared_ptr<PyMatrix>>(m, "Matrix", "A compatibility matrix compiled at run time.")
      .def_static(
          "from_file",
          [](const py::handle& file) {
            // str or os.PathLike; a directory or a missing file is bad input.
            const std::string path = text_arg(py::module_::import("os").attr("fspath")(file), "path");
            if (std::filesystem::is_directory(path))
              throw InvalidRequest("Matrix.from_file: " + py_quoted(path) + " is a directory, not a matrix file");
            std::shared_ptr<const matrix::MatrixFile> compiled;
            {
              py::gil_scoped_release nogil;
              compiled = std::make_shared<const matrix::MatrixFile>(matrix::MatrixFile::load(path));
            }
            return std::make_shared<PyMatrix>(PyMatrix{std::move(compiled)});
          },
          py::arg("path"),
          "Reads and compiles a matrix JSON file (matrix/README.md). Raises MatrixError listing every problem.")
      .def_property_readonly("name", [](const PyMatrix& mx) { return mx.compiled->name(); })
      .def_property_readonly("fingerprint", [](const PyMatrix& mx) { return mx.compiled->fingerprint(); })
      .def_property_readonly(
          "operations",
          [](const PyMatrix& mx) {
            std::vector<std::string> ops;
            for (const auto& op : mx.compiled->ops()) ops.push_back(op.name);
            return ops;
          },
          "The operation names, in the matrix's order.");

  py::class_<std::stop_source>(m, "StopSource",
                               "Stops an acquire that waits (Engine.acquire(..., stop=source)) from any thread.")
      .def(py::init<>())
      .def("request_stop", [](std::stop_source& s) { return s.request_stop(); },
           "Stops the acquires given this source: each leaves the line and holds nothing. True the first time.")
      .def_property_readonly("stop_requested", &std::stop_source::stop_requested);

}

void register_engine_reads(EngineClass& c);

// Engine.blockers: an acquire's dry run, or with `converts` a conversion's.
BlockersPage engine_blockers(PyEngine& self, const std::string& ns, const std::string& op, const py::handle& targets,
                             long long limit, const std::optional<std::string>& converts, bool fair) {
  const std::vector<Target> t = to_targets(targets);
  const std::size_t n = to_limit(limit, "limit");
  py::gil_scoped_release nogil;
  if (!converts && !fair) throw InvalidRequest("fair=False goes with converts (the dry run of a conversion)");
  if (!converts) return self.get().blockers(ns, op, t, n);
  ConvertRequest conversion{ns, *converts, "", op, t};
  conversion.fair = fair;
  return self.get().blockers(conversion, n);
}

// Engine.convert (docs/design.md#conversion).
void register_convert(EngineClass& c) {
  c.def(
      "convert",
      [](PyEngine& self, const py::handle& ns, const Grant& lock, const py::handle& op, const py::handle& targets,
         double ttl, double wait, bool fair, const std::optional<std::string>& idempotency_key,
         const std::optional<std::stop_source>& stop) {
        ConvertRequest req = ConvertRequest::of(text_arg(ns, "ns"), lock, text_arg(op, "op"), to_targets(targets));
        req.ttl = ttl_arg(ttl);
        req.wait = wait_arg(wait);
        req.fair = fair;
        if (idempotency_key) req.idempotency_key = *idempotency_key;
        return convert_guarded(self.get(), req, stop.value_or(std::stop_source(std::nostopstate)));
      },
      py::arg("ns"), py::arg("lock"), py::arg("op"), py::arg("targets"), py::kw_only(), py::arg("ttl") = 30.0,
      py::arg("wait") = 0.0, py::arg("fair") = true, py::arg("idempotency_key") = py::none(),
      py::arg("stop") = py::none(),
      "Converts `lock` (a Grant: its id and token) to operation `op` on `targets` in one atomic step "
      "(docs/design.md#conversion): granted with the same id and token and a new fence, or refused with the lock "
      "exactly as it was (`conflict`, `would_deadlock`, `not_holder`). `wait`, `fair` and `stop` as acquire's; "
      "a stop or Ctrl-C that comes after the conversion was made does not undo it. Every backend converts.");
}

// The engine: acquire and the calls on one lock.
void register_engine_calls(py::module_& m) {
  EngineClass c(
      m, "Engine",
      "A lock engine (MemoryEngine or RedisEngine). Every method may be called from any thread; each releases "
      "the GIL while it works or waits.");
  c.def_readonly("backend", &PyEngine::backend, "'memory' or 'redis'.")
      .def(
          "acquire",
          [](PyEngine& self, const py::handle& ns, const py::handle& owner, const py::handle& op,
             const py::handle& targets, double ttl, double wait, bool fair, const std::optional<Grant>& reenter,
             const std::optional<std::string>& idempotency_key, const std::optional<std::stop_source>& stop) {
            LockRequest req{text_arg(ns, "ns"), text_arg(owner, "owner"), text_arg(op, "op"), to_targets(targets),
                            ttl_arg(ttl), wait_arg(wait), fair};
            if (reenter) req.reenter(*reenter);
            if (idempotency_key) req.idempotency_key = *idempotency_key;
            return acquire_guarded(self.get(), req, stop.value_or(std::stop_source(std::nostopstate)));
          },
          py::arg("ns"), py::arg("owner"), py::arg("op"), py::arg("targets"), py::kw_only(), py::arg("ttl") = 30.0,
          py::arg("wait") = 0.0, py::arg("fair") = true, py::arg("reenter") = py::none(),
          py::arg("idempotency_key") = py::none(), py::arg("stop") = py::none(),
          "Takes every target ({role: path} or [(role, path)]) of `op`, or none. Returns an AcquireResult: a grant, "
          "or the conflict that refused it. `wait` (seconds) > 0 waits for a refused request, without the GIL; "
          "Ctrl-C (any exception a signal handler raises) stops the wait and releases a grant that raced it. "
          "`stop` (a StopSource) stops the wait from another thread: the result is then `cancelled` and nothing "
          "is held. `reenter=grant` re-enters that lock (not_holder when it is gone); `idempotency_key` makes a "
          "retry return the same lock. Raises InvalidRequest for bad input, BackendError on backend failure.")
      .def(
          "release", &id_token_call<&LockEngine::release>, py::arg("ns"), py::arg("id"), py::arg("token"),
          "Drops one hold of lock `id`. False when no live lock has this id and token.")
      .def(
          "renew",
          [](PyEngine& self, const std::string& ns, const std::string& id, const std::string& token,
             std::optional<double> ttl) {
            std::optional<Millis> ms;
            if (ttl) ms = ttl_arg(*ttl);
            py::gil_scoped_release nogil;
            return self.get().renew(ns, id, token, ms);
          },
          py::arg("ns"), py::arg("id"), py::arg("token"), py::kw_only(), py::arg("ttl") = py::none(),
          "Extends the lease to now + ttl seconds (the lock's own TTL when None). False when the lock is gone.")
      .def(
          "is_held", &id_token_call<&LockEngine::is_held>, py::arg("ns"), py::arg("id"), py::arg("token"),
          "Am I still the holder? Read-only: for a storage write, next to the fence check.");
  register_engine_reads(c);
  register_convert(c);
  register_limits(m, c);
}

// The engine: listings, blockers, administration.
void register_engine_reads(EngineClass& c) {
  c.def(
          "list",
          [](PyEngine& self, const std::string& ns, const std::string& prefix) {
            py::gil_scoped_release nogil;
            return self.get().list(ns, prefix);
          },
          py::arg("ns"), py::arg("prefix") = "/", "The live locks with a target at or inside `prefix`, by fence.")
      .def(
          "list_page",
          [](PyEngine& self, const std::string& ns, const std::string& prefix, long long limit,
             const std::string& after) {
            const std::size_t n = to_limit(limit, "limit");
            py::gil_scoped_release nogil;
            return self.get().list_page(ns, prefix, n, after);
          },
          py::arg("ns"), py::arg("prefix") = "/", py::arg("limit") = 1000, py::arg("after") = "",
          "One page of list(ns, prefix): pass the page's `next` as `after` until it is ''.")
      .def(
          "blockers",
          &engine_blockers,
          py::arg("ns"), py::arg("op"), py::arg("targets"), py::arg("limit") = static_cast<long long>(kMaxBlockers),
          py::kw_only(), py::arg("converts") = py::none(), py::arg("fair") = true,
          "Why is this blocked? Every held lock and waiting request that would refuse `op` on `targets` now. "
          "Takes and changes nothing. With `converts` (a lock id): why a conversion of that lock to `op` on "
          "`targets` is refused, judged as convert() judges it (never the lock itself, nor a place in line it goes "
          "before); `fair=False` asks the held locks only (with `converts`; InvalidRequest without it).")
      .def(
          "waiters",
          [](PyEngine& self, const std::string& ns, const std::string& prefix, long long limit) {
            const std::size_t n = to_limit(limit, "limit");
            py::gil_scoped_release nogil;
            return self.get().waiters(ns, prefix, n);
          },
          py::arg("ns"), py::arg("prefix") = "/", py::arg("limit") = static_cast<long long>(kMaxWaiters),
          "The waiting requests with a place in line at or inside `prefix`, oldest first.")
      .def(
          "force_release",
          [](PyEngine& self, const std::string& ns, const std::string& id) {
            py::gil_scoped_release nogil;
            return self.get().force_release(ns, id);
          },
          py::arg("ns"), py::arg("id"), "Administrator's release: drops lock `id` whatever its holds and token.")
      .def_property_readonly(
          "operations",
          [](const PyEngine& self) {
            std::vector<std::string> ops;
            const MatrixTable& t = self.get().matrix();
            for (std::size_t i = 0; i < t.op_count; ++i) ops.emplace_back(t.ops[i].name);
            return ops;
          },
          "The operation names of the engine's matrix.");

}

void register_factories(py::module_& m) {
  m.def(
      "MemoryEngine",
      [](const std::shared_ptr<PyMatrix>& mx) {
        auto e = std::make_shared<PyEngine>();
        if (mx) e->matrix = mx->compiled;
        e->engine = make_memory_engine(MemoryOptions{table_of(mx), nullptr});
        e->backend = "memory";
        return e;
      },
      py::arg("matrix") = py::none(),
      "The embedded (in-process) engine; `matrix` a Matrix (None: the shipped cloud-drive matrix).");

#ifdef PATHLOCK_WITH_REDIS
  m.def(
      "RedisEngine",
      [](const std::string& url, const std::shared_ptr<PyMatrix>& mx, double connect_timeout,
         double command_timeout, long long pool_size, int replicas, const std::string& tls_ca_file,
         const std::string& tls_ca_dir, const std::string& tls_cert_file, const std::string& tls_key_file,
         const std::string& tls_server_name, const std::string& tls_min_version, bool tls_insecure_skip_verify) {
        if (pool_size < 1) throw InvalidRequest("pool_size: must be at least 1");
        RedisOptions o;
        o.matrix = table_of(mx);
        o.url = url;
        o.connect_timeout = to_millis(connect_timeout, "connect_timeout");
        o.command_timeout = to_millis(command_timeout, "command_timeout");
        o.pool_size = static_cast<std::size_t>(pool_size);
        o.replicas = replicas;
        o.tls = RedisTlsOptions{tls_ca_file,     tls_ca_dir,      tls_cert_file,           tls_key_file,
                                tls_server_name, tls_min_version, tls_insecure_skip_verify};
        auto e = std::make_shared<PyEngine>();
        if (mx) e->matrix = mx->compiled;
        e->backend = "redis";
        py::gil_scoped_release nogil;
        e->engine = make_redis_engine(o);
        return e;
      },
      py::arg("url") = "redis://127.0.0.1:6379", py::kw_only(), py::arg("matrix") = py::none(),
      py::arg("connect_timeout") = 2.0, py::arg("command_timeout") = 2.0, py::arg("pool_size") = 4,
      py::arg("replicas") = 0, py::arg("tls_ca_file") = "", py::arg("tls_ca_dir") = "",
      py::arg("tls_cert_file") = "", py::arg("tls_key_file") = "", py::arg("tls_server_name") = "",
      py::arg("tls_min_version") = "", py::arg("tls_insecure_skip_verify") = false,
      "The Redis engine (RedisOptions): redis://, rediss://, redis-sentinel://, rediss-sentinel:// URLs, one "
      "server or a Cluster (docs/operations.md). Connects once: raises InvalidRequest for bad options, "
      "BackendError when the server cannot be used.");
#endif

}

void register_keeper(py::module_& m) {
  py::class_<Lease, std::shared_ptr<Lease>>(m, "Lease", "One lease kept alive by a LeaseKeeper.")
      .def_property_readonly("ns", &Lease::ns)
      .def_property_readonly("id", &Lease::id)
      .def_property_readonly("lost", &Lease::lost, "True once the lease is known lost; never goes back.")
      .def_property_readonly("renewals", &Lease::renewals, "Successful renewals so far.");

  py::class_<PyKeeper, std::shared_ptr<PyKeeper>>(
      m, "LeaseKeeper",
      "Renews kept leases on a background thread and reports a lost one. Close it (or use it as a context "
      "manager) when done.")
      .def(py::init([](std::shared_ptr<PyEngine> engine, double renew_after, double retry_interval) {
             if (!(renew_after > 0.0 && renew_after < 1.0))
               throw InvalidRequest("renew_after: must be between 0 and 1 (a fraction of the TTL)");
             KeeperOptions o{renew_after, to_millis(retry_interval, "retry_interval")};
             auto k = std::make_shared<PyKeeper>();
             k->engine = std::move(engine);
             k->keeper = std::make_unique<LeaseKeeper>(*k->engine->engine, o);
             return k;
           }),
           py::arg("engine"), py::kw_only(), py::arg("renew_after") = 1.0 / 3.0, py::arg("retry_interval") = 0.1)
      .def(
          "keep",
          [](PyKeeper& self, const std::string& ns, const Grant& grant, double ttl, std::optional<py::function> on_lost) {
            std::function<void(const Lease&)> cb;
            if (on_lost) {
              PyCallback call(std::move(*on_lost));
              cb = [call](const Lease& lease) { call(lease.id()); };
            }
            return self.get().keep(ns, grant, ttl_arg(ttl), std::move(cb));
          },
          py::arg("ns"), py::arg("grant"), py::arg("ttl"), py::arg("on_lost") = py::none(),
          "Keeps `grant`'s lease (TTL `ttl` seconds) alive. `on_lost(lock_id)` is called once, on the keeper's "
          "thread (with the GIL), when the lease is lost.")
      .def(
          "stop",
          [](PyKeeper& self, Lease& lease) {
            LeaseKeeper& k = self.get();
            py::gil_scoped_release nogil;
            k.stop(lease);
          },
          py::arg("lease"), "Stops renewing `lease` (waits for a renewal in flight). Stop before you release.")
      .def("close", &PyKeeper::close, "Stops every lease and joins the keeper's thread.")
      .def("__enter__", [](const std::shared_ptr<PyKeeper>& self) { return self; })
      .def("__exit__", [](PyKeeper& self, const py::args&) { self.close(); });

  m.def(
      "normalize_path",
      [](const std::string& path) { return normalize_path(path); }, py::arg("path"),
      "The canonical form of an absolute path, as every engine stores it; raises InvalidRequest for a bad one.");
}

}  // namespace

PYBIND11_MODULE(_pathlock, m) {
  m.doc() = "pathlock: path locks for file-management services (the C++ engine, bound with pybind11).";
  m.attr("__version__") = version();
  register_errors(m);
  register_results(m);
  register_listings(m);
  register_matrix(m);
  register_engine_calls(m);
  register_factories(m);
  register_keeper(m);
}
