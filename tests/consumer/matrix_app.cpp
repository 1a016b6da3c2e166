// A consumer of pathlock's matrix library (pathlock/matrix.hpp, CMake target
// pathlock::matrix): loads its own matrix file at run time, reads its
// problems as structured values, and writes the Redis Functions library of
// it, with that library alone. Exits 0
// when the file loads with no problem and the library text names itself.
#include <pathlock/matrix.hpp>

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  try {
    const pathlock::matrix::MatrixFile m = pathlock::matrix::MatrixFile::load(argv[1]);
    const std::string lua = pathlock::matrix::lua_library(m.table());
    std::printf("%s", pathlock::matrix::lint_report(m).c_str());
    return lua.rfind("#!lua name=pathlock_", 0) == 0 ? 0 : 1;
  } catch (const pathlock::matrix::MatrixError& e) {
    for (const pathlock::matrix::Problem& p : e.details()) std::printf("problem: %s\n", p.text.c_str());
    return 1;
  }
}
