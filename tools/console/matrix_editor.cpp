// The matrix editor's API (matrix_editor.hpp): pathlock's matrix code
// answering for the page.
#include "matrix_editor.hpp"

#include "api.hpp"

#include <pathlock/matrix.hpp>
#include <pathlock/memory.hpp>

#include <fmt/format.h>

#include <map>
#include <optional>
#include <cctype>
#include <sstream>

namespace pathlock::console {
namespace {

using matrix::MatrixError;
using matrix::MatrixFile;

constexpr std::size_t kMaxScenarioSteps = 100;

json body_of(const httplib::Request& req) {
  json j = json::parse(req.body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw BadInput("the request body must be a JSON object");
  return j;
}

std::string text_field(const json& body, const char* name, std::optional<std::string> fallback = std::nullopt) {
  const auto it = body.find(name);
  if (it == body.end() && fallback) return *fallback;
  if (it == body.end() || !it->is_string()) throw BadInput(fmt::format("missing text field \"{}\"", name));
  return it->get<std::string>();
}

// The edited file's name, which starts every problem line: a file name.
std::string name_field(const json& body) {
  const std::string name = text_field(body, "name", "edited.json");
  if (name.empty() || name.size() > 200 || name.find_first_of("\n\r") != std::string::npos)
    throw BadInput("\"name\" must be a file name of 1 to 200 bytes on one line");
  return name;
}

std::vector<std::string> list_field(const json& body, const char* name) {
  std::vector<std::string> out;
  const auto it = body.find(name);
  if (it == body.end()) return out;
  if (!it->is_array()) throw BadInput(fmt::format("\"{}\" must be a list of text", name));
  for (const json& v : *it) {
    if (!v.is_string()) throw BadInput(fmt::format("\"{}\" must be a list of text", name));
    out.push_back(v.get<std::string>());
  }
  return out;
}

// A problem, warning or diff line with the grid row ("op"), column
// ("cell") and held role ("role") it names, as the matrix code located it
// (never read back from the text), so the page can link it to its cell.
json located(const matrix::Problem& p) {
  json j{{"text", p.text}, {"severity", matrix::severity_name(p.severity)}};
  if (!p.operation.empty()) j["op"] = p.operation;
  if (!p.cell.empty()) j["cell"] = p.cell;
  if (!p.role.empty()) j["role"] = p.role;
  return j;
}

json located_lines(const std::vector<matrix::Problem>& lines) {
  json a = json::array();
  for (const matrix::Problem& l : lines) a.push_back(located(l));
  return a;
}

// Parses, or collects every problem into `problems`.
std::optional<MatrixFile> parse(const std::string& text, const std::string& source, json& problems) {
  try {
    return MatrixFile::parse(text, source);
  } catch (const MatrixError& e) {
    problems = located_lines(e.details());
    return std::nullopt;
  }
}

json ops_json(const MatrixFile& m) {
  json ops = json::array();
  for (const matrix::OpView& op : m.ops()) {
    json roles = json::array();
    for (const matrix::RoleView& r : op.roles) roles.push_back({{"role", r.name}, {"symbols", r.symbols}});
    ops.push_back({{"name", op.name}, {"label", op.label}, {"example", op.example}, {"roles", roles}});
  }
  return ops;
}

// One cell: its notation (pieces), its words, colour, marks, explanation,
// and every verdict [held role][requested role][relation] with its origin.
json cell_json(const matrix::CellSummary& c) {
  json pieces = json::array();
  for (const matrix::PieceView& p : c.pieces) pieces.push_back({{"kind", p.kind}, {"text", p.text}});
  json credits = json::array();
  for (const auto& by_req : c.credits) {
    json row = json::array();
    for (const auto& by_rel : by_req) {
      json rels = json::array();
      for (const matrix::CreditView& cr : by_rel) rels.push_back({{"origin", cr.origin}, {"decision", cr.decision}});
      row.push_back(rels);
    }
    credits.push_back(row);
  }
  return {{"tone", c.tone},       {"asymmetric", c.asymmetric}, {"review", c.review},    {"explain", c.explain},
          {"pieces", pieces},     {"words", c.words},           {"verdicts", c.verdicts}, {"credits", credits}};
}

// The grid as the page draws and edits it.
json grid_json(const MatrixFile& m) {
  json rows = json::array();
  const int n = static_cast<int>(m.ops().size());
  for (int h = 0; h < n; ++h) {
    json row = json::array();
    for (int r = 0; r < n; ++r) row.push_back(cell_json(m.cell(h, r)));
    rows.push_back(row);
  }
  json relations = json::array();
  for (std::size_t rel = 0; rel < kRelationCount; ++rel)
    relations.push_back(std::string(relation_name(static_cast<Relation>(rel))));
  json legend = json::array();
  for (const matrix::LegendLine& e : matrix::legend_lines())
    legend.push_back({{"kind", e.sample.kind}, {"sample", e.sample.text}, {"meaning", e.meaning}});
  return {{"name", m.name()}, {"version", m.version()},   {"fingerprint", m.fingerprint()}, {"ops", ops_json(m)},
          {"cells", rows},    {"relations", relations}, {"legend", legend}};
}

json check(const json& body) {
  const std::string name = name_field(body);
  json out{{"problems", json::array()}, {"warnings", json::array()}, {"diff", json::array()}};
  json base_problems = json::array();
  const auto base = parse(text_field(body, "base"), "loaded matrix", base_problems);
  const auto edited = parse(text_field(body, "edited"), name, out["problems"]);
  out["valid"] = edited.has_value();
  out["base_problems"] = base_problems;
  if (!edited) return out;
  out["warnings"] = located_lines(matrix::warnings(*edited));
  out["grid"] = grid_json(*edited);
  if (!base) return out;
  if (const auto vp = matrix::version_problem(*base, *edited)) out["version_problem"] = *vp;
  out["diff"] = located_lines(matrix::diff_lines(*base, *edited));
  return out;
}

// One value of the edited text replaced in place: {text, path: [keys], value}
// (value: any JSON, written with its keys in the order sent). Answers {text};
// the rest of the text is kept byte for byte, so a downloaded file differs
// from the opened one only where edited.
json set_value(const httplib::Request& req) {
  const json body = body_of(req);
  const std::vector<std::string> path = list_field(body, "path");
  if (!body.contains("value")) throw BadInput("missing field \"value\"");
  const std::string value = nlohmann::ordered_json::parse(req.body).at("value").dump();
  try {
    return {{"text", matrix::replace_value(text_field(body, "text"), path, value, name_field(body))}};
  } catch (const MatrixError& e) {
    throw BadInput(e.what());
  }
}

json scaffold(const json& body) {
  matrix::ScaffoldRequest r;
  r.op = text_field(body, "op");
  r.roles = list_field(body, "roles");
  r.label = text_field(body, "label", "");
  r.example = text_field(body, "example", "");
  // One list of symbols per role ([["A"], ["B"]]); none: scaffold's defaults.
  if (const auto it = body.find("symbols"); it != body.end() && !it->empty()) {
    if (!it->is_array()) throw BadInput("\"symbols\" must be a list with one list of symbols per role");
    for (const json& role : *it) {
      if (!role.is_array()) throw BadInput("\"symbols\" must be a list with one list of symbols per role");
      std::vector<std::string> symbols;
      for (const json& s : role) {
        if (!s.is_string()) throw BadInput("a symbol must be text");
        symbols.push_back(s.get<std::string>());
      }
      r.symbols.push_back(std::move(symbols));
    }
  }
  const std::string name = name_field(body);
  try {
    return {{"text", matrix::scaffold(text_field(body, "text"), name, r)}};
  } catch (const MatrixError& e) {
    std::string all;
    for (const std::string& p : e.problems()) all += (all.empty() ? "" : "\n") + p;
    throw BadInput(all);
  }
}

// ---- try it -----------------------------------------------------------------

// One line of a scenario: "OWNER OP PATH [PATH...]" or "release STEP".
struct Step {
  std::string text;
  std::size_t release = 0;  // 1-based step to release; 0: an acquire
  std::string owner, op;
  std::vector<std::string> paths;
};

std::vector<Step> parse_scenario(const std::string& text) {
  std::vector<Step> steps;
  std::istringstream in(text);
  std::size_t line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string x; words >> x;) w.push_back(x);
    if (w.empty() || w.front().front() == '#') continue;
    if (steps.size() == kMaxScenarioSteps)
      throw BadInput(fmt::format("a scenario has at most {} requests", kMaxScenarioSteps));
    Step s{line, 0, {}, {}, {}};
    if (w.front() == "release") {
      std::size_t n = 0;
      const bool number = w.size() == 2 && !w[1].empty() &&
                          w[1].find_first_not_of("0123456789") == std::string::npos && w[1].size() < 4;
      if (number) n = std::stoul(w[1]);
      if (!number || n < 1 || n > steps.size())
        throw BadInput(fmt::format("line {}: write \"release STEP\" with the number of an earlier step", line_no));
      s.release = n;
    } else {
      if (w.size() < 3) throw BadInput(fmt::format("line {}: write \"OWNER OPERATION PATH [PATH]\"", line_no));
      s.owner = w[0];
      s.op = w[1];
      s.paths.assign(w.begin() + 2, w.end());
    }
    steps.push_back(std::move(s));
  }
  if (steps.empty()) throw BadInput("the scenario is empty: one request a line, \"OWNER OPERATION PATH [PATH]\"");
  return steps;
}

// Why `c` refused step `step`: who holds what, how the paths relate, and
// which rule of the matrix says so (its origin and decision).
std::string refusal_reason(const MatrixFile& m, const Conflict& c, const Step& step, std::size_t holder_step) {
  std::string rule_words;
  const MatrixTable& t = m.table();
  const int held_op = t.op_index(c.op), req_op = t.op_index(step.op);
  if (held_op >= 0 && req_op >= 0) {
    const int hc = t.code_of(held_op, c.role), rc = t.code_of(req_op, c.requested_role);
    if (hc >= 0 && rc >= 0) rule_words = "; rule: " + matrix::origin_phrase(m, hc, rc, c.relation);
  }
  return fmt::format("step {} ({} {}) holds {} {}; {} {} is {}: {}.{} refuses {}.{}{}", holder_step, c.owner, c.op,
                     c.role, c.path, c.requested_role, c.requested_path, matrix::relation_phrase(c.relation), c.op,
                     c.role, step.op, c.requested_role, rule_words);
}

json run_scenario(const std::string& text, const std::string& source, const std::vector<Step>& steps) {
  std::optional<MatrixFile> compiled;
  try {
    compiled = MatrixFile::parse(text, source);
  } catch (const MatrixError& e) {
    return {{"error", fmt::format("{} does not compile: {}", source, e.problems().front())}};
  }
  const MatrixFile& m = *compiled;
  MemoryOptions o;
  o.matrix = &m.table();
  const auto engine = make_memory_engine(o);
  std::vector<std::optional<Grant>> grants(steps.size());
  std::map<std::string, std::size_t> step_of;  // lock id -> step (1-based)
  const std::vector<matrix::OpView> all_ops = m.ops();
  json results = json::array();
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    if (s.release) {
      const auto& g = grants[s.release - 1];
      const bool done = g && engine->release("try", g->id, g->token);
      results.push_back({{"outcome", done ? "released" : "error"},
                         {"reason", done ? fmt::format("step {}'s lock released", s.release)
                                         : fmt::format("step {} holds no lock", s.release)}});
      continue;
    }
    const int op = m.op_index(s.op);
    if (op < 0) {
      results.push_back({{"outcome", "error"}, {"reason", fmt::format("no operation '{}' in this matrix", s.op)}});
      continue;
    }
    const auto& roles = all_ops[static_cast<std::size_t>(op)].roles;
    if (roles.size() != s.paths.size()) {
      results.push_back(
          {{"outcome", "error"}, {"reason", fmt::format("{} takes {} path(s), got {}", s.op, roles.size(), s.paths.size())}});
      continue;
    }
    LockRequest r{.ns = "try", .owner = s.owner, .op = s.op, .targets = {}};
    for (std::size_t k = 0; k < roles.size(); ++k) r.targets.push_back({roles[k].name, s.paths[k]});
    try {
      const AcquireResult got = engine->acquire(r);
      if (got.granted()) {
        grants[i] = got.grant;
        step_of[got.grant.id] = i + 1;
        results.push_back({{"outcome", "granted"}, {"reason", ""}});
      } else {
        results.push_back({{"outcome", "refused"}, {"reason", refusal_reason(m, got.conflict, s, step_of[got.conflict.id])}});
      }
    } catch (const InvalidRequest& e) {
      results.push_back({{"outcome", "error"}, {"reason", e.what()}});
    }
  }
  return {{"results", results}};
}

json try_it(const json& body) {
  const std::vector<Step> steps = parse_scenario(text_field(body, "scenario"));
  json list = json::array();
  for (const Step& s : steps) list.push_back(s.text);
  return {{"steps", list},
          {"loaded", run_scenario(text_field(body, "base"), "loaded matrix", steps)},
          {"edited", run_scenario(text_field(body, "edited"), name_field(body), steps)}};
}

}  // namespace

void add_matrix_editor(httplib::Server& server, EditorOptions options) {
  server.Get("/api/matrix/loaded", api([o = std::move(options)](const httplib::Request&) {
               return json{{"name", o.name}, {"text", o.text}, {"error", o.error}};
             }));
  server.Post("/api/matrix/check", api([](const httplib::Request& r) { return check(body_of(r)); }));
  server.Post("/api/matrix/scaffold", api([](const httplib::Request& r) { return scaffold(body_of(r)); }));
  server.Post("/api/matrix/set", api([](const httplib::Request& r) { return set_value(r); }));
  server.Post("/api/matrix/try", api([](const httplib::Request& r) { return try_it(body_of(r)); }));
}

}  // namespace pathlock::console
