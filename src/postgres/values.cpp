// The values of the server-side functions' calls and replies (values.hpp).
#include "postgres/values.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace pathlock::postgres {

// A text[] (or int[], bigint[]) literal of `items`.
std::string array_literal(const std::vector<std::string>& items) {
  std::string out = "{";
  for (const std::string& item : items) {
    if (out.size() > 1) out += ',';
    out += '"';
    for (const char c : item) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  return out + "}";
}

// Splits a field joined by chr(1) (array_to_string(..., chr(1))).
std::vector<std::string> split_fields(std::string_view s) {
  std::vector<std::string> out;
  for (std::size_t at = 0; at <= s.size();) {
    const std::size_t end = std::min(s.find('\1', at), s.size());
    out.emplace_back(s.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

std::string text(const PGresult* r, int row, int col) { return PQgetvalue(r, row, col); }
long long number(const PGresult* r, int row, int col) { return std::atoll(PQgetvalue(r, row, col)); }
bool is_null(const PGresult* r, int row, int col) { return PQgetisnull(r, row, col) != 0; }

std::vector<Target> targets_of(std::string_view roles, std::string_view paths) {
  const std::vector<std::string> r = split_fields(roles), p = split_fields(paths);
  std::vector<Target> out;
  for (std::size_t i = 0; i < r.size() && i < p.size(); ++i) out.push_back(Target{r[i], p[i]});
  return out;
}

Relation relation_of(long long rel) {
  return rel == 1 ? Relation::held_ancestor : rel == 2 ? Relation::held_descendant : Relation::same;
}

MatrixArgs matrix_args(const MatrixTable& m, const core::ResolvedRequest& req) {
  std::vector<std::string> roles, codes, masks;
  for (const core::ResolvedTarget& t : req.targets) {
    roles.emplace_back(m.role_name_of_code(t.code));
    codes.push_back(std::to_string(t.code));
    for (std::size_t rel = 0; rel < kRelationCount; ++rel) {
      std::int64_t mask = 0;
      std::memcpy(&mask, &m.blockers[rel][static_cast<std::size_t>(t.code)], sizeof mask);
      masks.push_back(std::to_string(mask));
    }
  }
  return {array_literal(roles), array_literal(codes), array_literal(masks)};
}

std::string all_masks(const MatrixTable& m) {
  std::vector<std::string> masks;
  for (std::size_t code = 0; code < m.code_count; ++code)
    for (std::size_t rel = 0; rel < kRelationCount; ++rel) {
      std::int64_t mask = 0;
      std::memcpy(&mask, &m.blockers[rel][code], sizeof mask);
      masks.push_back(std::to_string(mask));
    }
  return array_literal(masks);
}

std::string paths_literal(const core::ResolvedRequest& req) {
  std::vector<std::string> paths;
  for (const core::ResolvedTarget& t : req.targets) paths.push_back(t.path);
  return array_literal(paths);
}

BlockersPage blockers_page(const PGresult* x, std::size_t limit) {
  BlockersPage out;
  const int rows = PQntuples(x);
  for (int i = 0; i < rows; ++i) {
    if (out.blockers.size() == limit) {
      out.truncated = true;
      break;
    }
    out.blockers.push_back(Blocker{text(x, i, 0) == "t", text(x, i, 1), text(x, i, 2), text(x, i, 3), text(x, i, 4),
                                   text(x, i, 5), text(x, i, 6), text(x, i, 7), relation_of(number(x, i, 8)),
                                   static_cast<std::uint64_t>(number(x, i, 9)),
                                   static_cast<std::uint32_t>(number(x, i, 10)), Millis{number(x, i, 11)},
                                   Millis{number(x, i, 12)}});
  }
  return out;
}

}  // namespace pathlock::postgres
