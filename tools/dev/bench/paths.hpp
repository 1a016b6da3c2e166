// The paths every benchmark of pathlock locks (pathlock-bench's subjects
// and pathlock-memory-bench), so that their numbers describe one tree: held
// lock i of a world of depth D sits at held_path(D, i),
// /p/dXX/eXX/.../hNNNNNNN, D components, the intermediate folders spread
// with fanout 16 (subject.hpp says how the subjects use them).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace pathlock::bench {

std::string held_path(int depth, std::size_t i);
// The path client `client` locks in its pair number `k` when `held` locks
// are held: a sibling of held lock (k * prime) mod max(held, 4096).
std::string probe_path(int depth, std::size_t held, unsigned client, std::size_t k);
// The folder client `client` asks for in its refused acquire number `k`:
// the parent of held lock (k * prime) mod held. Requires held > 0.
std::string refused_path(int depth, std::size_t held, unsigned client, std::size_t k);
// Index of the held lock refused_path() is the parent of.
std::size_t refused_index(std::size_t held, unsigned client, std::size_t k);
// "/a/b/c" -> {"/a", "/a/b", "/a/b/c"}.
std::vector<std::string> path_levels(const std::string& path);

// Distinct measured paths per client (a ring, reused round robin).
constexpr std::size_t kRing = 1000;

}  // namespace pathlock::bench
