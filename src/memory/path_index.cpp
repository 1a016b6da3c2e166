// The path index of the embedded backend; the design is in path_index.hpp.
#include "memory/path_index.hpp"

#include <cstdlib>
#include <functional>

#include <pathlock/path.hpp>

namespace pathlock::memory {
namespace {

Slot& slot_for(Node& node, int code) {
  for (Slot& s : node.slots)
    if (s.code == code) return s;
  Slot& s = node.slots.emplace_back();
  s.code = code;
  return s;
}

void count_below(Node& node, int code, Kind kind) {
  Slot& s = slot_for(node, code);
  if (s.below[kind]++ == 0) node.below_mask[kind] |= CodeMask{1} << code;
}

}  // namespace

std::uint64_t name_hash(std::string_view name) { return std::hash<std::string_view>{}(name); }

bool NameLess::operator()(const Node* a, const Node* b) const { return a->name < b->name; }

Node::~Node() {
  children.for_each([](Node& c) { delete &c; });
}

Node* Node::child(std::string_view n) const {
  return children.find(name_hash(n), [&](const Node& c) { return c.name == n; });
}

const Slot* Node::find_slot(int code) const {
  for (const Slot& s : slots)
    if (s.code == code) return &s;
  return nullptr;
}

bool Node::unused() const {
  return (here_mask[kHeld] | below_mask[kHeld] | here_mask[kWaiting] | below_mask[kWaiting]) == 0 && children.empty();
}

const Entry* PathIndex::entries_at(const Node& node, int code, Kind kind) {
  const Slot* s = node.find_slot(code);
  return s ? s->first[kind] : nullptr;
}

const Entry* PathIndex::first_with(const Node& node, CodeMask mask, Kind kind) {
  // Lowest code first; the list is newest first (the highest fence).
  const Slot* s = node.find_slot(__builtin_ctzll(mask));
  if (!s) std::abort();  // a mask bit without its slot breaks I1
  return s->first[kind];
}

const Entry* PathIndex::find_below(const Node& node, CodeMask mask, Kind kind) {
  const Node* at = &node;
  while (true) {
    const Node* best = nullptr;  // smallest name whose subtree holds a code of mask
    if (at->ordered) {
      for (const Node* c : *at->ordered)
        if ((c->here_mask[kind] | c->below_mask[kind]) & mask) {
          best = c;
          break;
        }
    } else {
      at->children.for_each_prefetched([&](const Node& c) {
        if (((c.here_mask[kind] | c.below_mask[kind]) & mask) && (!best || c.name < best->name)) best = &c;
      });
    }
    if (!best) return nullptr;  // unreachable while I1 holds
    if (const CodeMask here = best->here_mask[kind] & mask) return first_with(*best, here, kind);
    at = best;
  }
}

const Entry* PathIndex::find_refusal(std::string_view path, const Blockers& b, Kind kind, Relation& rel,
                                     PathProbe* probe) const {
  const Node* node = &root_;
  std::size_t pos = 1;
  std::string_view part;
  while (true) {
    const std::size_t before = pos;
    if (!next_path_component(path, pos, part)) break;
    if (const CodeMask m = node->here_mask[kind] & b.ancestor) {
      rel = Relation::held_ancestor;
      return first_with(*node, m, kind);
    }
    // A grant will count this node's slots next: start loading them now
    // (in a big tree, the slots of a folder are a cache miss of their own).
    __builtin_prefetch(node->slots.data());
    const Node* next = node->child(part);
    if (!next) {
      if (probe) *probe = PathProbe{const_cast<Node*>(node), before, false};
      return nullptr;
    }
    node = next;
  }
  if (const CodeMask m = node->here_mask[kind] & b.same) {
    rel = Relation::same;
    return first_with(*node, m, kind);
  }
  if (const CodeMask m = node->below_mask[kind] & b.descendant) {
    rel = Relation::held_descendant;
    return find_below(*node, m, kind);
  }
  if (probe) *probe = PathProbe{const_cast<Node*>(node), path.size(), true};
  return nullptr;
}

bool PathIndex::visit_slots(const Node& node, CodeMask mask, Kind kind, Relation rel, const RefusalVisitor& f) {
  for (const Slot& s : node.slots) {
    if (!((mask >> s.code) & 1u)) continue;
    for (const Entry* e = s.first[kind]; e; e = e->next)
      if (!f(*e, rel)) return false;
  }
  return true;
}

bool PathIndex::visit_below(const Node& node, CodeMask mask, Kind kind, const RefusalVisitor& f) {
  bool go_on = true;
  node.children.for_each([&](const Node& c) {
    if (!go_on || !((c.here_mask[kind] | c.below_mask[kind]) & mask)) return;
    if (c.here_mask[kind] & mask) go_on = visit_slots(c, mask, kind, Relation::held_descendant, f);
    if (go_on && (c.below_mask[kind] & mask)) go_on = visit_below(c, mask, kind, f);
  });
  return go_on;
}

void PathIndex::for_each_refusal(std::string_view path, const Blockers& b, Kind kind, const RefusalVisitor& f) const {
  const Node* node = &root_;
  std::size_t pos = 1;
  std::string_view part;
  while (next_path_component(path, pos, part)) {
    if ((node->here_mask[kind] & b.ancestor) && !visit_slots(*node, b.ancestor, kind, Relation::held_ancestor, f))
      return;
    node = node->child(part);
    if (!node) return;
  }
  if ((node->here_mask[kind] & b.same) && !visit_slots(*node, b.same, kind, Relation::same, f)) return;
  if (node->below_mask[kind] & b.descendant) visit_below(*node, b.descendant, kind, f);
}

PathProbe PathIndex::locate(std::string_view path) const {
  const Node* node = &root_;
  std::size_t pos = 1;
  std::string_view part;
  while (true) {
    const std::size_t before = pos;
    if (!next_path_component(path, pos, part)) return PathProbe{const_cast<Node*>(node), path.size(), true};
    const Node* next = node->child(part);
    if (!next) return PathProbe{const_cast<Node*>(node), before, false};
    node = next;
  }
}

const Node* PathIndex::find(std::string_view path) const {
  const PathProbe p = locate(path);
  return p.complete ? p.deepest : nullptr;
}

Node* PathIndex::child_for(Node* node, std::string_view part) {
  const std::uint64_t h = name_hash(part);
  if (Node* c = node->children.find(h, [&](const Node& x) { return x.name == part; })) return c;
  Node* c = nullptr;
  if (!spares_.empty()) {
    c = spares_.back().release();
    spares_.pop_back();
  } else {
    c = new Node();
  }
  c->parent = node;
  c->name.assign(part);
  c->hash = h;
  node->children.insert(h, c);
  if (node->ordered) {
    node->ordered->insert(c);
  } else if (node->children.size() >= kOrderedAt) {
    node->ordered = std::make_unique<std::set<Node*, NameLess>>();
    node->children.for_each([&](Node& x) { node->ordered->insert(&x); });
  }
  return c;
}

void PathIndex::link(Entry& e, Kind kind, const PathProbe* probe) {
  Node* node = probe ? probe->deepest : &root_;
  std::size_t pos = probe ? probe->offset : 1;
  for (Node* up = node->parent; up; up = up->parent) count_below(*up, e.code, kind);
  std::string_view part;
  while (next_path_component(e.path, pos, part)) {
    count_below(*node, e.code, kind);
    node = child_for(node, part);
  }
  Slot& s = slot_for(*node, e.code);
  if (s.here[kind]++ == 0) node->here_mask[kind] |= CodeMask{1} << e.code;
  e.node = node;
  e.prev = nullptr;
  e.next = s.first[kind];
  if (s.first[kind]) s.first[kind]->prev = &e;
  s.first[kind] = &e;
}

void PathIndex::link_behind(Entry& e, Kind kind, const std::function<bool(const Entry&)>& newer) {
  link(e, kind);
  Slot& s = slot_for(*e.node, e.code);
  while (e.next && newer(*e.next)) {
    Entry* n = e.next;
    if (e.prev) e.prev->next = n;
    else s.first[kind] = n;
    n->prev = e.prev;
    e.next = n->next;
    if (n->next) n->next->prev = &e;
    n->next = &e;
    e.prev = n;
  }
}

void PathIndex::unlink(Entry& e, Kind kind) {
  const CodeMask bit = CodeMask{1} << e.code;
  Node* node = e.node;
  Slot& s = slot_for(*node, e.code);
  if (e.prev) e.prev->next = e.next;
  else s.first[kind] = e.next;
  if (e.next) e.next->prev = e.prev;
  e.prev = e.next = nullptr;
  e.node = nullptr;
  if (--s.here[kind] == 0) node->here_mask[kind] &= ~bit;
  for (Node* up = node->parent; up; up = up->parent) {
    Slot& us = slot_for(*up, e.code);
    if (--us.below[kind] == 0) up->below_mask[kind] &= ~bit;
  }
  while (node != &root_ && node->unused()) {
    Node* parent = node->parent;
    parent->children.erase(node->hash, node);
    if (parent->ordered) {
      parent->ordered->erase(node);
      if (parent->children.size() < kOrderedAt / 2) parent->ordered.reset();
    }
    node->parent = nullptr;
    node->slots.clear();
    if (spares_.size() < kMaxSpareNodes) spares_.emplace_back(node);
    else delete node;
    node = parent;
  }
}

}  // namespace pathlock::memory
