// The strict JSON reading of a matrix file (strict_json.hpp).
#include "matrix/strict_json.hpp"

#include "matrix/model.hpp"

#include <fmt/format.h>

#include <set>

namespace pathlock::matrix {
namespace {

using json = nlohmann::json;

[[noreturn]] void fail(const std::string& source, const std::string& what) {
  throw MatrixError(fmt::format("{}: {}", source, what));
}

}  // namespace

nlohmann::json parse_strict_json(const std::string& text, const std::string& source) {
  std::vector<std::set<std::string>> keys;
  std::vector<std::string> path;  // key path of the current value
  std::string last_key;
  std::vector<std::string> duplicates;
  auto callback = [&](int depth, json::parse_event_t event, json& parsed) {
    // A matrix is a few levels deep; a deeper document is refused before it
    // is built (printing or walking it would recurse that deep).
    if (depth > kMaxJsonDepth)
      fail(source, fmt::format("nested more than {} levels deep; a matrix file needs far fewer", kMaxJsonDepth));
    switch (event) {
      case json::parse_event_t::object_start:
        keys.emplace_back();
        path.push_back(last_key);
        break;
      case json::parse_event_t::object_end:
        keys.pop_back();
        path.pop_back();
        break;
      case json::parse_event_t::key: {
        last_key = parsed.get<std::string>();
        if (!keys.back().insert(last_key).second) {
          std::string at;
          for (const auto& p : path)
            if (!p.empty()) at += (at.empty() ? "" : ".") + p;
          duplicates.push_back(fmt::format("{}: duplicate key \"{}\"{}", source, last_key,
                                           at.empty() ? "" : " in " + at));
        }
        break;
      }
      case json::parse_event_t::array_start:
        path.push_back(last_key);
        last_key.clear();
        break;
      case json::parse_event_t::array_end:
        path.pop_back();
        break;
      case json::parse_event_t::value:
        break;
    }
    return true;
  };
  json doc;
  try {
    doc = json::parse(text, callback);
  } catch (const json::parse_error& e) {
    fail(source, fmt::format("not valid JSON: {}", e.what()));
  }
  if (!duplicates.empty()) throw MatrixError(std::move(duplicates));
  return doc;
}

}  // namespace pathlock::matrix
