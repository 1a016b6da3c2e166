// The PostgreSQL backend's operator reads (pathlock/admin.hpp: Inspector):
// read-only queries of the schema's tables (src/postgres/schema.sql), so a
// role with SELECT on them (and USAGE on the schema) suffices. A namespace
// exists once it has a row in pathlock.namespaces; its matrices in use are
// the fingerprints of its live locks and places in line (the schema records
// no matrix names: name and version stay empty, and there are no tags).
#include <pathlock/admin.hpp>
#include <pathlock/postgres.hpp>

#include "postgres/connection.hpp"
#include "postgres/values.hpp"


namespace pathlock::postgres {
namespace {

class PostgresInspector final : public admin::Inspector {
 public:
  explicit PostgresInspector(const PostgresOptions& o) : timeout_(o.command_timeout), c_(o.url, o.connect_timeout) {}

  void for_each_namespace(const std::function<bool(const std::string&)>& each) override {
    std::string after;
    while (true) {  // pages of 1000, in name order
      const Result r = c_.exec("SELECT ns FROM pathlock.namespaces WHERE ns > $1 ORDER BY ns LIMIT 1000", {after},
                               timeout_);
      const int rows = PQntuples(r.get());
      for (int i = 0; i < rows; ++i)
        if (!each(after = text(r.get(), i, 0))) return;
      if (rows < 1000) return;
    }
  }

  bool exists(std::string_view ns) override {
    return PQntuples(
               c_.exec("SELECT 1 FROM pathlock.namespaces WHERE ns = $1", {std::string(ns)}, timeout_).get()) > 0;
  }

  admin::NamespaceStatus status(std::string_view ns) override {
    admin::NamespaceStatus out;
    out.ns = std::string(ns);
    // The row's fence is the namespace's first (functions version 7: grants
    // no longer move it); the largest of its locks' fences is the news.
    const Result row = c_.exec("SELECT greatest(n.fence, (SELECT max(l.fence) FROM pathlock.locks l WHERE l.ns = n.ns)), "
                               "(SELECT max(layout) FROM pathlock.meta) FROM pathlock.namespaces n WHERE n.ns = $1",
                               {out.ns}, timeout_);
    if (PQntuples(row.get()) == 0) return out;
    out.exists = true;
    out.fence = static_cast<std::uint64_t>(number(row.get(), 0, 0));
    if (!is_null(row.get(), 0, 1)) out.layout = static_cast<int>(number(row.get(), 0, 1));
    // Live only: by the server's clock, as the engine's functions read it.
    const Result m = c_.exec(
        "SELECT fp, sum(l)::bigint, sum(w)::bigint FROM ("
        "SELECT fp, 1 AS l, 0 AS w FROM pathlock.locks WHERE ns = $1 AND expires > pathlock.now_ms() UNION ALL "
        "SELECT fp, 0, 1 FROM pathlock.waiters WHERE ns = $1 AND expires > pathlock.now_ms()) live "
        "GROUP BY fp ORDER BY fp",
        {out.ns}, timeout_);
    for (int i = 0; i < PQntuples(m.get()); ++i)
      out.matrices.push_back({0, text(m.get(), i, 0), "", "", static_cast<std::uint64_t>(number(m.get(), i, 1)),
                              static_cast<std::uint64_t>(number(m.get(), i, 2))});
    return out;
  }

 private:
  Millis timeout_;
  Connection c_;
};

}  // namespace

std::unique_ptr<admin::Inspector> make_postgres_inspector(const PostgresOptions& options) {
  return std::make_unique<PostgresInspector>(options);
}

}  // namespace pathlock::postgres
