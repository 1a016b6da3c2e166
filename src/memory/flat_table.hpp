// FlatTable: an open-addressing hash table of pointers, for the path index
// (children of a trie node, keyed by the hash of their name). Private to the
// embedded backend.
//
// Layout: one array of {hash, pointer} cells, a power-of-two capacity, linear
// probing; a cell with a null pointer is empty. The table never owns the
// pointed-to objects and never stores keys: the caller passes the hash and an
// equality test on the object, so a lookup costs one hash, usually one cache
// line of cells, and one comparison on the object whose hash matched.
// Deletion shifts the following cells back (no tombstones), so a table that
// sees a steady stream of inserts and erases never degrades.
//
// Invariants: size_ <= capacity * 3/4; every element sits in the run of
// occupied cells that starts at its home cell (hash & mask) without a gap.
// An empty table holds no memory; it halves when less than an eighth is used,
// so an emptied folder gives its table back.
//
// Thread safety: none; the owner's mutex guards it.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>

namespace pathlock::memory {

template <class T>
class FlatTable {
 public:
  FlatTable() = default;
  FlatTable(const FlatTable&) = delete;
  FlatTable& operator=(const FlatTable&) = delete;
  FlatTable(FlatTable&& other) noexcept { swap(other); }
  FlatTable& operator=(FlatTable&& other) noexcept {
    FlatTable moved(std::move(other));
    swap(moved);
    return *this;
  }

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::size_t capacity() const { return capacity_; }

  // The element with this hash for which same(element) is true, or null.
  template <class Same>
  T* find(std::uint64_t hash, Same&& same) const {
    if (size_ == 0) return nullptr;
    for (std::size_t i = hash & (capacity_ - 1);; i = (i + 1) & (capacity_ - 1)) {
      const Cell& c = cells_[i];
      if (!c.item) return nullptr;
      if (c.hash == hash && same(*c.item)) return c.item;
    }
  }

  // Adds `item` (not null, not present). May move cells: pointers into the
  // table are never handed out, so nothing dangles.
  void insert(std::uint64_t hash, T* item) {
    if ((size_ + 1) * 4 > capacity_ * 3) resize(capacity_ ? capacity_ * 2 : kMinCapacity);
    place(hash, item);
    ++size_;
  }

  // Removes `item`, which must be present with this hash.
  void erase(std::uint64_t hash, const T* item) {
    const std::size_t mask = capacity_ - 1;
    std::size_t i = hash & mask;
    while (cells_[i].item != item) i = (i + 1) & mask;
    // Backward shift: move later cells of the run into the hole when their
    // home cell does not lie (cyclically) between the hole and them.
    for (std::size_t j = (i + 1) & mask;; j = (j + 1) & mask) {
      if (!cells_[j].item) break;
      const std::size_t home = cells_[j].hash & mask;
      const bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
      if (stays) continue;
      cells_[i] = cells_[j];
      i = j;
    }
    cells_[i] = Cell{};
    --size_;
    if (size_ == 0) {
      cells_.reset();
      capacity_ = 0;
    } else if (capacity_ > kMinCapacity && size_ * 8 < capacity_) {
      resize(capacity_ / 2);
    }
  }

  // Calls f(T&) for every element, in no particular order.
  template <class F>
  void for_each(F&& f) const {
    for (std::size_t i = 0; i < capacity_; ++i)
      if (cells_[i].item) f(*cells_[i].item);
  }

  // for_each(f), loading the elements a few cells ahead of f: for a scan
  // that reads every element of a big table whose elements are cold (a
  // refusal's descent in a folder of a big tree), so their cache misses
  // overlap instead of coming one after another.
  template <class F>
  void for_each_prefetched(F&& f) const {
    constexpr std::size_t kAhead = 16;
    for (std::size_t i = 0; i < capacity_; ++i) {
      if (i + kAhead < capacity_) __builtin_prefetch(cells_[i + kAhead].item);  // a null one is a no-op
      if (cells_[i].item) f(*cells_[i].item);
    }
  }

  // Heap bytes held by the table itself.
  std::size_t heap_bytes() const { return capacity_ * sizeof(Cell); }

 private:
  static constexpr std::size_t kMinCapacity = 4;
  struct Cell {
    std::uint64_t hash = 0;
    T* item = nullptr;
  };

  void place(std::uint64_t hash, T* item) {
    std::size_t i = hash & (capacity_ - 1);
    while (cells_[i].item) i = (i + 1) & (capacity_ - 1);
    cells_[i] = Cell{hash, item};
  }
  void resize(std::size_t capacity) {
    std::unique_ptr<Cell[]> old = std::move(cells_);
    const std::size_t old_capacity = capacity_;
    cells_ = std::make_unique<Cell[]>(capacity);
    capacity_ = capacity;
    for (std::size_t i = 0; i < old_capacity; ++i)
      if (old[i].item) place(old[i].hash, old[i].item);
  }
  void swap(FlatTable& other) noexcept {
    std::swap(cells_, other.cells_);
    std::swap(capacity_, other.capacity_);
    std::swap(size_, other.size_);
  }

  std::unique_ptr<Cell[]> cells_;
  std::size_t capacity_ = 0;
  std::size_t size_ = 0;
};

}  // namespace pathlock::memory
