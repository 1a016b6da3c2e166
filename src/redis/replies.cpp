// Reading the Functions library's replies; the layouts are in replies.hpp.
#include "redis/replies.hpp"

#include "core/request.hpp"
#include "redis/limits.hpp"
#include "redis/redis_client.hpp"

#include <fmt/format.h>

namespace pathlock::redis::reply {
namespace {

Millis millis(const Reply& r) { return Millis{r.number()}; }

// The id, owner and op that lead a listed lock or place in line.
template <class Info>
void read_who(const Reply& r, Info& out) {
  out.id = r.at(lock_row::id).text();
  out.owner = r.at(lock_row::owner).text();
  out.op = r.at(lock_row::op).text();
}

// {role_1, path_1, role_2, path_2, ...} as the functions reply targets.
std::vector<Target> targets_of(const Reply& r) {
  std::vector<Target> out;
  for (std::size_t t = 0; t + 1 < r.elements.size(); t += 2) out.push_back(Target{r.at(t).text(), r.at(t + 1).text()});
  return out;
}

Relation relation_of(const RedisClient& client, const std::string& name) {
  for (const Relation rel : {Relation::same, Relation::held_ancestor, Relation::held_descendant})
    if (relation_name(rel) == name) return rel;
  client.fail(fmt::format("a function reported an unknown relation '{}'", name));
}

}  // namespace

Grant read_grant(const Reply& r) {
  namespace f = granted;
  Grant g;
  g.id = r.at(f::id).text();
  g.token = r.at(f::token).text();
  g.fence = static_cast<std::uint64_t>(r.at(f::fence).number());
  g.expires_in = millis(r.at(f::expires_in_ms));
  g.holds = static_cast<std::uint32_t>(r.at(f::holds).number());
  return g;
}

Conflict read_conflict(const Reply& r, const RedisClient& client) {
  namespace f = refused;
  Conflict c;
  c.id = r.at(f::id).text();
  c.op = r.at(f::op).text();
  c.role = r.at(f::role).text();
  c.path = r.at(f::path).text();
  c.owner = r.at(f::owner).text();
  c.expires_in = millis(r.at(f::expires_in_ms));
  c.requested_role = r.at(f::requested_role).text();
  c.requested_path = r.at(f::requested_path).text();
  c.relation = relation_of(client, r.at(f::relation).text());
  c.queued = r.at(f::queued).number() != 0;
  return c;
}

std::optional<AcquireResult> read_attempt(const Reply& r, const RedisClient& client) {
  const std::string& status = r.at(granted::status).text();
  AcquireResult out;
  if (status == "granted") {
    out.outcome = AcquireOutcome::granted;
    out.grant = read_grant(r);
  } else if (status == "refused" || status == "would_deadlock") {
    if (status == "would_deadlock") out.outcome = AcquireOutcome::would_deadlock;
    out.conflict = read_conflict(r, client);
  } else if (status == "not_holder") {
    out.outcome = AcquireOutcome::not_holder;
  } else if (status == "over_limit") {
    out = read_over_limit(r, client);
  } else {
    return std::nullopt;
  }
  return out;
}

LockInfo read_lock(const Reply& row) {
  namespace f = lock_row;
  LockInfo info;
  read_who(row, info);
  info.fence = static_cast<std::uint64_t>(row.at(f::fence).number());
  info.holds = static_cast<std::uint32_t>(row.at(f::holds).number());
  info.expires_in = millis(row.at(f::expires_in_ms));
  info.targets = targets_of(row.at(f::targets));
  return info;
}

Blocker read_blocker(const Reply& x, const RedisClient& client) {
  namespace f = blocker_row;
  Blocker b;
  b.queued = x.at(f::queued).number() != 0;
  b.id = x.at(f::id).text();
  b.owner = x.at(f::owner).text();
  b.op = x.at(f::op).text();
  b.role = x.at(f::role).text();
  b.path = x.at(f::path).text();
  b.requested_role = x.at(f::requested_role).text();
  b.requested_path = x.at(f::requested_path).text();
  b.relation = relation_of(client, x.at(f::relation).text());
  b.fence = static_cast<std::uint64_t>(x.at(f::fence).number());
  b.holds = static_cast<std::uint32_t>(x.at(f::holds).number());
  b.expires_in = millis(x.at(f::expires_in_ms));
  b.waited = millis(x.at(f::waited_ms));
  return b;
}

WaiterInfo read_waiter(const Reply& x) {
  namespace f = waiter_row;
  WaiterInfo w;
  read_who(x, w);
  w.waited = millis(x.at(f::waited_ms));
  w.expires_in = millis(x.at(f::expires_in_ms));
  w.targets = targets_of(x.at(f::targets));
  if (x.elements.size() > f::converts) w.converts = x.at(f::converts).text();
  return w;
}

void order_rows(std::vector<Blocker>& rows) {
  std::size_t from = 0;
  for (std::size_t i = 1; i <= rows.size(); ++i) {
    if (i < rows.size() && rows[i].queued == rows[from].queued && rows[i].requested_role == rows[from].requested_role)
      continue;
    std::vector<Blocker> tail(rows.begin() + static_cast<std::ptrdiff_t>(i), rows.end());
    rows.resize(i);
    core::order_blockers(rows, from);
    rows.insert(rows.end(), tail.begin(), tail.end());
    from = i;
  }
}

}  // namespace pathlock::redis::reply
