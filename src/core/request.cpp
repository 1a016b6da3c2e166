#include "core/request.hpp"

#include <pathlock/path.hpp>

#include <fmt/format.h>

#include <array>
#include <algorithm>
#include <iterator>
#include <cerrno>
#include <charconv>
#include <cstring>

#include <pthread.h>
#include <sys/random.h>

namespace pathlock::core {

void check_namespace(std::string_view ns) {
  if (ns.empty()) throw InvalidRequest("namespace is empty");
  if (ns.size() > kMaxNamespaceBytes)
    throw InvalidRequest(fmt::format("namespace is {} bytes; the limit is {}", ns.size(), kMaxNamespaceBytes));
  for (const char c : ns) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == ':' || c == '-';
    if (!ok) throw InvalidRequest(fmt::format("namespace '{}' has a character outside [A-Za-z0-9._:-]", ns));
  }
}

void check_owner(std::string_view owner) {
  if (owner.empty()) throw InvalidRequest("owner is empty");
  if (owner.size() > kMaxOwnerBytes)
    throw InvalidRequest(fmt::format("owner is {} bytes; the limit is {}", owner.size(), kMaxOwnerBytes));
  if (const auto problem = text_problem(owner)) throw InvalidRequest(fmt::format("owner has {}", *problem));
}

void check_ttl(Millis ttl, std::string_view what) {
  if (ttl < kMinTtl || ttl > kMaxTtl)
    throw InvalidRequest(fmt::format("{} {} ms is outside {}..{} ms", what, ttl.count(), kMinTtl.count(), kMaxTtl.count()));
}

namespace {
bool id_char(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-'; }
bool key_char(char c) { return id_char(c) || c == '.' || c == '_' || c == ':'; }
}  // namespace

void check_lock_id(std::string_view id, std::string_view what) {
  if (id.empty() || id.size() > kMaxIdBytes || !std::all_of(id.begin(), id.end(), id_char))
    throw InvalidRequest(fmt::format("{} must be 1..{} characters of [A-Za-z0-9-]", what, kMaxIdBytes));
}

namespace {
// Length of the valid UTF-8 sequence of 2..4 bytes at s[i], or 0.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  const std::size_t n = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k)
    if ((b(i + k) & 0xC0) != 0x80) return 0;
  if (n == 3 && ((c == 0xE0 && b(i + 1) < 0xA0) || (c == 0xED && b(i + 1) >= 0xA0))) return 0;  // overlong, surrogate
  if (n == 4 && ((c == 0xF0 && b(i + 1) < 0x90) || (c == 0xF4 && b(i + 1) >= 0x90))) return 0;  // overlong, > U+10FFFF
  return n;
}
}  // namespace

std::string log_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7F && c != '\\') {
      out += static_cast<char>(c);
      ++i;
    } else if (const std::size_t n = c >= 0x80 ? utf8_length(text, i) : 0;
               n > 0 && !(c == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0)) {
      out.append(text.substr(i, n));  // printable UTF-8 (C1 controls, U+0080..U+009F, are escaped below)
      i += n;
    } else {
      out += fmt::format("\\x{:02x}", c);
      ++i;
    }
  }
  return out;
}

void check_token(std::string_view token, std::string_view what) {
  if (token.empty() || token.size() > kMaxTokenBytes)
    throw InvalidRequest(fmt::format("{} must be 1..{} bytes", what, kMaxTokenBytes));
}

void check_idempotency_key(std::string_view key) {
  if (key.empty() || key.size() > kMaxIdempotencyKeyBytes || !std::all_of(key.begin(), key.end(), key_char))
    throw InvalidRequest(
        fmt::format("idempotency_key must be 1..{} characters of [A-Za-z0-9._:-]", kMaxIdempotencyKeyBytes));
}

std::string resolve_prefix(std::string_view prefix) {
  try {
    return normalize_path(prefix);
  } catch (const PathError& e) {
    throw InvalidRequest(fmt::format("prefix: {}", e.what()));
  }
}

ResolvedRequest resolve_request(const MatrixTable& matrix, const LockRequest& request) {
  check_namespace(request.ns);
  check_owner(request.owner);
  check_ttl(request.ttl);
  if (request.wait < Millis{0} || request.wait > kMaxTtl)
    throw InvalidRequest(fmt::format("wait {} ms is outside 0..{} ms", request.wait.count(), kMaxTtl.count()));

  ResolvedRequest out;
  if (!request.reenter_id.empty() || !request.reenter_token.empty()) {
    check_lock_id(request.reenter_id, "reenter_id");
    check_token(request.reenter_token, "reenter_token");
    if (!request.idempotency_key.empty())
      throw InvalidRequest("a reentry (reenter_id) takes no idempotency_key: the lock it proves is already known");
    out.reentry = true;
  }
  if (!request.idempotency_key.empty()) check_idempotency_key(request.idempotency_key);
  out.op = matrix.op_index(request.op);
  if (out.op < 0) throw InvalidRequest(fmt::format("unknown operation '{}'", request.op));
  const OpInfo& op = matrix.ops[static_cast<std::size_t>(out.op)];
  if (request.targets.size() != op.role_count) {
    std::string roles;
    for (std::size_t r = 0; r < op.role_count; ++r) roles += fmt::format("{}{}", r ? ", " : "", op.roles[r]);
    throw InvalidRequest(fmt::format("operation '{}' takes {} target(s) ({}), got {}", op.name, op.role_count, roles,
                                     request.targets.size()));
  }

  out.targets.resize(op.role_count);
  std::array<bool, kMaxRolesPerOp> seen{};
  for (const Target& t : request.targets) {
    const int code = matrix.code_of(out.op, t.role);
    if (code < 0) throw InvalidRequest(fmt::format("operation '{}' has no role '{}'", op.name, t.role));
    const auto r = static_cast<std::size_t>(code - op.first_code);
    if (seen[r]) throw InvalidRequest(fmt::format("role '{}' given twice", t.role));
    seen[r] = true;
    try {
      out.targets[r] = ResolvedTarget{code, normalize_path(t.path)};
    } catch (const PathError& e) {
      throw InvalidRequest(fmt::format("{} path: {}", t.role, e.what()));
    }
  }

  for (std::size_t k = 0; k < op.not_inside_count; ++k) {
    const auto inner = op.not_inside[k][0], outer = op.not_inside[k][1];
    if (path_within(out.targets[inner].path, out.targets[outer].path))
      throw InvalidRequest(fmt::format("{}: {} '{}' is {} {} '{}'", op.name, op.roles[inner], out.targets[inner].path,
                                       out.targets[inner].path == out.targets[outer].path ? "the same as" : "inside",
                                       op.roles[outer], out.targets[outer].path));
  }
  return out;
}

namespace {

// Fills `out` from the kernel's CSPRNG. Throws BackendError if it refuses.
void fill_random(unsigned char* out, std::size_t n) {
  for (std::size_t got = 0; got < n;) {
    const ssize_t r = getrandom(out + got, n - got, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw BackendError(fmt::format("getrandom failed: {}", std::strerror(errno)));
    }
    got += static_cast<std::size_t>(r);
  }
}

// Random bytes drawn ahead, per thread (random_hex).
struct Pool {
  unsigned char bytes[512];
  std::size_t used = sizeof bytes;
};
thread_local Pool t_pool;

// Empties the calling thread's pool. As the fork handler of a child it
// empties the one pool there is: only the thread that forked lives on in
// the child, which so never hands out its parent's next bytes. (Asking
// getpid() on every call instead would cost a system call per id: glibc no
// longer caches the pid.)
void forget_pool() { t_pool.used = sizeof t_pool.bytes; }

// False when the fork handler could not be registered (out of memory).
// Registered when the library is loaded, not at the first random_hex():
// a function-local static here once left a child forked during another
// thread's first call asleep for ever on its initialisation guard
// (docs/design.md#fork).
const bool fork_handler_registered = pthread_atfork(nullptr, nullptr, &forget_pool) == 0;

}  // namespace

std::string random_hex(std::size_t bytes) {
  // From the kernel's CSPRNG: ids are shown to other owners (in conflicts
  // and listings) and tokens prove ownership, so neither may be predictable
  // from the other or from earlier ones. Bytes are drawn 512 at a time per
  // thread (one getrandom() serves a few dozen ids and tokens; an acquire
  // needs two or three), and never reused: a process that forks draws
  // afresh, so parent and child never hand out the same token.
  static constexpr char kHex[] = "0123456789abcdef";
  if (!fork_handler_registered) forget_pool();  // without it, nothing is drawn ahead
  Pool& pool = t_pool;
  std::string out;
  out.reserve(bytes * 2);
  while (bytes > 0) {
    if (pool.used == sizeof pool.bytes) {
      fill_random(pool.bytes, sizeof pool.bytes);
      pool.used = 0;
    }
    const std::size_t n = std::min(bytes, sizeof pool.bytes - pool.used);
    for (std::size_t i = pool.used; i < pool.used + n; ++i) {
      out.push_back(kHex[pool.bytes[i] >> 4]);
      out.push_back(kHex[pool.bytes[i] & 15]);
    }
    pool.used += n;
    bytes -= n;
  }
  return out;
}

void check_limit(std::size_t limit, std::size_t max) {
  if (limit < 1 || limit > max) throw InvalidRequest(fmt::format("limit must be 1..{}, not {}", max, limit));
}

LockRequest as_lock_request(const ConvertRequest& request) {
  LockRequest r{request.ns, "", request.op, request.targets, request.ttl, request.wait, request.fair};
  r.idempotency_key = request.idempotency_key;
  return r;
}

ResolvedRequest resolve_convert(const MatrixTable& matrix, const ConvertRequest& request) {
  check_namespace(request.ns);
  check_lock_id(request.id, "id");
  check_token(request.token, "token");
  // The rest as an acquire of the new operation is checked (the owner does
  // not matter: the lock keeps its own).
  LockRequest as = as_lock_request(request);
  as.owner = "convert";
  return resolve_request(matrix, as);
}

ResolvedRequest resolve_dry_run(const MatrixTable& matrix, std::string_view ns, std::string_view op,
                                const std::vector<Target>& targets, std::size_t limit, std::size_t max) {
  check_limit(limit, max);
  // Validated as the request would be; the owner does not matter to it.
  return resolve_request(matrix, LockRequest{std::string(ns), "dry-run", std::string(op), targets});
}

ResolvedRequest resolve_conversion_dry_run(const MatrixTable& matrix, const ConvertRequest& request, std::size_t limit,
                                           std::size_t max) {
  check_lock_id(request.id, "id");
  return resolve_dry_run(matrix, request.ns, request.op, request.targets, limit, max);
}

void order_blockers(std::vector<Blocker>& blockers, std::size_t from) {
  const auto rank = [](Relation r) { return r == Relation::held_ancestor ? 0 : r == Relation::same ? 1 : 2; };
  std::stable_sort(blockers.begin() + static_cast<std::ptrdiff_t>(from), blockers.end(),
                   [&](const Blocker& a, const Blocker& b) {
                     if (rank(a.relation) != rank(b.relation)) return rank(a.relation) < rank(b.relation);
                     if (a.path.size() != b.path.size() && a.relation == Relation::held_ancestor)
                       return a.path.size() < b.path.size();
                     if (a.path != b.path) return a.path < b.path;
                     return a.fence != b.fence ? a.fence < b.fence : a.id < b.id;
                   });
}

std::uint64_t check_page(std::size_t limit, std::string_view after) {
  if (limit < 1 || limit > kMaxListLimit)
    throw InvalidRequest(fmt::format("limit must be 1..{}, not {}", kMaxListLimit, limit));
  if (after.empty()) return 0;
  std::uint64_t fence = 0;
  const auto [end, ec] = std::from_chars(after.data(), after.data() + after.size(), fence);
  if (ec != std::errc() || end != after.data() + after.size() || after.size() > 20)
    throw InvalidRequest(fmt::format("after '{}' is not a cursor returned by list_page", after));
  return fence;
}

PageQuery check_list_page(std::string_view ns, std::string_view prefix, std::size_t limit, std::string_view after) {
  check_namespace(ns);
  PageQuery q;
  q.prefix = resolve_prefix(prefix);
  q.after = check_page(limit, after);
  return q;
}

std::vector<LockInfo> list_by_pages(LockEngine& engine, std::string_view ns, std::string_view prefix) {
  std::vector<LockInfo> out;
  std::string after;
  do {
    ListPage page = engine.list_page(ns, prefix, kMaxListLimit, after);
    std::move(page.locks.begin(), page.locks.end(), std::back_inserter(out));
    after = std::move(page.next);
  } while (!after.empty());
  return out;
}

ListPage page_of(std::vector<LockInfo> sorted, std::size_t limit, std::string_view after) {
  const std::uint64_t from = check_page(limit, after);
  ListPage page;
  auto it = std::upper_bound(sorted.begin(), sorted.end(), from,
                             [](std::uint64_t f, const LockInfo& l) { return f < l.fence; });
  for (; it != sorted.end() && page.locks.size() < limit; ++it) page.locks.push_back(std::move(*it));
  if (it != sorted.end()) page.next = std::to_string(page.locks.back().fence);
  return page;
}

}  // namespace pathlock::core
