// Reading a matrix file's JSON strictly: nlohmann/json keeps the last of
// two equal keys, this refuses them (every one, with its location, e.g.
// `duplicate key "move_file" in grid`); a document nested deeper than
// kMaxJsonDepth is refused before it is built; text that is not JSON is a
// problem of the file. Every problem is a MatrixError whose texts start with
// `source`. Used by parse.cpp before it validates the document; tested by
// tests/matrix_strict_json_test.cpp.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace pathlock::matrix {

inline constexpr int kMaxJsonDepth = 32;

nlohmann::json parse_strict_json(const std::string& text, const std::string& source);

}  // namespace pathlock::matrix
