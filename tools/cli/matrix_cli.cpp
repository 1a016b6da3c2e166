// `pathlock matrix lint|render|explain|diff|scaffold` (see matrix_cli.hpp).
//
// Arguments: words starting with "--" are options and take the next word as
// their value (an option given twice is an error, as for shell and demo);
// other words are positional. Each subcommand names the options
// it accepts; anything else is a usage error (exit status 2).
#include "matrix_cli.hpp"

#include <fmt/format.h>

#include <fstream>
#include <map>
#include <ostream>
#include <sstream>

#include "matrix/emit.hpp"

namespace pathlock::cli {

const char* const kMatrixUsage =
    "  pathlock matrix lint     [FILE] [--against OLD_FILE]\n"
    "  pathlock matrix render   [FILE] [--format md|html] [--out FILE] | [FILE] --update DOC.md\n"
    "  pathlock matrix explain  [FILE] HELD_OP REQUESTED_OP\n"
    "  pathlock matrix diff     OLD_FILE NEW_FILE\n"
    "  pathlock matrix scaffold FILE --op NAME --roles ROLE[,ROLE...] [--label TEXT] [--example TEXT] [--out FILE]\n";

namespace {

// Wrong subcommand or number of arguments: exit status 2 with the usage.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// A bad option or option value: exit status 1, as before these commands grew.
struct BadOption : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Args {
  std::map<std::string, std::string> options;
  std::vector<std::string> positional;

  std::string option(const std::string& name, const std::string& fallback = "") const {
    const auto it = options.find(name);
    return it == options.end() ? fallback : it->second;
  }
};

Args parse_args(const std::vector<std::string>& words, std::initializer_list<const char*> allowed) {
  Args a;
  for (std::size_t i = 1; i < words.size(); ++i) {
    if (words[i].rfind("--", 0) != 0) {
      a.positional.push_back(words[i]);
      continue;
    }
    const std::string name = words[i].substr(2);
    bool ok = false;
    for (const char* n : allowed) ok = ok || name == n;
    if (!ok) throw BadOption(fmt::format("unknown option --{} for 'matrix {}'", name, words[0]));
    if (i + 1 >= words.size()) throw BadOption(fmt::format("--{} needs a value", name));
    if (!a.options.emplace(name, words[i + 1]).second)
      throw BadOption(fmt::format("--{} is given more than once", name));
    ++i;
  }
  return a;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream o(path, std::ios::binary | std::ios::trunc);
  o << text;
  if (!o) throw matrix::MatrixError(fmt::format("{}: cannot write", path));
}

// FILE is optional before `wanted` positional words.
std::string take_file(Args& a, std::size_t wanted, const std::string& default_file) {
  std::string file = default_file;
  if (a.positional.size() == wanted + 1) {
    file = a.positional.front();
    a.positional.erase(a.positional.begin());
  }
  if (a.positional.size() != wanted) throw UsageError("wrong number of arguments");
  return file;
}

int lint(const std::vector<std::string>& words, const std::string& default_file, std::ostream& out, std::ostream& err) {
  Args a = parse_args(words, {"against"});
  const std::string file = take_file(a, 0, default_file);
  const matrix::Matrix m = matrix::load_matrix(file);
  out << matrix::lint_report(m);
  if (a.options.count("against")) {
    const matrix::Matrix old = matrix::load_matrix(a.option("against"));
    if (const auto problem = matrix::version_problem(old, m)) {
      err << "error: " << *problem << "\n";
      return 1;
    }
    out << fmt::format("  against {}: {}\n", old.source,
                       old.fingerprint() == m.fingerprint()
                           ? "the same rules"
                           : fmt::format("rules changed, version {} -> {}", old.version, m.version));
  }
  return 0;
}

int render(const std::vector<std::string>& words, const std::string& default_file, std::ostream& out) {
  Args a = parse_args(words, {"format", "out", "update"});
  const matrix::Matrix m = matrix::load_matrix(take_file(a, 0, default_file));
  if (a.options.count("update")) {
    if (a.options.count("format") || a.options.count("out")) throw BadOption("--update takes no --format or --out");
    const std::string doc = a.option("update");
    const std::string before = matrix::read_text_file(doc), after = matrix::update_doc(m, before);
    if (after != before) write_text(doc, after);
    out << fmt::format("{}: {}\n", doc, after == before ? "up to date" : "generated sections updated");
    return 0;
  }
  const std::string format = a.option("format", "md");
  std::string text;
  if (format == "md")
    text = matrix::emit_markdown(m);
  else if (format == "html")
    text = matrix::emit_html(m);
  else
    throw BadOption(fmt::format("unknown format '{}' (md or html)", format));
  if (a.options.count("out"))
    write_text(a.option("out"), text);
  else
    out << text;
  return 0;
}

int explain(const std::vector<std::string>& words, const std::string& default_file, std::ostream& out) {
  Args a = parse_args(words, {});
  const matrix::Matrix m = matrix::load_matrix(take_file(a, 2, default_file));
  const int held = m.op_index(a.positional[0]), req = m.op_index(a.positional[1]);
  if (held < 0) throw matrix::MatrixError(fmt::format("{}: unknown operation '{}'", m.source, a.positional[0]));
  if (req < 0) throw matrix::MatrixError(fmt::format("{}: unknown operation '{}'", m.source, a.positional[1]));
  out << matrix::explain(m, held, req);
  return 0;
}

int diff(const std::vector<std::string>& words, std::ostream& out) {
  Args a = parse_args(words, {});
  if (a.positional.size() != 2) throw UsageError("diff takes OLD_FILE NEW_FILE");
  const matrix::Matrix before = matrix::load_matrix(a.positional[0]), after = matrix::load_matrix(a.positional[1]);
  out << matrix::diff_report(before, after, matrix::diff_matrices(before, after));
  return 0;
}

int scaffold(const std::vector<std::string>& words, std::ostream& out) {
  Args a = parse_args(words, {"op", "roles", "label", "example", "out"});
  if (a.positional.size() != 1) throw UsageError("scaffold takes one FILE");
  if (!a.options.count("op") || !a.options.count("roles"))
    throw UsageError("scaffold needs --op NAME and --roles ROLE[,ROLE...]");
  matrix::ScaffoldRequest req{a.option("op"), {}, a.option("label"), a.option("example")};
  std::stringstream roles(a.option("roles"));
  for (std::string r; std::getline(roles, r, ',');) req.roles.push_back(r);
  const std::string file = a.positional[0], target = a.option("out", file);
  const std::string text = matrix::scaffold(matrix::read_text_file(file), file, req);
  write_text(target, text);
  const matrix::Matrix m = matrix::parse_matrix(text, target);
  out << fmt::format(
      "{}: added operation '{}' ({}): a row and a column, every new rule \"deny\" and marked \"review\" "
      "({} warning(s)).\nDecide each cell, remove its \"review\", then run: pathlock matrix lint {}\n",
      target, req.op, a.option("roles"), matrix::warnings(m).size(), target);
  return 0;
}

}  // namespace

int run_matrix_command(const std::vector<std::string>& args, const std::string& default_file, std::ostream& out,
                       std::ostream& err) {
  try {
    const std::string sub = args.empty() ? "" : args[0];
    if (sub == "lint") return lint(args, default_file, out, err);
    if (sub == "render") return render(args, default_file, out);
    if (sub == "explain") return explain(args, default_file, out);
    if (sub == "diff") return diff(args, out);
    if (sub == "scaffold") return scaffold(args, out);
    throw UsageError(sub.empty() ? "missing subcommand" : fmt::format("unknown subcommand 'matrix {}'", sub));
  } catch (const UsageError& e) {
    err << "error: " << e.what() << "\nusage:\n" << kMatrixUsage;
    return 2;
  } catch (const BadOption& e) {
    err << "error: " << e.what() << "\n";
    return 1;
  } catch (const matrix::MatrixError& e) {
    for (const std::string& p : e.problems()) err << "error: " << p << "\n";
    if (e.problems().size() > 1) err << e.problems().size() << " problems\n";
    for (const std::string& p : e.problems())
      if (p.find("no grid row") != std::string::npos) {
        err << "hint: `pathlock matrix scaffold FILE --op NAME --roles ROLE[,ROLE...]` adds an operation with its "
               "row and column in one step\n";
        break;
      }
    return 1;
  }
}

std::unique_ptr<matrix::CompiledMatrix> load_matrix_option(const std::string& file) {
  return matrix::compile_matrix_file(file);
}

}  // namespace pathlock::cli
