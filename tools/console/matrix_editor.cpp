// The matrix editor's API (matrix_editor.hpp): pathlock's matrix code
// answering for the page.
#include "matrix_editor.hpp"

#include "api.hpp"

#include "matrix/cells.hpp"
#include "matrix/diff.hpp"
#include "matrix/explain.hpp"
#include "matrix/lint.hpp"  // version_problem
#include "matrix/model.hpp"
#include "matrix/scaffold.hpp"
#include "matrix/table.hpp"
#include "matrix/text.hpp"

#include <pathlock/memory.hpp>

#include <fmt/format.h>

#include <map>
#include <optional>
#include <cctype>
#include <sstream>

namespace pathlock::console {
namespace {

using matrix::Matrix;
using matrix::MatrixError;

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

// The text between `start` and the next `end` after it in `line` ("" when
// either is missing). Linear: lines may be long (a file's keys are quoted in
// its problems), so no backtracking regex reads them.
std::string_view between(std::string_view line, std::string_view start, std::string_view end) {
  const std::size_t from = line.find(start);
  if (from == std::string_view::npos) return {};
  const std::size_t begin = from + start.size(), to = line.find(end, begin);
  return to == std::string_view::npos ? std::string_view{} : line.substr(begin, to - begin);
}

// The operation of the code "op.role" that ends just before `line[end]`.
std::string_view op_of_code_before(std::string_view line, std::size_t end) {
  std::size_t begin = end;
  while (begin > 0 && (std::isalnum(static_cast<unsigned char>(line[begin - 1])) || line[begin - 1] == '_' ||
                       line[begin - 1] == '.'))
    --begin;
  const std::string_view code = line.substr(begin, end - begin);
  return code.substr(0, code.find('.'));
}

// A message with the grid row ("op") and column ("cell") it names, so the
// page can link it to its cell. Lint, diff and warnings all name cells as
// "operation 'X', cell 'Y'" or "X.role held, Y.role requested".
json located(const std::string& line) {
  json j{{"text", line}};
  const std::string_view l = line;
  if (const std::size_t held = l.find(" held, "); held != std::string_view::npos) {
    const std::size_t req = l.find(" requested", held);
    if (req != std::string_view::npos) {
      const std::string_view op = op_of_code_before(l, held), cell = op_of_code_before(l, req);
      if (!op.empty() && !cell.empty()) {
        j["op"] = std::string(op);
        j["cell"] = std::string(cell);
        return j;
      }
    }
  }
  std::string_view op = between(l, "operation '", "'");
  if (op.empty()) op = between(l, "grid row '", "'");
  if (!op.empty()) j["op"] = std::string(op);
  if (const std::string_view cell = between(l, "cell '", "'"); !cell.empty()) j["cell"] = std::string(cell);
  return j;
}

json located_lines(const std::vector<std::string>& lines) {
  json a = json::array();
  for (const std::string& l : lines) a.push_back(located(l));
  return a;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

// Parses, or collects every problem into `problems`.
std::optional<Matrix> parse(const std::string& text, const std::string& source, json& problems) {
  try {
    return matrix::parse_matrix(text, source);
  } catch (const MatrixError& e) {
    problems = located_lines(e.problems());
    return std::nullopt;
  }
}

// The grid as the page draws and edits it: the operations with their roles
// and symbols, and per cell its labels by origin, colour, marks, the
// explanation, and the verdict of every (held role, requested role,
// relation), which the page edits and writes back as rules.
json grid_json(const Matrix& m) {
  json ops = json::array();
  for (const matrix::OpDef& op : m.ops) {
    json roles = json::array();
    for (const matrix::RoleDef& r : op.roles) roles.push_back({{"role", r.name}, {"symbols", r.symbols}});
    ops.push_back({{"name", op.name}, {"label", op.label}, {"example", op.example}, {"roles", roles}});
  }
  json rows = json::array();
  const auto views = matrix::cell_views(m);
  for (std::size_t h = 0; h < m.ops.size(); ++h) {
    json row = json::array();
    for (std::size_t r = 0; r < m.ops.size(); ++r) {
      const matrix::CellView& v = views[h][r];
      json pieces = json::array();  // the cell's text as every rendering spells it
      for (const matrix::CellPiece& p : v.pieces) pieces.push_back({{"kind", matrix::piece_kind_name(p.kind)}, {"text", p.text}});
      json verdicts = json::array();  // [held role][requested role][relation]
      for (std::size_t hr = 0; hr < m.ops[h].roles.size(); ++hr) {
        json by_req = json::array();
        for (std::size_t rr = 0; rr < m.ops[r].roles.size(); ++rr) {
          json by_rel = json::array();
          for (std::size_t rel = 0; rel < kRelationCount; ++rel)
            by_rel.push_back(matrix::verdict_name(m.verdict(m.code_of(static_cast<int>(h), static_cast<int>(hr)),
                                                            m.code_of(static_cast<int>(r), static_cast<int>(rr)),
                                                            static_cast<Relation>(rel))));
          by_req.push_back(by_rel);
        }
        verdicts.push_back(by_req);
      }
      row.push_back({{"tone", matrix::tone_name(v.tone)},
                     {"asymmetric", v.asymmetric},
                     {"review", v.review},
                     {"explain", v.explain},
                     {"pieces", pieces},
                     {"verdicts", verdicts}});
    }
    rows.push_back(row);
  }
  json relations = json::array();
  for (std::size_t rel = 0; rel < kRelationCount; ++rel)
    relations.push_back(std::string(relation_name(static_cast<Relation>(rel))));
  json legend = json::array();
  for (const matrix::LegendEntry& e : matrix::legend())
    legend.push_back({{"kind", matrix::piece_kind_name(e.sample.kind)}, {"sample", e.sample.text}, {"meaning", e.meaning}});
  return {{"name", m.name},     {"version", m.version},         {"fingerprint", m.fingerprint()}, {"ops", ops},
          {"cells", rows},      {"relations", relations},       {"legend", legend}};
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
  const matrix::MatrixDiff d = matrix::diff_matrices(*base, *edited);
  out["diff"] = located_lines(split_lines(matrix::diff_report(*base, *edited, d)));
  return out;
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
std::string refusal_reason(const Matrix& m, const Conflict& c, const Step& step, std::size_t holder_step) {
  std::string rule_words;
  const int held_op = m.op_index(c.op), req_op = m.op_index(step.op);
  if (held_op >= 0 && req_op >= 0) {
    int hr = 0, rr = 0;
    const auto& hroles = m.ops[static_cast<std::size_t>(held_op)].roles;
    const auto& rroles = m.ops[static_cast<std::size_t>(req_op)].roles;
    for (std::size_t i = 0; i < hroles.size(); ++i)
      if (hroles[i].name == c.role) hr = static_cast<int>(i);
    for (std::size_t i = 0; i < rroles.size(); ++i)
      if (rroles[i].name == c.requested_role) rr = static_cast<int>(i);
    const matrix::Rule& rule = m.rule(m.code_of(held_op, hr), m.code_of(req_op, rr));
    rule_words = "; rule: " + matrix::origin_phrase(rule);
  }
  return fmt::format("step {} ({} {}) holds {} {}; {} {} is {}: {}.{} refuses {}.{}{}", holder_step, c.owner, c.op,
                     c.role, c.path, c.requested_role, c.requested_path, matrix::relation_phrase(c.relation), c.op,
                     c.role, step.op, c.requested_role, rule_words);
}

json run_scenario(const std::string& text, const std::string& source, const std::vector<Step>& steps) {
  std::unique_ptr<matrix::CompiledMatrix> compiled;
  try {
    compiled = matrix::compile_matrix(text, source);
  } catch (const MatrixError& e) {
    return {{"error", fmt::format("{} does not compile: {}", source, e.problems().front())}};
  }
  const Matrix& m = compiled->model();
  MemoryOptions o;
  o.matrix = &compiled->table();
  const auto engine = make_memory_engine(o);
  std::vector<std::optional<Grant>> grants(steps.size());
  std::map<std::string, std::size_t> step_of;  // lock id -> step (1-based)
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
    const auto& roles = m.ops[static_cast<std::size_t>(op)].roles;
    if (roles.size() != s.paths.size()) {
      results.push_back(
          {{"outcome", "error"}, {"reason", fmt::format("{} takes {} path(s), got {}", s.op, roles.size(), s.paths.size())}});
      continue;
    }
    LockRequest r{.ns = "try", .owner = s.owner, .op = s.op, .targets = {}};
    for (std::size_t k = 0; k < roles.size(); ++k) r.targets.push_back({roles[k].name, s.paths[k]});
    try {
      const AcquireResult got = engine->acquire(r);
      if (got.granted) {
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
  server.Post("/api/matrix/try", api([](const httplib::Request& r) { return try_it(body_of(r)); }));
}

}  // namespace pathlock::console
