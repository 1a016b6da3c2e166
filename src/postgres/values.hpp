// The values the PostgreSQL backend sends to its server-side functions and
// reads back (src/postgres/functions.sql): array literals of a request's roles,
// codes, refusal masks and paths; fields joined by chr(1); a reply's cells.
// No connection here: postgres_engine.cpp and admin.cpp call these, and
// tests/postgres_values_test.cpp checks them without a server.
#pragma once

#include <pathlock/engine.hpp>
#include <pathlock/matrix_table.hpp>

#include "core/request.hpp"

#include <libpq-fe.h>

#include <string>
#include <string_view>
#include <vector>

namespace pathlock::postgres {

// A text[] (or int[], bigint[]) literal of `items`: each quoted, with `"`
// and `\` escaped.
std::string array_literal(const std::vector<std::string>& items);

// Splits a field joined by chr(1) (array_to_string(..., chr(1))).
std::vector<std::string> split_fields(std::string_view s);

// Cell (row, col) of a reply as text, as a number, or whether it is NULL.
std::string text(const PGresult* r, int row, int col);
long long number(const PGresult* r, int row, int col);
bool is_null(const PGresult* r, int row, int col);

// The targets of a row whose roles and paths are chr(1)-joined fields.
std::vector<Target> targets_of(std::string_view roles, std::string_view paths);

// The functions' relation numbers: 0 same, 1 held_ancestor, 2 held_descendant.
Relation relation_of(long long rel);

// The request's matrix data as array literals: role names, codes, and per
// target the refusal masks of its code for the relations same,
// held_ancestor and held_descendant (the acquire function's p_masks).
struct MatrixArgs {
  std::string roles, codes, masks;
};
MatrixArgs matrix_args(const MatrixTable& m, const core::ResolvedRequest& req);

// Every code's refusal masks (same, held_ancestor, held_descendant at 3c,
// 3c+1, 3c+2, 0-based) as a bigint[] literal: convert's p_refuse.
std::string all_masks(const MatrixTable& m);

// The request's paths as a text[] literal.
std::string paths_literal(const core::ResolvedRequest& req);

// The columns of pathlock.blockers, and its rows as a page of at most
// `limit` (truncated when there are more).
inline constexpr std::string_view kBlockerColumns =
    "queued, id, owner, op, role, path, requested_role, requested_path, relation, fence, holds, expires_in, waited";
BlockersPage blockers_page(const PGresult* x, std::size_t limit);

}  // namespace pathlock::postgres
