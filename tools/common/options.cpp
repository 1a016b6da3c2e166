// The option parser of every pathlock program (options.hpp).
#include "common/options.hpp"

#include <fmt/format.h>

#include <charconv>
#include <climits>
#include <cstdio>

namespace pathlock::options {

Options& Options::add(const std::string& name, Spec spec) {
  specs_[name] = std::move(spec);
  return *this;
}

Options& Options::value(const std::string& name, Check check) {
  Spec s;
  s.check = std::move(check);
  return add(name, std::move(s));
}

Options& Options::repeated(const std::string& name, Check check) {
  Spec s;
  s.repeatable = true;
  s.check = std::move(check);
  return add(name, std::move(s));
}

Options& Options::required(const std::string& name, Check check) {
  Spec s;
  s.required = true;
  s.check = std::move(check);
  return add(name, std::move(s));
}

Options& Options::number(const std::string& name, long long min, long long max) {
  Spec s;
  s.is_number = true;
  s.min = min;
  s.max = max;
  return add(name, std::move(s));
}

Options& Options::flag(const std::string& name) {
  Spec s;
  s.takes_value = false;
  return add(name, std::move(s));
}

Options& Options::alias(const std::string& word, const std::string& name) {
  aliases_[word] = name;
  return *this;
}

Options& Options::positional(std::size_t min, std::size_t max) {
  min_positional_ = min;
  max_positional_ = max;
  return *this;
}

Options& Options::command(const std::string& name) {
  command_ = name;
  return *this;
}

long long parse_number(const std::string& text, long long min, long long max, const std::string& what) {
  long long v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end || v < min || v > max)
    throw UsageError(fmt::format("{} wants a whole number from {} to {}, not '{}'", what, min, max, text));
  return v;
}

Parsed Options::parse(const std::vector<std::string>& args) const {
  Parsed p;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string word = args[i];
    if (const auto a = aliases_.find(word); a != aliases_.end()) word = "--" + a->second;
    if (word.rfind("--", 0) != 0) {
      p.positional.push_back(word);
      continue;
    }
    const std::string name = word.substr(2);
    const auto it = specs_.find(name);
    if (it == specs_.end())
      throw UsageError(command_.empty() ? fmt::format("unknown option --{}", name)
                                        : fmt::format("unknown option --{} for '{}'", name, command_));
    const Spec& spec = it->second;
    std::vector<std::string>& values = p.values_[name];
    if (!values.empty() && !spec.repeatable) throw UsageError(fmt::format("--{} is given more than once", name));
    if (!spec.takes_value) {
      values.emplace_back();
      continue;
    }
    if (i + 1 >= args.size()) throw UsageError(fmt::format("--{} needs a value", name));
    const std::string& v = args[++i];
    if (spec.is_number) parse_number(v, spec.min, spec.max, "--" + name);
    if (spec.check) {
      try {
        spec.check(v);
      } catch (const std::exception& e) {
        throw UsageError(fmt::format("--{}: {}", name, e.what()));
      }
    }
    values.push_back(v);
  }
  for (const auto& [name, spec] : specs_)
    if (spec.required && !p.has(name)) throw UsageError(fmt::format("--{} is required", name));
  if (p.positional.size() < min_positional_ || p.positional.size() > max_positional_) {
    const std::string expected = min_positional_ == max_positional_ ? fmt::format("{}", min_positional_)
                                 : max_positional_ == kMany         ? fmt::format("at least {}", min_positional_)
                                                            : fmt::format("{} to {}", min_positional_, max_positional_);
    throw UsageError(fmt::format("wrong number of arguments ({}, expected {}){}", p.positional.size(), expected,
                                 p.positional.empty() ? "" : fmt::format(": '{}'", p.positional.back())));
  }
  return p;
}

Parsed Options::parse(int argc, char** argv, int first) const {
  return parse(std::vector<std::string>(argv + first, argv + argc));
}

std::optional<Parsed> Options::parse_main(int argc, char** argv, int first, const std::string& usage) const {
  try {
    return parse(argc, argv, first);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "error: %s\n%s", e.what(), usage.c_str());
    return std::nullopt;
  }
}

std::string Parsed::get(const std::string& name, const std::string& fallback) const {
  const auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second.back();
}

std::vector<std::string> Parsed::all(const std::string& name) const {
  const auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

long long Parsed::number_or(const std::string& name, long long fallback) const {
  const auto it = values_.find(name);
  return it == values_.end() ? fallback : parse_number(it->second.back(), LLONG_MIN, LLONG_MAX, "--" + name);
}

}  // namespace pathlock::options
