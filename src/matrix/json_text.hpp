// Reading matrix JSON as text, for tools that edit a file in place and keep
// everything they do not change byte for byte (scaffold, replace_value):
// where each member of an object starts and ends.
//
// The scanner expects valid JSON (callers parse the text first); on other
// text its offsets are meaningless but stay inside the text.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace pathlock::matrix {

struct Member {
  std::string key;
  std::size_t key_at = 0;       // offset of the key's opening quote
  std::size_t value_begin = 0;  // offset of the value's first byte
  std::size_t value_end = 0;    // one past the value's last byte
};

class JsonScanner {
 public:
  explicit JsonScanner(const std::string& text) : s_(text) {}

  std::size_t skip_ws(std::size_t i) const {
    while (i < s_.size() && (s_[i] == ' ' || s_[i] == '\t' || s_[i] == '\n' || s_[i] == '\r')) ++i;
    return i;
  }
  std::size_t skip_string(std::size_t i) const {  // i at the opening quote
    for (++i; i < s_.size() && s_[i] != '"'; ++i)
      if (s_[i] == '\\') ++i;
    return i + 1;
  }
  std::size_t skip_value(std::size_t i) const {
    if (s_[i] == '"') return skip_string(i);
    if (s_[i] == '{' || s_[i] == '[') {
      int depth = 0;
      for (; i < s_.size(); ++i) {
        if (s_[i] == '"') {
          i = skip_string(i) - 1;
        } else if (s_[i] == '{' || s_[i] == '[') {
          ++depth;
        } else if (s_[i] == '}' || s_[i] == ']') {
          if (--depth == 0) return i + 1;
        }
      }
      return i;
    }
    while (i < s_.size() && s_[i] != ',' && s_[i] != '}' && s_[i] != ']' && s_[i] != ' ' && s_[i] != '\n') ++i;
    return i;
  }
  // The members of the object whose '{' is at `open`.
  std::vector<Member> members(std::size_t open) const {
    std::vector<Member> out;
    std::size_t i = skip_ws(open + 1);
    while (i < s_.size() && s_[i] == '"') {
      Member m;
      m.key_at = i;
      const std::size_t key_end = skip_string(i);
      m.key = nlohmann::json::parse(s_.substr(i, key_end - i)).get<std::string>();
      i = skip_ws(skip_ws(key_end) + 1);  // past ':'
      m.value_begin = i;
      m.value_end = skip_value(i);
      out.push_back(m);
      i = skip_ws(m.value_end);
      if (i < s_.size() && s_[i] == ',') i = skip_ws(i + 1);
    }
    return out;
  }
  // The indentation of the line holding offset `at`.
  std::string indent_of(std::size_t at) const {
    const std::size_t line = s_.rfind('\n', at);
    const std::size_t begin = line == std::string::npos ? 0 : line + 1;
    std::size_t end = begin;
    while (end < s_.size() && (s_[end] == ' ' || s_[end] == '\t')) ++end;
    return s_.substr(begin, end - begin);
  }

 private:
  const std::string& s_;
};

}  // namespace pathlock::matrix
