// The lock table of the embedded backend (src/memory/lock_table.hpp) on its
// own: ids, tokens, slot reuse.
#include "memory/lock_table.hpp"

#include <catch2/catch.hpp>

#include <set>

using namespace pathlock::memory;

TEST_CASE("lock table: ids name one lock, a reused slot gets a new id", "[memory][locks]") {
  LockTable t;
  Lock& a = t.take(1);
  Lock& b = t.take(2);
  CHECK(a.id == "0-1");
  CHECK(b.id == "1-2");
  CHECK(a.token.size() == 32);
  CHECK(a.token != b.token);
  CHECK(t.live() == 2);
  CHECK(t.find("0-1") == &a);
  CHECK(t.find("1-2") == &b);
  CHECK(t.find("1-1") == nullptr);  // right slot, wrong fence
  CHECK(t.find("7-1") == nullptr);
  for (const char* bad : {"", "-", "0", "x-1", "0-", "00-1x", "ffffffffffffffffffff-1"}) CHECK(t.find(bad) == nullptr);
  t.give_back(a);
  CHECK(t.find("0-1") == nullptr);
  CHECK(a.token.empty());
  CHECK(t.live() == 1);
  Lock& c = t.take(0x1f);
  CHECK(&c == &a);  // the slot and its object are reused
  CHECK(c.id == "0-1f");
  CHECK(c.holds == 1);
  CHECK(t.find("0-1f") == &c);
}

TEST_CASE("lock table: tokens do not repeat", "[memory][locks]") {
  LockTable t;
  std::set<std::string> tokens;
  for (std::uint64_t fence = 1; fence <= 2000; ++fence) {
    Lock& l = t.take(fence);
    CHECK(tokens.insert(l.token).second);
    t.give_back(l);
  }
}
