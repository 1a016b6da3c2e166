// A fixture for first_use_guards_finds_offenders (see lazy.cpp).
#include <mutex>

namespace {
std::once_flag made;
int value = 0;
}  // namespace

int value_made_once() {
  std::call_once(made, [] { value = 42; });
  return value;
}
