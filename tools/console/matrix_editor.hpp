// The console's matrix editor API (docs/console.md#the-matrix-page): the
// page holds the matrix being edited and sends its JSON text with every
// call; the server answers with pathlock's own parser, lint, diff, scaffold
// and an embedded engine, so the page and `pathlock matrix ...` can never
// disagree. Nothing is stored and no lock of any real engine is taken: the
// POST calls are computations on the text they carry, allowed without
// --admin (they still need the console's X-Pathlock-Console header).
//
//   GET  /api/matrix/loaded    the matrix file the console enforces
//   POST /api/matrix/check     {base, edited[, name]}: problems, warnings,
//                              the grid of `edited`, the diff base -> edited
//   POST /api/matrix/scaffold  {text, op, roles[, symbols, label, example]}
//   POST /api/matrix/set       {text, path, value}: the text with the value at
//                              `path` replaced in place (the rest kept byte
//                              for byte, so a one-cell edit diffs as that cell)
//   POST /api/matrix/try       {base, edited, scenario}: each request of the
//                              scenario, granted or refused with the reason,
//                              under both matrices
#pragma once

#include <string>

namespace httplib {
class Server;
}

namespace pathlock::console {

struct EditorOptions {
  std::string name;   // the file's name as shown ("cloud-drive.json")
  std::string text;   // its JSON text; empty when it could not be read
  std::string error;  // why `text` is empty
};

void add_matrix_editor(httplib::Server& server, EditorOptions options);

}  // namespace pathlock::console
