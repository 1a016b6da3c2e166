// The benchmarks' paths; see paths.hpp.
#include "paths.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace pathlock::bench {
namespace {

constexpr std::size_t kFanout = 16;

std::string parent_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == 0 ? std::string("/") : path.substr(0, slash);
}

}  // namespace

std::string held_path(int depth, std::size_t i) {
  std::string p = "/p";
  std::size_t x = i;
  for (int level = 0; level < depth - 2; ++level) {
    p += fmt::format("/{}{:02}", static_cast<char>('d' + level), x % kFanout);
    x /= kFanout;
  }
  return p + fmt::format("/h{:07}", i);
}

std::string probe_path(int depth, std::size_t held, unsigned client, std::size_t k) {
  const std::size_t span = std::max<std::size_t>(held, 4096);
  const std::size_t j = (k * 7919 + std::size_t{client} * 104729) % span;
  const std::string parent = parent_of(held_path(depth, j));
  return fmt::format("{}/q{:03}-{:03}", parent == "/" ? "" : parent, client, k % kRing);
}

std::size_t refused_index(std::size_t held, unsigned client, std::size_t k) {
  return ((k % kRing) * 7919 + std::size_t{client} * 104729) % std::max<std::size_t>(held, 1);
}

std::string refused_path(int depth, std::size_t held, unsigned client, std::size_t k) {
  return parent_of(held_path(depth, refused_index(held, client, k)));
}

std::vector<std::string> path_levels(const std::string& path) {
  std::vector<std::string> out;
  for (std::size_t at = path.find('/', 1); at != std::string::npos; at = path.find('/', at + 1))
    out.push_back(path.substr(0, at));
  out.push_back(path);
  return out;
}

}  // namespace pathlock::bench
