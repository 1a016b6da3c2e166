// The one option parser of every pathlock program (`pathlock` and its
// subcommands, pathlock-matrixc, pathlock-stress, pathlock-bench,
// pathlock-memory-bench, pathlock-pair-loop) and the one map from error to
// exit status (docs/cli.md, "Exit status").
//
// A command declares its options in a table (Options), then parses its
// arguments against it:
//
//   const Options table = Options{}
//       .value("backend", "memory|redis", check_backend)
//       .number("threads", 1, 1024)
//       .repeated("matrix")
//       .flag("quick")
//       .positional(0, 1);
//   const Parsed p = table.parse(args);  // throws UsageError
//   const long threads = p.number_or("threads", 4);
//
// Rules, the same everywhere:
// - a word starting with "--" is an option; it must be in the table;
// - an option with a value takes the next word as its value, whatever it
//   looks like (`--namespace --x` names the namespace "--x");
// - an option given twice is an error unless declared repeated (an
//   automated caller learns of its mistake at once instead of getting a
//   silent pick);
// - a number is checked whole (no trailing text, no overflow) and against
//   its declared range when parsed; a value with a check function is checked
//   when parsed;
// - required options and the number of other words (positional arguments)
//   are checked; nothing is dropped silently.
// Every refusal throws UsageError: exit status kExitUsage.
//
// Adding an option: one line in the command's table, its use after parse(),
// its usage line and its section in docs/cli.md.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace pathlock::options {

// Exit statuses of every program (docs/cli.md, "Exit status"):
inline constexpr int kExitOk = 0;       // done; a check found nothing wrong
inline constexpr int kExitFailure = 1;  // understood, but failed or found a problem
inline constexpr int kExitUsage = 2;    // the command line is refused (UsageError)

// The command line does not fit its table: exit status kExitUsage.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A value check: throws (any std::exception) to refuse the value; its
// message becomes the UsageError's.
using Check = std::function<void(const std::string& value)>;

class Parsed;

class Options {
 public:
  // `--name VALUE`, at most once. `check` (optional) refuses bad values.
  Options& value(const std::string& name, Check check = {});
  // `--name VALUE`, any number of times (Parsed::all).
  Options& repeated(const std::string& name, Check check = {});
  // `--name VALUE` that must be given.
  Options& required(const std::string& name, Check check = {});
  // `--name N`: a whole decimal number in [min, max], at most once.
  Options& number(const std::string& name, long long min, long long max);
  // `--name` without a value, at most once.
  Options& flag(const std::string& name);
  // A word that is the same as `--name` (e.g. "-h" for "--help").
  Options& alias(const std::string& word, const std::string& name);
  // How many other words are allowed (default: none; kMany: no limit).
  static constexpr std::size_t kMany = static_cast<std::size_t>(-1);
  Options& positional(std::size_t min, std::size_t max);
  // For messages: "unknown option --x for 'matrix lint'".
  Options& command(const std::string& name);

  Parsed parse(const std::vector<std::string>& args) const;
  Parsed parse(int argc, char** argv, int first) const;
  // For a main(): parses argv[first..]; on a refused command line prints
  // "error: MESSAGE" and `usage` on stderr and returns nothing (the caller
  // exits with kExitUsage).
  std::optional<Parsed> parse_main(int argc, char** argv, int first, const std::string& usage) const;

 private:
  struct Spec {
    bool takes_value = true, repeatable = false, required = false, is_number = false;
    long long min = 0, max = 0;
    Check check;
  };
  Options& add(const std::string& name, Spec spec);

  std::map<std::string, Spec> specs_;
  std::map<std::string, std::string> aliases_;
  std::size_t min_positional_ = 0, max_positional_ = 0;
  std::string command_;
};

class Parsed {
 public:
  bool has(const std::string& name) const { return values_.count(name) > 0; }
  // The value of `--name` (the last one of a repeated option), or `fallback`.
  std::string get(const std::string& name, const std::string& fallback = "") const;
  // Every value of a repeated option, in order.
  std::vector<std::string> all(const std::string& name) const;
  // A number option's value (already checked), or `fallback`.
  long long number_or(const std::string& name, long long fallback) const;

  std::vector<std::string> positional;

 private:
  friend class Options;
  std::map<std::string, std::vector<std::string>> values_;
};

// A whole decimal number in [min, max] ("-" allowed when min < 0); throws
// UsageError naming `what` otherwise. For numbers inside option values.
long long parse_number(const std::string& text, long long min, long long max, const std::string& what);

}  // namespace pathlock::options
