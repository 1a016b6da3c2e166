// The flat hash table of the path index (src/memory/flat_table.hpp) against
// a plain model, with colliding hashes to exercise probing and deletion.
#include "memory/flat_table.hpp"

#include <catch2/catch.hpp>

#include <deque>
#include <map>
#include <set>
#include <random>

using namespace pathlock::memory;

namespace {

struct Item {
  int key = 0;
};

}  // namespace

TEST_CASE("flat table: inserts, finds and erases agree with a map", "[memory][flat_table]") {
  FlatTable<Item> table;
  std::deque<Item> storage;
  std::map<int, Item*> model;
  std::mt19937 rng(11);
  // Few distinct hashes: long runs, wrap-around and backward shifts.
  auto hash = [](int key) { return static_cast<std::uint64_t>(key % 37) * 0x9e3779b97f4a7c15ULL; };
  for (int step = 0; step < 50000; ++step) {
    const int key = static_cast<int>(rng() % 3000);
    Item* found = table.find(hash(key), [&](const Item& i) { return i.key == key; });
    const auto it = model.find(key);
    REQUIRE(found == (it == model.end() ? nullptr : it->second));
    if (found && rng() % 2) {
      table.erase(hash(key), found);
      model.erase(it);
    } else if (!found) {
      Item& item = storage.emplace_back(Item{key});
      table.insert(hash(key), &item);
      model[key] = &item;
    }
    REQUIRE(table.size() == model.size());
    REQUIRE(table.size() * 4 <= table.capacity() * 3);
  }
  std::size_t seen = 0;
  table.for_each([&](Item& i) {
    ++seen;
    CHECK(model.at(i.key) == &i);
  });
  CHECK(seen == model.size());
  for (auto& [key, item] : model) table.erase(hash(key), item);
  CHECK(table.empty());
  CHECK(table.heap_bytes() == 0);  // an emptied table gives its memory back
}

TEST_CASE("flat table: the prefetching scan visits what for_each visits, at every size", "[memory][flat_table]") {
  FlatTable<Item> table;
  std::deque<Item> storage;
  auto hash = [](int key) { return static_cast<std::uint64_t>(key) * 0x9e3779b97f4a7c15ULL; };
  auto visited = [&](bool prefetched) {
    std::multiset<int> keys;
    auto f = [&](const Item& i) { keys.insert(i.key); };
    if (prefetched) table.for_each_prefetched(f);
    else table.for_each(f);
    return keys;
  };
  CHECK(visited(true).empty());  // no cells at all
  // Capacities below, at and above the distance it loads ahead.
  for (int key = 0; key < 300; ++key) {
    table.insert(hash(key), &storage.emplace_back(Item{key}));
    const std::multiset<int> seen = visited(true);
    REQUIRE(seen.size() == static_cast<std::size_t>(key) + 1);
    REQUIRE(seen == visited(false));
  }
}
