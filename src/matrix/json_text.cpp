// replace_value() of pathlock/matrix.hpp: one value of a JSON text replaced
// in place (see json_text.hpp).
#include "matrix/json_text.hpp"

#include <pathlock/matrix.hpp>

#include <fmt/format.h>

namespace pathlock::matrix {
namespace {

using ordered = nlohmann::ordered_json;

// `v` on one line, spaced like the shipped files: { "src": "deny", "dst": "allow" }.
std::string one_line(const ordered& v) {
  if (v.is_object()) {
    if (v.empty()) return "{}";
    std::string out = "{ ";
    bool first = true;
    for (const auto& [key, value] : v.items()) {
      out += fmt::format("{}{}: {}", first ? "" : ", ", ordered(key).dump(), one_line(value));
      first = false;
    }
    return out + " }";
  }
  if (v.is_array()) {
    std::string out = "[";
    for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + one_line(v[i]);
    return out + "]";
  }
  return v.dump();
}

}  // namespace

std::string replace_value(const std::string& json_text, const std::vector<std::string>& path,
                          const std::string& value_json, const std::string& source) {
  const ordered doc = ordered::parse(json_text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) throw MatrixError(source + ": not a JSON object");
  const ordered value = ordered::parse(value_json, nullptr, false);
  if (value.is_discarded()) throw MatrixError(source + ": the new value is not JSON");
  if (path.empty()) throw MatrixError(source + ": no key to replace");
  const JsonScanner scan(json_text);
  std::size_t open = scan.skip_ws(0);
  std::string where;
  for (std::size_t i = 0; i < path.size(); ++i) {
    where += (where.empty() ? "" : ".") + path[i];
    if (json_text[open] != '{') throw MatrixError(fmt::format("{}: {} is inside a value that is not an object", source, where));
    const Member* found = nullptr;
    const std::vector<Member> members = scan.members(open);
    for (const Member& m : members)
      if (m.key == path[i]) found = &m;  // the last of equal keys, as the parser would refuse them anyway
    if (!found) throw MatrixError(fmt::format("{}: no {}", source, where));
    if (i + 1 == path.size())
      return json_text.substr(0, found->value_begin) + one_line(value) + json_text.substr(found->value_end);
    open = found->value_begin;
  }
  return json_text;  // not reached
}

}  // namespace pathlock::matrix
