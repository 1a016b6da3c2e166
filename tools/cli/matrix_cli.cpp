// `pathlock matrix lint|render|explain|diff|scaffold` (see matrix_cli.hpp).
//
// Arguments: each subcommand declares its option table
// (tools/common/options.hpp, the parser of every pathlock program); anything
// else is a usage error (exit status 2, docs/cli.md "Exit status").
#include "matrix_cli.hpp"

#include <fmt/format.h>

#include <fstream>
#include <ostream>
#include <sstream>

#include <pathlock/matrix.hpp>

#include "common/options.hpp"

namespace pathlock::cli {

const char* const kMatrixUsage =
    "  pathlock matrix lint     [FILE] [--against OLD_FILE]\n"
    "  pathlock matrix render   [FILE] [--format md|html] [--out FILE] | [FILE] --update DOC.md\n"
    "  pathlock matrix explain  [FILE] HELD_OP REQUESTED_OP\n"
    "  pathlock matrix diff     OLD_FILE NEW_FILE\n"
    "  pathlock matrix scaffold FILE --op NAME --roles ROLE[,ROLE...] [--symbols SYM[/SYM...][,...]] [--label TEXT]\n"
    "                           [--example TEXT] [--out FILE]\n";

namespace {

// A missing or unknown subcommand, or the wrong number of arguments: the
// error and the usage. A bad option (options::UsageError) gets its error
// line only. Both exit with options::kExitUsage.
struct ArgumentCount : options::UsageError {
  using options::UsageError::UsageError;
};

struct Args {
  options::Parsed parsed;
  std::vector<std::string> positional;  // FILE is taken out of it

  std::string option(const std::string& name, const std::string& fallback = "") const {
    return parsed.get(name, fallback);
  }
  bool has(const std::string& name) const { return parsed.has(name); }
};

// The subcommand's words after its name, against its option table (the
// positional count is checked by each subcommand, FILE being optional).
Args parse_args(const std::vector<std::string>& words, options::Options table) {
  table.command("matrix " + words[0]).positional(0, options::Options::kMany);
  options::Parsed parsed = table.parse(std::vector<std::string>(words.begin() + 1, words.end()));
  std::vector<std::string> positional = parsed.positional;
  return Args{std::move(parsed), std::move(positional)};
}

const options::Check kFormat = [](const std::string& v) {
  if (v != "md" && v != "html") throw std::invalid_argument(fmt::format("unknown format '{}' (md or html)", v));
};

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
  if (a.positional.size() != wanted) throw ArgumentCount("wrong number of arguments");
  return file;
}

int lint(const std::vector<std::string>& words, const std::string& default_file, std::ostream& out, std::ostream& err) {
  Args a = parse_args(words, options::Options{}.value("against"));
  const std::string file = take_file(a, 0, default_file);
  const matrix::MatrixFile m = matrix::MatrixFile::load(file);
  out << matrix::lint_report(m);
  if (a.has("against")) {
    const matrix::MatrixFile old = matrix::MatrixFile::load(a.option("against"));
    if (const auto problem = matrix::version_problem(old, m)) {
      err << "error: " << *problem << "\n";
      return 1;
    }
    out << fmt::format("  against {}: {}\n", old.source(),
                       old.fingerprint() == m.fingerprint()
                           ? "the same rules"
                           : fmt::format("rules changed, version {} -> {}", old.version(), m.version()));
  }
  return 0;
}

int render(const std::vector<std::string>& words, const std::string& default_file, std::ostream& out) {
  Args a = parse_args(words, options::Options{}.value("format", kFormat).value("out").value("update"));
  const matrix::MatrixFile m = matrix::MatrixFile::load(take_file(a, 0, default_file));
  if (a.has("update")) {
    if (a.has("format") || a.has("out")) throw options::UsageError("--update takes no --format or --out");
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
  else  // "html" (kFormat)
    text = matrix::emit_html(m);
  if (a.has("out"))
    write_text(a.option("out"), text);
  else
    out << text;
  return 0;
}

int explain(const std::vector<std::string>& words, const std::string& default_file, std::ostream& out) {
  Args a = parse_args(words, options::Options{});
  const matrix::MatrixFile m = matrix::MatrixFile::load(take_file(a, 2, default_file));
  const int held = m.op_index(a.positional[0]), req = m.op_index(a.positional[1]);
  if (held < 0) throw matrix::MatrixError(fmt::format("{}: unknown operation '{}'", m.source(), a.positional[0]));
  if (req < 0) throw matrix::MatrixError(fmt::format("{}: unknown operation '{}'", m.source(), a.positional[1]));
  out << matrix::explain(m, held, req);
  return 0;
}

int diff(const std::vector<std::string>& words, std::ostream& out) {
  Args a = parse_args(words, options::Options{});
  if (a.positional.size() != 2) throw ArgumentCount("diff takes OLD_FILE NEW_FILE");
  const matrix::MatrixFile before = matrix::MatrixFile::load(a.positional[0]);
  const matrix::MatrixFile after = matrix::MatrixFile::load(a.positional[1]);
  out << matrix::diff_report(before, after);
  return 0;
}

// "a,b" -> {"a", "b"}; keeps empty pieces ("a," -> {"a", ""}), so they are refused, not dropped.
std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out{""};
  for (const char c : text) {
    if (c == sep)
      out.emplace_back();
    else
      out.back() += c;
  }
  return out;
}

int scaffold(const std::vector<std::string>& words, std::ostream& out) {
  Args a = parse_args(
      words,
      options::Options{}.value("op").value("roles").value("symbols").value("label").value("example").value("out"));
  if (a.positional.size() != 1) throw ArgumentCount("scaffold takes one FILE");
  if (!a.has("op") || !a.has("roles")) throw ArgumentCount("scaffold needs --op NAME and --roles ROLE[,ROLE...]");
  matrix::ScaffoldRequest req{a.option("op"), {}, a.option("label"), a.option("example")};
  std::stringstream roles(a.option("roles"));
  for (std::string r; std::getline(roles, r, ',');) req.roles.push_back(r);
  if (a.has("symbols"))
    for (const std::string& entry : split(a.option("symbols"), ',')) req.symbols.push_back(split(entry, '/'));
  const std::string file = a.positional[0], target = a.option("out", file);
  const std::string text = matrix::scaffold(matrix::read_text_file(file), file, req);
  write_text(target, text);
  const matrix::MatrixFile m = matrix::MatrixFile::parse(text, target);
  std::string symbols;
  const std::vector<matrix::OpView> ops = m.ops();
  for (const matrix::RoleView& r : ops.back().roles) {
    std::string syms;
    for (const std::string& sym : r.symbols) syms += (syms.empty() ? "" : "/") + sym;
    symbols += fmt::format("{}{} {}", symbols.empty() ? "" : ", ", r.name, syms);
  }
  out << fmt::format(
      "{}: added operation '{}' ({}): a row and a column, every new rule \"deny\" and marked \"review\" "
      "({} warning(s)).\nDecide each cell, remove its \"review\", then run: pathlock matrix lint {}\n"
      "Symbols in the grid: {}{}\n",
      target, req.op, a.option("roles"), matrix::warnings(m).size(), target, symbols,
      a.has("symbols") ? "" : " (defaults; choose them with --symbols)");
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
    throw ArgumentCount(sub.empty() ? "missing subcommand" : fmt::format("unknown subcommand 'matrix {}'", sub));
  } catch (const ArgumentCount& e) {
    err << "error: " << e.what() << "\nusage:\n" << kMatrixUsage;
    return options::kExitUsage;
  } catch (const options::UsageError& e) {
    err << "error: " << e.what() << "\n";
    return options::kExitUsage;
  } catch (const matrix::MatrixError& e) {
    for (const std::string& p : e.problems()) err << "error: " << p << "\n";
    if (e.problems().size() > 1) err << e.problems().size() << " problems\n";
    for (const std::string& p : e.problems())
      if (p.find("no grid row") != std::string::npos) {
        err << "hint: `pathlock matrix scaffold FILE --op NAME --roles ROLE[,ROLE...]` adds an operation with its "
               "row and column in one step\n";
        break;
      }
    return options::kExitFailure;
  }
}

std::unique_ptr<matrix::MatrixFile> load_matrix_option(const std::string& file) {
  return std::make_unique<matrix::MatrixFile>(matrix::MatrixFile::load(file));
}

std::unique_ptr<matrix::MatrixFile> parse_matrix_option(const std::string& text, const std::string& name) {
  return std::make_unique<matrix::MatrixFile>(matrix::MatrixFile::parse(text, name));
}

}  // namespace pathlock::cli
