// Validation shared by every backend: turns a LockRequest into resolved codes
// and canonical paths, or throws InvalidRequest. Private to the library.
#pragma once

#include <pathlock/engine.hpp>

#include <string>
#include <vector>

namespace pathlock::core {

struct ResolvedTarget {
  int code = 0;      // (operation, role) code in the matrix
  std::string path;  // canonical
};

struct ResolvedRequest {
  int op = 0;
  std::vector<ResolvedTarget> targets;  // in the matrix's role order
  bool reentry = false;                 // reenter_id and reenter_token are set
};

// Validates `request` against `matrix`. Throws InvalidRequest.
ResolvedRequest resolve_request(const MatrixTable& matrix, const LockRequest& request);
// Validates a conversion: its proof, and its operation, targets, ttl, wait
// and key as an acquire's (no reentry). Throws InvalidRequest.
ResolvedRequest resolve_convert(const MatrixTable& matrix, const ConvertRequest& request);
// The LockRequest a conversion is judged and waits as (owner empty: a
// conversion keeps its lock's owner).
LockRequest as_lock_request(const ConvertRequest& request);

// Each throws InvalidRequest naming the field.
void check_namespace(std::string_view ns);
void check_owner(std::string_view owner);
void check_ttl(Millis ttl, std::string_view what = "ttl");
// A lock id as the engines make them: 1..kMaxIdBytes of [A-Za-z0-9-].
void check_lock_id(std::string_view id, std::string_view what = "id");
void check_token(std::string_view token, std::string_view what = "token");
void check_idempotency_key(std::string_view key);
// `text` for a log line: control characters (newline, ESC, DEL...) and a
// backslash as \xNN, invalid UTF-8 bytes too, so a value written into a
// line can neither start a line of its own nor send a terminal sequence.
std::string log_escape(std::string_view text);
// Canonical prefix for list(); throws InvalidRequest for a bad path.
std::string resolve_prefix(std::string_view prefix);

// A fresh random identifier of `bytes` bytes from the kernel's CSPRNG
// (getrandom, drawn in batches per thread; never shared across a fork),
// hex encoded. Throws BackendError if the kernel refuses.
std::string random_hex(std::size_t bytes);

// The request of a dry run (blockers): namespace, operation and targets
// checked as acquire checks them, and `limit` in 1..max. Throws InvalidRequest.
ResolvedRequest resolve_dry_run(const MatrixTable& matrix, std::string_view ns, std::string_view op,
                                const std::vector<Target>& targets, std::size_t limit, std::size_t max);
// The same for a conversion's (blockers(ConvertRequest)): its lock id, and
// its operation and targets; not its token.
ResolvedRequest resolve_conversion_dry_run(const MatrixTable& matrix, const ConvertRequest& request, std::size_t limit,
                                           std::size_t max);
// Throws InvalidRequest unless 1 <= limit <= max.
void check_limit(std::size_t limit, std::size_t max);
// Sorts blockers[from..]: strict ancestors (root first), the path, then
// descendants by path; by fence (or waiter id) within one path.
void order_blockers(std::vector<Blocker>& blockers, std::size_t from);

// Checks list_page's limit and cursor; returns the fence the cursor names
// (0 for the first page). Throws InvalidRequest.
std::uint64_t check_page(std::size_t limit, std::string_view after);
// A list_page call's arguments, checked: the canonical prefix and the fence
// its cursor names (0 for the first page). Throws InvalidRequest.
struct PageQuery {
  std::string prefix;
  std::uint64_t after = 0;
};
PageQuery check_list_page(std::string_view ns, std::string_view prefix, std::size_t limit, std::string_view after);
// list(ns, prefix) of a backend that pages: list_page() with the largest
// limit until the last page.
std::vector<LockInfo> list_by_pages(LockEngine& engine, std::string_view ns, std::string_view prefix);
// The page of `sorted` (all locks of a listing, in fence order) that
// list_page(limit, after) returns. Throws InvalidRequest like check_page.
ListPage page_of(std::vector<LockInfo> sorted, std::size_t limit, std::string_view after);

}  // namespace pathlock::core
