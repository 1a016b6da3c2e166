// Fixtures for first_use_guards_finds_offenders: a function-local static
// with a run-time initialiser (lazy.cpp) and a std::call_once (once.cpp),
// the patterns tests/first_use_guards.py refuses.
#include <string>

const std::string& lazily_made_name() {
  static const std::string name = std::string("made at the first call, ") + "under a guard";
  return name;
}
