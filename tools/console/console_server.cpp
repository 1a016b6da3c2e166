// pathlock console: the HTTP server and its JSON API (console_server.hpp,
// docs/console.md#api).
#include "console_server.hpp"

#include "api.hpp"
#include "json_codec.hpp"

#include <pathlock/admin.hpp>
#include "console_assets.hpp"  // generated: the embedded pages (tools/console/embed.cmake)
#include "scrape.hpp"

#include "http_guard.hpp"  // src/metrics/http: the one private header programs see

#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

namespace pathlock::console {
namespace {

namespace codec = json_codec;

std::size_t number_param(const httplib::Request& req, const char* name, std::size_t fallback, std::size_t max) {
  if (!req.has_param(name)) return fallback;
  const std::string v = req.get_param_value(name);
  std::size_t n = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size() || n < 1 || n > max)
    throw BadInput(fmt::format("{} must be a whole number from 1 to {}", name, max));
  return n;
}

}  // namespace

struct ConsoleServer::Impl {
  LockEngine& engine;
  ConsoleOptions opt;
  std::unique_ptr<http::GuardedServer> server;
  std::mutex mu;
  std::condition_variable cv;
  bool stopped = false;
  std::unique_ptr<Scraper> scraper;  // null: no --scrape

  Impl(LockEngine& e, ConsoleOptions o) : engine(e), opt(std::move(o)) {
    http::Limits limits;
    limits.max_connections = opt.max_connections;
    limits.request_deadline = opt.request_deadline;
    limits.max_body_bytes = std::size_t{4} << 20;  // matrix text, twice per call
    server = std::make_unique<http::GuardedServer>(http::GuardOptions{
        .what = "console", .listen = opt.listen, .allowed_hosts = opt.allowed_hosts, .limits = limits});
    if (!opt.scrape.empty())
      scraper = std::make_unique<Scraper>(ScrapeOptions{.urls = opt.scrape, .every = opt.scrape_every});
  }

  void log(LogLevel level, const std::string& message, const std::vector<LogField>& fields) const {
    if (opt.log)
      opt.log(level, message, fields);
    else
      log_to_stderr(level, message, fields);
  }

  // The namespace list, read anew at most every 2 s (on Redis it is a SCAN
  // of the keyspace, and every API call checks its namespace against it).
  mutable std::mutex ns_mu;
  mutable std::vector<std::string> ns_cache;
  mutable std::chrono::steady_clock::time_point ns_read{};
  mutable bool ns_valid = false;
  std::vector<std::string> namespaces() const {
    if (!opt.namespaces) return {};
    std::lock_guard lock(ns_mu);
    const auto now = std::chrono::steady_clock::now();
    if (!ns_valid || now - ns_read > std::chrono::seconds(2)) {
      ns_cache = opt.namespaces();
      ns_read = now;
      ns_valid = true;
    }
    return ns_cache;
  }

  // The namespace parameter: required, and one the console lists.
  std::string ns_param(const httplib::Request& req) const {
    if (!req.has_param("ns")) throw BadInput("missing parameter ns (the namespace)");
    const std::string ns = req.get_param_value("ns");
    const auto all = namespaces();
    if (!std::binary_search(all.begin(), all.end(), ns)) throw BadInput(fmt::format("unknown namespace '{}'", ns));
    return ns;
  }

  std::string prefix_param(const httplib::Request& req) const {
    return req.has_param("prefix") ? req.get_param_value("prefix") : std::string("/");
  }

  json info() const {
    const MatrixTable& m = engine.matrix();
    json ops = json::array();
    for (std::size_t i = 0; i < m.op_count; ++i) {
      json roles = json::array();
      for (std::size_t r = 0; r < m.ops[i].role_count; ++r) roles.push_back(std::string(m.ops[i].roles[r]));
      ops.push_back({{"name", std::string(m.ops[i].name)}, {"label", std::string(m.ops[i].label)}, {"roles", roles}});
    }
    return {{"backend", opt.backend},
            {"admin", opt.admin},
            {"matrix", {{"name", std::string(m.name)}, {"version", std::string(m.version)}, {"ops", ops}}}};
  }

  json namespaces_page(const httplib::Request& req) const {
    const std::size_t limit = number_param(req, "limit", 100, 1000);
    const std::string after = req.has_param("after") ? req.get_param_value("after") : "";
    const auto all = namespaces();
    auto it = after.empty() ? all.begin() : std::upper_bound(all.begin(), all.end(), after);
    json page = json::array();
    for (; it != all.end() && page.size() < limit; ++it) page.push_back(*it);
    // Each listed namespace's use against its limits (one read-only call
    // each), for the list's badges; left out where the backend has none.
    json use = json::object();
    for (const json& ns : page) {
      try {
        use[ns.get<std::string>()] = codec::limits_status(ns.get<std::string>(), engine.limits(ns.get<std::string>()));
      } catch (const BackendError&) {
      }
    }
    return {{"namespaces", page}, {"next", it == all.end() ? "" : page.back().get<std::string>()}, {"limits", use}};
  }

  // A namespace's limits and its use of them (LockEngine::limits).
  json limits_of(const httplib::Request& req) const {
    const std::string ns = ns_param(req);
    return codec::limits_status(ns, engine.limits(ns));
  }

  json locks_page(const httplib::Request& req) const {
    const std::string ns = ns_param(req);
    const std::size_t limit = number_param(req, "limit", 500, kMaxListLimit);
    const std::string after = req.has_param("after") ? req.get_param_value("after") : "";
    const ListPage page = engine.list_page(ns, prefix_param(req), limit, after);
    json locks = json::array();
    for (const LockInfo& l : page.locks) locks.push_back(codec::lock(l));
    return {{"locks", locks}, {"next", page.next}};
  }

  // Each waiter with the held locks and older waiters that refuse it now
  // (blockers() of its own request), so the page can draw it beside them.
  json waiters_list(const httplib::Request& req) const {
    const std::string ns = ns_param(req);
    const std::size_t limit = number_param(req, "limit", 200, kMaxWaiters);
    json out = json::array();
    for (const WaiterInfo& w : engine.waiters(ns, prefix_param(req), limit)) {
      json by = json::array();
      // A waiting conversion's are its dry run's: never the lock it converts,
      // nor a place that lock refuses (docs/design.md#conversion).
      const BlockersPage page = w.converts.empty()
                                    ? engine.blockers(ns, w.op, w.targets, 20)
                                    : engine.blockers(ConvertRequest{ns, w.converts, "", w.op, w.targets}, 20);
      for (const Blocker& b : page.blockers)
        // Not itself, nor a younger waiter (behind it in line: no blocker
        // of a request already waiting, though of a new one like it).
        if (b.id != w.id && !(b.queued && b.waited <= w.waited)) by.push_back(codec::blocker(b));
      json row = codec::waiter(w);
      row["blocked_by"] = std::move(by);
      out.push_back(std::move(row));
    }
    return {{"waiters", out}};
  }

  // "Why is this blocked": a dry run (blockers()), never an acquire. Its
  // first blocker counts as a refusal in the console's metrics, the way an
  // engine counts a refused acquire by its first refusal.
  json why(const httplib::Request& req) const {
    const std::string ns = ns_param(req);
    if (!req.has_param("op")) throw BadInput("missing parameter op (the operation)");
    const std::string op = req.get_param_value("op");
    const MatrixTable& m = engine.matrix();
    const int op_i = m.op_index(op);
    if (op_i < 0) throw BadInput(fmt::format("unknown operation '{}'", op));
    const OpInfo& info = m.ops[static_cast<std::size_t>(op_i)];
    const std::size_t n = req.get_param_value_count("path");
    if (n != info.role_count)
      throw BadInput(fmt::format("operation '{}' takes {} path(s), got {}", op, int(info.role_count), n));
    std::vector<std::string> paths;
    for (std::size_t r = 0; r < n; ++r) paths.push_back(req.get_param_value("path", r));
    // The request asked about is never its own blocker (admin::why).
    const admin::WhyAnswer page = admin::why(engine, ns, op, paths, number_param(req, "limit", 100, kMaxBlockers));
    if (opt.metrics && !page.blockers.empty()) {
      const Blocker& b = page.blockers.front().blocker;
      const int held = m.op_index(b.op);
      if (held >= 0)
        opt.metrics->count_refusal(op_i, held, b.queued ? kRefusalQueued : static_cast<std::size_t>(b.relation));
    }
    json list = json::array();
    for (const admin::WhyBlocker& b : page.blockers) list.push_back(codec::blocker(b.blocker));
    return {{"blockers", list}, {"truncated", page.truncated}};
  }

  // The refusal grid (requested op x held op, summed over relations) over
  // the matrix (which relations refuse each pair): the scraped engines'
  // counts (scrape.hpp), or the console's own when it scrapes none.
  json grid() const {
    const MatrixTable& m = engine.matrix();
    json ops = json::array(), cells = json::array(), rules = json::array();
    const MetricsSnapshot snap = opt.metrics && !scraper ? opt.metrics->snapshot() : MetricsSnapshot{};
    for (std::size_t i = 0; i < m.op_count; ++i) {
      ops.push_back({{"name", std::string(m.ops[i].name)}, {"label", std::string(m.ops[i].label)}});
      json row = json::array(), rule_row = json::array();
      for (std::size_t j = 0; j < m.op_count; ++j) {
        std::uint64_t count = 0;
        for (std::size_t k = 0; k < kRefusalKindCount; ++k) count += snap.refused(m.ops[i].name, m.ops[j].name, k);
        row.push_back(count);
        json rels = json::array();
        for (std::size_t rel = 0; rel < kRelationCount; ++rel) {
          bool refuses = false;
          for (int rc = 0; rc < m.ops[i].role_count; ++rc)
            for (int hc = 0; hc < m.ops[j].role_count; ++hc)
              refuses = refuses || m.refuses(static_cast<Relation>(rel), m.ops[j].first_code + hc, m.ops[i].first_code + rc);
          if (refuses) rels.push_back(std::string(relation_name(static_cast<Relation>(rel))));
        }
        rule_row.push_back(rels);
      }
      cells.push_back(row);
      rules.push_back(rule_row);
    }
    json out = {{"ops", ops},
                {"refusals", cells},
                {"rules", rules},
                {"counted_by", "console"},
                {"reporting", 0},
                {"sources", json::array()},
                {"unknown_ops", json::array()},
                {"unknown_ops_left_off", 0}};
    if (scraper) {
      out.update(scraped_grid_json(scraper->sources(opt.scrape_fresh, std::chrono::milliseconds(1500)), m));
      out["counted_by"] = "sources";
    }
    return out;
  }

  void warn_if_exposed() const {
    if (!opt.admin || http::is_loopback(server->host())) return;
    log(LogLevel::warning,
        fmt::format("console: listening on {}, beyond loopback, with --admin: whoever reaches this port may "
                    "force-release locks; the console has no login (put it behind one, docs/console.md)",
                    admin::log_escape(server->host())),
        {{"event", "admin_beyond_loopback"}, {"listen", server->host()}});
  }

  // The audit line names the request's values escaped (log_escape): an id
  // or address cannot write a line or a terminal sequence of its own.
  json force_release(const httplib::Request& req) const {
    const std::string ns = ns_param(req);
    if (!req.has_param("id")) throw BadInput("missing parameter id (the lock)");
    const std::string id = req.get_param_value("id");
    admin::check_lock_id(id);
    const bool released = engine.force_release(ns, id);
    log(LogLevel::warning,
        fmt::format("console: force-release of lock {} in namespace {} from {}: {}", id, admin::log_escape(ns),
                    admin::log_escape(req.remote_addr), released ? "released" : "no such live lock"),
        {{"event", "force_release"}, {"namespace", ns}, {"id", id}, {"client", req.remote_addr},
         {"released", released ? "true" : "false"}});
    return {{"released", released}, {"id", id}};
  }
};


ConsoleServer::ConsoleServer(LockEngine& engine, ConsoleOptions options)
    : impl_(std::make_unique<Impl>(engine, std::move(options))) {
  Impl& m = *impl_;
  http::GuardedServer& s = *m.server;
  m.warn_if_exposed();

  s.set_default_headers({{"Content-Security-Policy",
                          "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
                          "img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"},
                         {"X-Content-Type-Options", "nosniff"},
                         {"Referrer-Policy", "no-referrer"},
                         {"Cache-Control", "no-store"}});
  // After the server's Host and Origin check: read-only unless --admin; a
  // state-changing request must also carry the console's header (no
  // cross-site form can).
  s.before_routing([&m](const httplib::Request& req, httplib::Response& res) {
    if (req.method == "GET" || req.method == "HEAD") return httplib::Server::HandlerResponse::Unhandled;
    // The matrix editor's calls compute on the text they carry and change nothing.
    const bool computation = req.path.rfind("/api/matrix/", 0) == 0;
    if (!m.opt.admin && !computation) {
      send_json(res, {{"error", "this console is read-only (start it with --admin to force-release)"}}, 403);
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!req.has_header("X-Pathlock-Console")) {
      send_json(res, {{"error", "missing header X-Pathlock-Console"}}, 403);
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });

  for (const Asset& a : assets()) {
    const std::string path = a.name == "index.html" ? "/" : "/" + std::string(a.name);
    s.Get(path, [a](const httplib::Request&, httplib::Response& res) {
      res.set_content(std::string(a.data), std::string(a.type));
    });
  }
  s.Get("/metrics", [&m](const httplib::Request&, httplib::Response& res) {
    res.set_content(m.opt.metrics ? m.opt.metrics->prometheus() : "", "text/plain; version=0.0.4; charset=utf-8");
  });
  s.Get("/api/info", api([&m](const httplib::Request&) { return m.info(); }));
  s.Get("/api/namespaces", api([&m](const httplib::Request& r) { return m.namespaces_page(r); }));
  s.Get("/api/locks", api([&m](const httplib::Request& r) { return m.locks_page(r); }));
  s.Get("/api/waiters", api([&m](const httplib::Request& r) { return m.waiters_list(r); }));
  s.Get("/api/limits", api([&m](const httplib::Request& r) { return m.limits_of(r); }));
  s.Get("/api/why", api([&m](const httplib::Request& r) { return m.why(r); }));
  s.Get("/api/grid", api([&m](const httplib::Request&) { return m.grid(); }));
  add_matrix_editor(s, m.opt.matrix_file);
  if (m.opt.admin)
    s.Post("/api/force-release", api([&m](const httplib::Request& r) { return m.force_release(r); }));
  // Every refusal in JSON, in words (the server's own refusals, 421 and
  // 403, carry theirs as text: kept).
  s.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty())
      send_json(res, {{"error", fmt::format("HTTP {}: {}", res.status, http::status_text(res.status))}}, res.status);
  });
  s.start();
}

ConsoleServer::~ConsoleServer() { stop(); }

int ConsoleServer::port() const { return impl_->server->port(); }
std::string ConsoleServer::url() const { return impl_->server->base_url() + "/"; }

void ConsoleServer::wait() {
  std::unique_lock lock(impl_->mu);
  impl_->cv.wait(lock, [&] { return impl_->stopped; });
}

void ConsoleServer::stop() {
  impl_->server->stop();
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopped = true;
  }
  impl_->cv.notify_all();
}

}  // namespace pathlock::console
