// `pathlock matrix scaffold FILE --op NAME --roles target[,src,dst]`: adds
// an operation to a matrix file in one edit.
//
// The new operation gets its entry in "operations", a full row, and a cell
// in every existing row. Every new rule is written out explicitly, per held
// role, as the safe choice: { "verdict": "deny", "origin": "owner",
// "review": "..." }. The file stays valid, so it builds and lints at once;
// lint warns about each "review" until the owner decides the cell and
// removes the key. Nothing else in the file changes: the new text is
// inserted after the last member of each container, in the file's own
// indentation, and comments of the layout (alignment, line breaks) survive.
#pragma once

#include <string>
#include <vector>

namespace pathlock::matrix {

struct ScaffoldRequest {
  std::string op;                  // the new operation's name
  std::vector<std::string> roles;  // its roles, e.g. {"src", "dst"}
  std::string label;               // optional; the rendering's label
  std::string example;             // optional; the rendering's example
};

// Returns the text of `json_text` with the operation added. Throws
// MatrixError if the file is not valid, the operation exists, a name is not
// an identifier, or a limit would be passed. The result always parses.
std::string scaffold(const std::string& json_text, const std::string& source, const ScaffoldRequest& request);

}  // namespace pathlock::matrix
