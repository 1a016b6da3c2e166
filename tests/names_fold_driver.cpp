// pathlock_names_fold_driver POLICY: folds each line of standard input by
// the name policy POLICY (nfc or nfc_casefold; src/names/fold.hpp) and
// prints, a line each, "=" and the folded name, or "!" and why it cannot be
// folded. The C++ side of the test that every client folds alike
// (tests/names_agree.py); a test's helper, as the folding is not public yet.
#include "names/fold.hpp"

#include <cstdio>
#include <iostream>
#include <string>

int main(int argc, char** argv) {
  using pathlock::names::Policy;
  const std::string policy = argc == 2 ? argv[1] : "";
  if (policy != "nfc" && policy != "nfc_casefold") {
    std::fprintf(stderr, "usage: pathlock_names_fold_driver nfc|nfc_casefold < names\n");
    return 2;
  }
  const Policy p = policy == "nfc" ? Policy::nfc : Policy::nfc_casefold;
  std::ios::sync_with_stdio(false);
  for (std::string line; std::getline(std::cin, line);) {
    const pathlock::names::Folded f = pathlock::names::fold(p, line);
    std::cout << (f.ok() ? "=" + f.text : "!" + f.problem) << '\n';
  }
  return std::cout.flush() ? 0 : 1;
}
