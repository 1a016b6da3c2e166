// PathIndex: the intention-lock index of one namespace of the embedded
// backend, a trie over path components. Private to src/memory/.
//
// Data layout. One Node per path component that some indexed Entry (a target
// of a held lock, or of a waiting request) lies at or below. Per node:
//   * children: a FlatTable keyed by the hash of the child's name (the name
//     itself is stored in the child), so a big folder costs one probe per
//     lookup, not a tree descent;
//   * slots: only the codes in use at or below the node (a few), each with,
//     per Kind (held / waiting): `here` = entries of that code exactly at the
//     node, `below` = entries strictly inside it, `first` = the intrusive list
//     of the entries counted in `here`, newest first;
//   * here_mask / below_mask per Kind: bit c set while here / below of code c
//     is non-zero.
// Pruned nodes go to a bounded spare list and are reused.
//
// Invariants:
//   I1 counters and masks equal the linked entries they describe;
//   I2 a node other than the root with zero counters has children; a node
//      with neither does not exist (unlink prunes it);
//   I3 an entry's `node` is the node of its path while it is linked.
//
// Queries (code r of the request, its three blocker masks from the matrix):
//   find_refusal walks the path once: O(depth) child lookups and mask tests,
//   whatever the number of entries. On a hit it names the canonical witness of
//   docs/design.md ("The conflicting lock a refusal names"): ancestors from the
//   root down, then the node itself (lowest code, newest entry = highest
//   fence, because the engine links a lock when it takes its fence), then
//   below: at each level the child with the smallest name whose subtree holds
//   a blocking code (a folder sorts before its contents, so that child's own
//   entries win over its subtree's). That descent scans the children of each
//   node on the way, on refusals only: a node with fewer than kOrderedAt
//   children is scanned whole, loading children some cells ahead (in a big
//   tree they are cache misses, which then overlap); a bigger one keeps its children in a
//   name-ordered set as well (built when it reaches kOrderedAt, dropped below
//   half of it), walked from the smallest name to the first child whose masks
//   show a blocking code: O(log n + the children skipped) instead of O(n).
//   A walk leaves a PathProbe (the deepest existing node); link() starts from
//   it, so a grant does not look the path up a second time.
//
// Thread safety: none; the namespace's mutex guards the index.
#pragma once

#include "memory/flat_table.hpp"

#include <pathlock/matrix_table.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace pathlock::memory {

struct Lock;    // defined by the engine; the index never looks inside
struct Waiter;  // idem
struct Node;

// Entries come in two kinds, each with its own counters and masks.
enum Kind : std::size_t { kHeld = 0, kWaiting = 1 };

// One target of a lock or of a waiter, linked into its node's slot list.
struct Entry {
  Lock* lock = nullptr;      // set for kHeld entries
  Waiter* waiter = nullptr;  // set for kWaiting entries
  Node* node = nullptr;      // while linked: the node of `path`
  int code = 0;
  std::string path;  // canonical
  Entry* prev = nullptr;
  Entry* next = nullptr;
};

struct Slot {
  int code = 0;
  std::uint32_t here[2] = {0, 0};   // by Kind
  std::uint32_t below[2] = {0, 0};  // by Kind
  Entry* first[2] = {nullptr, nullptr};
};

// Orders siblings by name, byte by byte (component-wise path order).
struct NameLess {
  bool operator()(const Node* a, const Node* b) const;
};

struct Node {
  Node* parent = nullptr;
  std::string name;  // this node's component; empty for the root
  std::uint64_t hash = 0;
  FlatTable<Node> children;
  CodeMask here_mask[2] = {0, 0};   // by Kind
  CodeMask below_mask[2] = {0, 0};  // by Kind
  std::vector<Slot> slots;          // codes used at or below; a few at most
  // The children in name order, kept only while there are many of them
  // (PathIndex::kOrderedAt), so a refusal does not scan a big folder.
  std::unique_ptr<std::set<Node*, NameLess>> ordered;

  Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  ~Node();

  Node* child(std::string_view name) const;
  // The slot of `code`, or null when no counter of it was ever used here.
  const Slot* find_slot(int code) const;
  bool unused() const;
};

// Where a walk along a path stopped: `deepest` is the deepest node of the
// path that exists and `offset` the position in the path where the
// components below it start; complete when `deepest` is the path's own node.
struct PathProbe {
  Node* deepest = nullptr;
  std::size_t offset = 1;
  bool complete = false;
};

// The held codes that refuse one requested code, by relation (from
// MatrixTable::blockers).
struct Blockers {
  CodeMask ancestor = 0;    // held at a strict ancestor of the request's path
  CodeMask same = 0;        // held at the path itself
  CodeMask descendant = 0;  // held strictly inside it
};

// The hash of a path component, as FlatTable keys use it.
std::uint64_t name_hash(std::string_view name);

class PathIndex {
 public:
  // Pruned nodes kept for reuse.
  static constexpr std::size_t kMaxSpareNodes = 1024;
  // A node keeps its children in name order from this many children on,
  // and drops the order below half of it.
  static constexpr std::size_t kOrderedAt = 1024;

  PathIndex() = default;
  PathIndex(const PathIndex&) = delete;
  PathIndex& operator=(const PathIndex&) = delete;

  // The entry of `kind` that refuses a target at canonical `path` whose
  // blockers are `b`, named by the canonical rule, or null. Sets `rel` on a
  // hit. Without a hit, fills `probe` (when given) for link().
  const Entry* find_refusal(std::string_view path, const Blockers& b, Kind kind, Relation& rel,
                            PathProbe* probe = nullptr) const;

  // Walks canonical `path` as far as it exists.
  PathProbe locate(std::string_view path) const;

  // The node of canonical `path`, or null.
  const Node* find(std::string_view path) const;

  // Adds `e` (its code and path set) to the index. `probe`, when given, is a
  // walk of e.path made since the last unlink(); the walk resumes there.
  void link(Entry& e, Kind kind, const PathProbe* probe = nullptr);

  // link(), then moves `e` behind the entries at its node that `newer` says
  // are newer than it: a lock's entries linked again after a refused
  // conversion keep their place in the newest-first order.
  void link_behind(Entry& e, Kind kind, const std::function<bool(const Entry&)>& newer);

  // Removes linked `e` and prunes the nodes nothing uses any more.
  void unlink(Entry& e, Kind kind);

  // The newest entry of `kind` with `code` exactly at `node`, or null; the
  // others follow through Entry::next.
  static const Entry* entries_at(const Node& node, int code, Kind kind);

  // Every entry of `kind` that refuses a target at canonical `path` whose
  // blockers are `b`: f(entry, relation) for those at strict ancestors
  // (root first), at the path, then below it; subtrees whose masks hold no
  // blocking code are skipped, so the cost is O(depth + entries found x
  // depth). Stops early when f returns false.
  using RefusalVisitor = std::function<bool(const Entry&, Relation)>;
  void for_each_refusal(std::string_view path, const Blockers& b, Kind kind, const RefusalVisitor& f) const;

  // Calls f(const Entry&) for every entry of `kind` at or below `node`.
  template <class F>
  static void for_each_entry(const Node& node, Kind kind, F&& f) {
    for (const Slot& s : node.slots)
      for (const Entry* e = s.first[kind]; e; e = e->next) f(*e);
    node.children.for_each([&](const Node& c) { for_each_entry(c, kind, f); });
  }

  const Node& root() const { return root_; }
  std::size_t spare_nodes() const { return spares_.size(); }

 private:
  static const Entry* first_with(const Node& node, CodeMask mask, Kind kind);
  static const Entry* find_below(const Node& node, CodeMask mask, Kind kind);
  static bool visit_slots(const Node& node, CodeMask mask, Kind kind, Relation rel, const RefusalVisitor& f);
  static bool visit_below(const Node& node, CodeMask mask, Kind kind, const RefusalVisitor& f);
  Node* child_for(Node* node, std::string_view part);

  Node root_;
  std::vector<std::unique_ptr<Node>> spares_;
};

}  // namespace pathlock::memory
