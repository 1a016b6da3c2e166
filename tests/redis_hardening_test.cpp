// Hardening of the Redis Functions library (lua/*.lua), against real
// redis-servers. Each test would fail on the EVAL scripts of layout 1:
//   * partial writes: an ACL user lacking any one command the library uses
//     never leaves the namespace half-written (a full-rights client then
//     finds the index exactly as the lock records say), and the engine
//     names the missing command before its first call;
//   * fences never go back, even after Redis lost all the data, and fences
//     up to 2^53 round-trip exactly;
//   * a refusal whose witness lies below a folder with 50,000 children
//     costs a few O(log n) searches, not a walk of the folder;
//   * paged listing does bounded work per call;
//   * reserve_ms is capped at 2000 ms;
//   * a namespace of another data layout is refused, naming both versions.
// The consistency checker below recomputes the index from the records; it is
// the executable form of the invariants of docs/lua-protocol.md.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <chrono>
#include <map>
#include <pathlock/engine.hpp>
#include <pathlock/path.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "redis/library.hpp"
#include "support/backends.hpp"
#include "support/redis_server.hpp"

using namespace pathlock;
using namespace std::chrono_literals;
using pathlock::test::RedisConnection;
using pathlock::test::RedisReply;
using pathlock::test::RedisServer;
using test::prefix_of;
using test::redis_engine;

namespace {

LockRequest request(const std::string& ns, const std::string& owner, const std::string& op, std::vector<Target> targets,
                    Millis ttl = 30000ms) {
  return LockRequest{ns, owner, op, std::move(targets), ttl, 0ms};
}

std::vector<std::string> split0(const std::string& s) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (true) {
    const std::size_t z = s.find('\0', at);
    out.push_back(s.substr(at, z == std::string::npos ? std::string::npos : z - at));
    if (z == std::string::npos) return out;
    at = z + 1;
  }
}

std::string spell(const std::string& path) {
  if (path == "/") return "";
  std::string s = path;
  for (char& ch : s)
    if (ch == '/') ch = '\1';
  return s;
}

// What the index of a namespace must hold (idx counts, entry members,
// expiry, idempotency keys, line, per-tag counts), recomputed from its lock
// and waiter records. Records (layouts 3 and 4) describe themselves:
// tag \0 first \0 roles \0 ...
struct ExpectedIndex {
  std::map<std::string, std::map<int, long long>> idx;
  std::set<std::string> ent, exp, waiters;
  std::map<std::string, std::string> keys;          // "k:" key -> lock id
  std::map<std::string, std::string> keys_stored;   // the idempotency key fields found
  std::map<int, std::pair<long long, long long>> tags;  // per tag: locks, places
  std::string problems;                             // records that could not be read
  std::map<std::string, std::string> converting;    // waiter id -> the lock its conversion converts

  void add_target(int code, const std::string& path, const char* here, const char* below) {
    idx[here + path][code] += 1;
    std::string node = path;
    while (node != "/") {
      node = node.substr(0, node.rfind('/'));
      if (node.empty()) node = "/";
      idx[below + node][code] += 1;
    }
  }

  static void head(const std::vector<std::string>& parts, int& tag, int& first, std::size_t& roles) {
    tag = std::stoi(parts.at(0));
    first = std::stoi(parts.at(1));
    roles = static_cast<std::size_t>(std::count(parts.at(2).begin(), parts.at(2).end(), ',')) + 1;
  }

  // tag first roles op fence holds ttl exp #token #owner #key token+owner+key+path1 \0 path2 ...
  void add_lock(const std::string& field, const std::string& value) {
    if (field.find(':') != std::string::npos) {  // an idempotency key field
      keys_stored[field] = value;
      return;
    }
    const std::vector<std::string> parts = split0(value);
    if (parts.size() < 12) {
      problems += "malformed record " + field + "\n";
      return;
    }
    int tag = 0, first = 0;
    std::size_t roles = 0;
    head(parts, tag, first, roles);
    const std::size_t tl = std::stoul(parts[8]), ol = std::stoul(parts[9]), kl = std::stoul(parts[10]);
    std::size_t body = 0;
    for (int k = 0; k < 11; ++k) body = value.find('\0', body) + 1;
    const std::string rest = value.substr(body);
    const std::string key = rest.substr(tl + ol, kl);
    const std::vector<std::string> paths = split0(rest.substr(tl + ol + kl));
    if (paths.size() != roles) {
      problems += "record " + field + " has the wrong number of paths\n";
      return;
    }
    tags[tag].first += 1;
    for (std::size_t r = 0; r < paths.size(); ++r) {
      const int code = tag * 100 + first + static_cast<int>(r);
      add_target(code, paths[r], "h", "b");
      ent.insert(fmt::format("{:04d}", code) + spell(paths[r]) + std::string(1, '\0') + parts[4] + field);
    }
    ent.insert("F" + parts[4] + field);
    exp.insert(field + "@" + parts[7]);
    if (!key.empty()) keys["k:" + key] = field;
  }

  // tag first roles op since #owner owner+path1 \0 path2 ...; and "v:" id ->
  // the lock a waiting conversion converts (protocol 4.5).
  void add_waiter(const std::string& id, const std::string& value) {
    if (id.rfind("v:", 0) == 0) {
      converting[id.substr(2)] = value;
      return;
    }
    const std::vector<std::string> parts = split0(value);
    int tag = 0, first = 0;
    std::size_t roles = 0;
    head(parts, tag, first, roles);
    std::size_t body = 0;
    for (int k = 0; k < 6; ++k) body = value.find('\0', body) + 1;
    const std::size_t ol = std::stoul(parts.at(5));
    const std::vector<std::string> paths = split0(value.substr(body + ol));
    for (std::size_t r = 0; r < paths.size(); ++r) add_target(tag * 100 + first + static_cast<int>(r), paths[r], "wh", "wb");
    tags[tag].second += 1;
    waiters.insert(id);
  }
};

// The field -> value pairs of hash `key`.
std::vector<std::pair<std::string, std::string>> hash_of(RedisConnection& c, const std::string& key) {
  const RedisReply r = c.command({"HGETALL", key});
  std::vector<std::pair<std::string, std::string>> out;
  for (std::size_t i = 0; i + 1 < r.elements.size(); i += 2) out.emplace_back(r.elements[i].str, r.elements[i + 1].str);
  return out;
}

// meta: one tag per matrix in use, with its counts; none for a matrix that
// has nothing left.
std::string meta_differences(RedisConnection& c, const std::string& p, const ExpectedIndex& want) {
  std::map<int, std::pair<long long, long long>> have;
  for (const auto& [f, v] : hash_of(c, p + "meta"))
    if (f.size() > 2 && (f[0] == 'l' || f[0] == 'w') && f[1] == ':') {
      auto& counts = have[std::stoi(f.substr(2))];
      (f[0] == 'l' ? counts.first : counts.second) = std::stoll(v);
    }
  return have == want.tags ? "" : "meta's per-matrix counts do not match the records\n";
}

// idx: "code:count,..." per node, nothing more.
std::string idx_differences(RedisConnection& c, const std::string& p, const ExpectedIndex& want) {
  std::map<std::string, std::string> want_text;
  for (const auto& [field, counts] : want.idx) {
    std::string text;
    for (const auto& [code, n] : counts) text += (text.empty() ? "" : ",") + fmt::format("{}:{}", code, n);
    want_text[field] = text;
  }
  std::map<std::string, std::string> have_text;
  for (const auto& [f, v] : hash_of(c, p + "idx")) have_text[f] = v;
  std::string out;
  for (const auto& [f, v] : want_text)
    if (have_text.count(f) == 0 || have_text[f] != v)
      out += "idx " + f + " is '" + have_text[f] + "', expected '" + v + "'\n";
  for (const auto& [f, v] : have_text)
    if (want_text.count(f) == 0) out += "idx " + f + " = '" + v + "' counts nothing\n";
  return out;
}

// ent, exp, the idempotency keys and the line.
std::string set_differences(RedisConnection& c, const std::string& p, const ExpectedIndex& want) {
  const auto members = [&](const std::string& key) {
    std::set<std::string> out;
    for (const RedisReply& e : c.command({"ZRANGE", p + key, "0", "-1"}).elements) out.insert(e.str);
    return out;
  };
  std::string out;
  const std::set<std::string> have_ent = members("ent");
  if (have_ent != want.ent) out += fmt::format("ent has {} members, expected {}\n", have_ent.size(), want.ent.size());
  std::set<std::string> have_exp;
  const RedisReply exp = c.command({"ZRANGE", p + "exp", "0", "-1", "WITHSCORES"});
  for (std::size_t i = 0; i + 1 < exp.elements.size(); i += 2)
    have_exp.insert(exp.elements[i].str + "@" + exp.elements[i + 1].str);
  if (have_exp != want.exp) out += "exp does not match the records\n";
  if (want.keys_stored != want.keys) out += "idempotency key fields do not match the records\n";
  if (members("wq") != want.waiters || members("wexp") != want.waiters)
    out += "the line does not match the waiter records\n";
  for (const auto& [waiter, lock] : want.converting)
    if (want.waiters.count(waiter) == 0) out += "v:" + waiter + " (converting " + lock + ") has no place in line\n";
  return out;
}

// Recomputes the index of namespace `ns` from its records and compares it
// with what is stored. Returns the differences ("" when consistent).
std::string inconsistencies(RedisConnection& c, const MatrixTable& /*m*/, const std::string& ns) {
  const std::string p = prefix_of(ns);
  ExpectedIndex want;
  for (const auto& [field, value] : hash_of(c, p + "locks")) want.add_lock(field, value);
  for (const auto& [id, value] : hash_of(c, p + "wrec")) want.add_waiter(id, value);
  return want.problems + meta_differences(c, p, want) + idx_differences(c, p, want) + set_differences(c, p, want);
}

RedisReply fcall(RedisConnection& c, const MatrixTable& m, const std::string& function, const std::string& ns,
                 const std::vector<std::string>& args) {
  const redis::Library lib = redis::library_for(m);
  std::vector<std::string> argv{"FCALL", lib.function_prefix + function, "9"};
  for (const std::string& k : redis::namespace_keys(ns)) argv.push_back(k);
  argv.insert(argv.end(), args.begin(), args.end());
  return c.command(argv);
}

// Calls per command since the last CONFIG RESETSTAT.
std::map<std::string, long long> command_calls(RedisConnection& c) {
  std::map<std::string, long long> out;
  const std::string info = c.command({"INFO", "commandstats"}).str;
  for (std::size_t at = 0; (at = info.find("cmdstat_", at)) != std::string::npos;) {
    const std::size_t colon = info.find(':', at);
    out[info.substr(at + 8, colon - at - 8)] = std::stoll(info.substr(info.find("calls=", colon) + 6));
    at = colon;
  }
  return out;
}

}  // namespace

TEST_CASE("a user lacking any one command never leaves a half-written namespace", "[redis][hardening]") {
  RedisServer server;
  const MatrixTable& m = default_matrix();
  const std::string hostport = server.url().substr(std::string("redis://").size());
  RedisConnection admin(server.url());
  admin.command({"FUNCTION", "LOAD", "REPLACE", redis::library_for(m).code});
  const std::vector<std::string> commands{"HSET",           "HDEL",          "ZADD",   "ZREM",      "HMGET",
                                          "HGET",           "ZRANGEBYSCORE", "ZRANGE", "ZREVRANGE", "ZRANGEBYLEX",
                                          "ZREVRANGEBYLEX", "ZMSCORE",       "TIME",   "SPUBLISH"};
  for (const std::string& cmd : commands) {
    INFO("user lacking " << cmd);
    const std::string user = "lacks_" + cmd;
    REQUIRE_FALSE(admin.command({"ACL", "SETUSER", user, "on", ">pw", "~*", "&*", "+@all", "-" + cmd}).is_error());
    const std::string ns = "acl-" + cmd;
    // Full rights: a lock to release, one that expires (to reap), a waiter.
    auto full = redis_engine(server.url());
    const auto held = full->acquire(request(ns, "a", "upload", {{"target", "/p/A/f"}}));
    REQUIRE(held.granted());
    const auto twice = full->acquire(request(ns, "a", "upload", {{"target", "/p/A/f"}}).reenter(held.grant));
    REQUIRE(twice.grant.holds == 2);
    auto keyed = request(ns, "b", "move_folder", {{"src", "/q/x"}, {"dst", "/q/y"}}, 20ms);
    keyed.idempotency_key = "short-key";  // its key field is reaped with it
    const auto shortlived = full->acquire(keyed);
    REQUIRE(shortlived.granted());
    RedisConnection limited("redis://" + user + ":pw@" + hostport);
    REQUIRE(fcall(admin, m, "acquire", ns, {"w", "delete_folder", "30000", "wid", "wt", "", "", "", "/p", "1", "wA", "2000"})
                .elements.at(0)
                .str == "refused");
    std::this_thread::sleep_for(40ms);  // shortlived has expired: every call below reaps it first

    // As the limited user: every function, each of which would write.
    const std::vector<std::pair<std::string, std::vector<std::string>>> calls{
        {"acquire", {"c", "create", "30000", "n1", "t1", "", "", "", "/r/new"}},
        {"acquire", {"c", "upload", "30000", "n2", "t2", "", "", "", "/p/A/f"}},
        {"acquire", {"c", "upload", "30000", "n4", "t4", "", "", "key-4", "/r/keyed"}},
        {"acquire", {"c", "upload", "30000", "n5", "t5", held.grant.id, held.grant.token, "", "/p/A/f"}},
        {"acquire", {"d", "delete_folder", "30000", "n3", "t3", "", "", "", "/p", "1", "wB", "2000"}},
        {"release", {held.grant.id, held.grant.token}},
        {"renew", {held.grant.id, held.grant.token, "60000"}},
        {"list", {"/", "10", ""}},
        {"list_ro", {"/", "10", ""}},
        {"leave", {"wA"}},
        {"convert", {"", "upload", "30000", "", "", held.grant.id, held.grant.token, "", "/p/A/g"}},
        {"convert", {"", "delete_folder", "30000", "", "", held.grant.id, held.grant.token, "", "/p", "1", "wC", "2000"}},
        {"force_release", {held.grant.id}},
    };
    for (const auto& [function, args] : calls) {
      INFO(function);
      const RedisReply r = fcall(limited, m, function, ns, args);
      // Either it ran, or it was refused before its first write.
      CHECK(inconsistencies(admin, m, ns) == "");
      (void)r;
    }
    // The engine names the missing command up front (SPUBLISH: a warning).
    if (cmd != "SPUBLISH") {
      auto engine = redis_engine("redis://" + user + ":pw@" + hostport);
      // (Listing writes nothing and probes nothing: a writing call.)
      CHECK_THROWS_WITH(engine->acquire(request(ns, "e", "upload", {{"target", "/probed/x"}})),
                        Catch::Contains(cmd) && Catch::Contains("may not run"));
    }
    // Full rights again: everything can be cleaned up, leaving only meta.
    for (const LockInfo& l : full->list(ns)) CHECK(full->force_release(ns, l.id));
    fcall(admin, m, "leave", ns, {"wA"});
    fcall(admin, m, "leave", ns, {"wB"});
    fcall(admin, m, "leave", ns, {"wC"});
    CHECK(inconsistencies(admin, m, ns) == "");
    CHECK(test::ns_keys(server, ns) == test::kOnlyMeta);
  }
}

TEST_CASE("a service user without FUNCTION rights works once an administrator loaded the library",
          "[redis][hardening][acl]") {
  // docs/operations.md#trust-model: ordinary service users get FCALL of the
  // lock functions and nothing of FUNCTION (LOAD, FLUSH, DELETE are writes).
  RedisServer server;
  const std::string hostport = server.url().substr(std::string("redis://").size());
  RedisConnection admin(server.url());
  REQUIRE_FALSE(
      admin.command({"ACL", "SETUSER", "svc", "on", ">pw", "~*", "&*", "+@all", "-function"}).is_error());
  const std::string url = "redis://svc:pw@" + hostport;
  const std::string ns = test::unique_namespace("svc");

  // Library missing and the user may not load it: a clear error, nothing held.
  auto early = redis_engine(url);
  CHECK_THROWS_WITH(early->acquire(request(ns, "a", "upload", {{"target", "/p/f"}})),
                    Catch::Contains("may not load it") && Catch::Contains("administrator"));

  // An administrator's engine loads it; the service user's engine then works.
  auto admin_engine = redis_engine(server.url());
  auto engine = redis_engine(url);
  const auto got = engine->acquire(request(ns, "a", "upload", {{"target", "/p/f"}}));
  REQUIRE(got.granted());
  CHECK_FALSE(admin_engine->acquire(request(ns, "b", "delete_folder", {{"target", "/p"}})).granted());
  CHECK(engine->release(ns, got.grant.id, got.grant.token));
}

TEST_CASE("fences never go back, even when Redis lost every key - they are exact up to 2^53", "[redis][hardening]") {
  RedisServer server;
  auto engine = redis_engine(server.url());
  const std::string ns = "fences";
  const auto first = engine->acquire(request(ns, "o", "upload", {{"target", "/a"}}));
  REQUIRE(first.granted());
  // A restart without persistence: everything is gone, including meta.
  REQUIRE_FALSE(server.command({"FLUSHALL"}).is_error());
  const auto second = engine->acquire(request(ns, "o", "upload", {{"target", "/a"}}));
  REQUIRE(second.granted());
  CHECK(second.grant.fence > first.grant.fence);

  // Near 2^53 every fence is still exact: in replies, listings and entries.
  const std::uint64_t high = (std::uint64_t{1} << 53) - 3;
  REQUIRE_FALSE(server.command({"HSET", prefix_of(ns) + "meta", "fence", std::to_string(high)}).is_error());
  const auto near = engine->acquire(request(ns, "o", "upload", {{"target", "/b"}}));
  REQUIRE(near.granted());
  CHECK(near.grant.fence == high + 1);
  const auto listed = engine->list(ns, "/b");
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].fence == high + 1);
  const auto refused = engine->acquire(request(ns, "p", "delete_folder", {{"target", "/"}}));
  REQUIRE_FALSE(refused.granted());
  CHECK(engine->release(ns, near.grant.id, near.grant.token));
  const auto last = engine->acquire(request(ns, "o", "upload", {{"target", "/c"}}));
  REQUIRE(last.granted());
  CHECK(last.grant.fence == high + 2);
  // Beyond 2^53 - 1 there is no exact fence: a clear error, nothing changed.
  CHECK_THROWS_WITH(engine->acquire(request(ns, "o", "upload", {{"target", "/d"}})), Catch::Contains("2^53"));
  CHECK(engine->list(ns).size() == 2);
  RedisConnection c(server.url());
  CHECK(inconsistencies(c, default_matrix(), ns) == "");
}

TEST_CASE("a refusal below a folder with 50,000 children costs a few O(log n) searches", "[redis][hardening]") {
  RedisServer server;
  const MatrixTable& m = default_matrix();
  auto engine = redis_engine(server.url());
  const std::string ns = "wide";
  RedisConnection c(server.url());
  c.command({"FUNCTION", "LOAD", "REPLACE", redis::library_for(m).code});
  const redis::Library lib = redis::library_for(m);
  const std::vector<std::string> keys = redis::namespace_keys(ns);
  constexpr int kChildren = 50000;
  const auto fill_start = std::chrono::steady_clock::now();
  for (int i = 0; i < kChildren; i += 1000) {
    for (int j = i; j < i + 1000; ++j) {
      std::vector<std::string> argv{"FCALL", lib.function_prefix + "acquire", "9"};
      argv.insert(argv.end(), keys.begin(), keys.end());
      argv.insert(argv.end(), {"filler", "copy_file", "600000", fmt::format("f{}", j), "t", "", "", "",
                               fmt::format("/w/c{:05d}", j), fmt::format("/o/c{:05d}", j)});
      c.append(argv);
    }
    for (int j = i; j < i + 1000; ++j) REQUIRE(c.get().elements.at(0).str == "granted");
  }
  const double fill_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - fill_start).count();
  // Every child of /w is read by a copy_file, which does not refuse a copy of
  // /w; the one witness is an upload deep below the last child (a walk of
  // the children in byte order would visit all 50,000 first).
  const auto deep = engine->acquire(request(ns, "deep", "upload", {{"target", "/w/c49999/x/y"}}));
  REQUIRE(deep.granted());

  c.command({"CONFIG", "RESETSTAT"});
  const auto t0 = std::chrono::steady_clock::now();
  const auto refused = engine->acquire(request(ns, "d", "copy_folder", {{"src", "/w"}, {"dst", "/z"}}));
  const double refusal_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE_FALSE(refused.granted());
  CHECK(refused.conflict.path == "/w/c49999/x/y");
  CHECK(refused.conflict.id == deep.grant.id);
  CHECK(refused.conflict.relation == Relation::held_descendant);
  std::map<std::string, long long> calls = command_calls(c);
  long long inner = 0;
  for (const auto& [name, n] : calls)
    if (name != "fcall" && name != "config|resetstat" && name != "info") inner += n;
  INFO("commands inside the refused acquire: " << inner);
  CHECK(calls["zrange"] <= 1);  // the line's head (ZRANGE wexp 0 0), never a folder's children
  CHECK(calls.at("fcall") == 1);
  CHECK(inner <= 15);
  std::printf("wide folder: filled %d children in %.1f s; refusal with witness below: %.2f ms, %lld commands\n",
              kChildren, fill_s, refusal_ms, inner);
}

TEST_CASE("one page of a listing does bounded work - the pages cover every lock once", "[redis][hardening]") {
  RedisServer server;
  auto engine = redis_engine(server.url());
  const std::string ns = "pages";
  std::set<std::string> ids;
  for (int i = 0; i < 1300; ++i) {
    const auto r = engine->acquire(request(ns, "o", "upload", {{"target", fmt::format("/d{}/f{}", i % 3, i)}}));
    REQUIRE(r.granted());
    ids.insert(r.grant.id);
  }
  RedisConnection c(server.url());
  c.command({"CONFIG", "RESETSTAT"});
  const ListPage first = engine->list_page(ns, "/", kMaxListLimit, "");
  CHECK(first.locks.size() <= 512);  // the function looks at 512 locks at most
  CHECK_FALSE(first.next.empty());
  const std::map<std::string, long long> calls = command_calls(c);
  CHECK(calls.at("hmget") <= 2);  // meta and one batch of records
  // Every lock exactly once, by fence; with a prefix, only its locks.
  std::set<std::string> seen;
  std::uint64_t last = 0;
  std::string after;
  int pages = 0;
  do {
    const ListPage page = engine->list_page(ns, "/d1", 100, after);
    for (const LockInfo& l : page.locks) {
      CHECK(l.fence > last);
      last = l.fence;
      CHECK(path_within(l.targets.at(0).path, "/d1"));
      CHECK(seen.insert(l.id).second);
    }
    after = page.next;
    ++pages;
  } while (!after.empty());
  CHECK(seen.size() == 1300 / 3);
  CHECK(pages >= 3);
  CHECK(engine->list(ns).size() == ids.size());
}

TEST_CASE("a place in line is reserved for at most 2 s, whatever reserve_ms asks", "[redis][hardening]") {
  const RedisServer& server = test::shared_redis_server();
  const MatrixTable& m = default_matrix();
  const std::string ns = test::unique_namespace("reserve");
  RedisConnection c(server.url());
  c.command({"FUNCTION", "LOAD", "REPLACE", redis::library_for(m).code});
  REQUIRE(fcall(c, m, "acquire", ns, {"h", "upload", "30000", "i1", "t1", "", "", "", "/a/f"}).elements.at(0).str == "granted");
  const RedisReply r =
      fcall(c, m, "acquire", ns, {"w", "delete_folder", "30000", "i2", "t2", "", "", "", "/a", "1", "wX", "600000"});
  REQUIRE(r.elements.at(0).str == "refused");
  const RedisReply now = c.command({"TIME"});
  const double now_ms = std::stod(now.elements.at(0).str) * 1000 + std::stod(now.elements.at(1).str) / 1000;
  const double until = std::stod(c.command({"ZSCORE", prefix_of(ns) + "wexp", "wX"}).str);
  CHECK(until <= now_ms + 2000);
  CHECK(until > now_ms + 1000);
  CHECK(fcall(c, m, "leave", ns, {"wX"}).elements.at(1).integer == 1);
  CHECK(fcall(c, m, "release", ns, {"i1", "t1"}).elements.at(0).str == "released");
}

TEST_CASE("a namespace of another data layout is refused, naming both layouts", "[redis][hardening]") {
  const RedisServer& server = test::shared_redis_server();
  auto engine = redis_engine(server.url());
  // Layout 1 (pathlock 0.1): meta without a layout field, a fence key.
  const std::string old_ns = test::unique_namespace("layout1");
  server.command({"HSET", prefix_of(old_ns) + "meta", "fingerprint", std::string(default_matrix().fingerprint),
                  "matrix", "cloud-drive", "version", "1.0.0"});
  server.command({"SET", prefix_of(old_ns) + "fence", "7"});
  CHECK_THROWS_WITH(engine->acquire(request(old_ns, "o", "upload", {{"target", "/a"}})),
                    Catch::Contains("layout 1") && Catch::Contains("layout 4"));
  CHECK_THROWS_AS(engine->list(old_ns), BackendError);
  // Layout 2 (one matrix per namespace), and a future layout.
  const std::string v2_ns = test::unique_namespace("layout2");
  server.command({"HSET", prefix_of(v2_ns) + "meta", "layout", "2", "fingerprint", "feed", "fence", "9"});
  CHECK_THROWS_WITH(engine->acquire(request(v2_ns, "o", "upload", {{"target", "/a"}})),
                    Catch::Contains("layout 2") && Catch::Contains("layout 4"));
  const std::string new_ns = test::unique_namespace("layout5");
  server.command({"HSET", prefix_of(new_ns) + "meta", "layout", "5"});
  CHECK_THROWS_WITH(engine->release(new_ns, "id", "tok"), Catch::Contains("layout 5") && Catch::Contains("layout 4"));
  CHECK(server.keys(prefix_of(old_ns) + "*").size() == 2);  // nothing written
}

namespace {

// Every field and member of namespace `ns`, with its value or score, but
// meta's (key + field -> value): what a refused conversion must leave
// exactly as it was. (Not DUMP: a field removed and written back moves in
// a small hash's encoding, with the same content.)
std::map<std::string, std::string> stored(RedisConnection& c, const std::string& ns) {
  std::map<std::string, std::string> out;
  for (const char* key : {"idx", "locks", "wrec"})
    for (const auto& [f, v] : hash_of(c, prefix_of(ns) + key)) out[std::string(key) + " " + f] = v;
  for (const char* key : {"exp", "ent", "wq", "wexp"}) {
    const RedisReply r = c.command({"ZRANGE", prefix_of(ns) + key, "0", "-1", "WITHSCORES"});
    for (std::size_t i = 0; i + 1 < r.elements.size(); i += 2)
      out[std::string(key) + " " + r.elements[i].str] = r.elements[i + 1].str;
  }
  return out;
}

}  // namespace

TEST_CASE("conversions keep the index exact, and a refused conversion changes nothing stored",
          "[redis][hardening][convert]") {
  const RedisServer& server = test::shared_redis_server();
  const MatrixTable& m = default_matrix();
  auto engine = redis_engine(server.url());
  RedisConnection c(server.url());
  const std::string ns = test::unique_namespace("convert-index");
  // Locks over a small tree, so that conversions meet them at every relation.
  const std::vector<std::string> paths{"/p", "/p/A", "/p/A/x", "/p/B", "/q", "/q/A/y"};
  std::vector<Grant> held;
  for (std::size_t i = 0; i < paths.size(); ++i)
    if (const AcquireResult r = engine->acquire(request(ns, "o" + std::to_string(i), "upload", {{"target", paths[i]}})))
      held.push_back(r.grant);
  const std::vector<std::pair<std::string, std::vector<Target>>> to{
      {"delete_folder", {{"target", "/p"}}},      {"upload", {{"target", "/p/A/z"}}},
      {"copy_folder", {{"src", "/p/A"}, {"dst", "/r/A"}}}, {"move_folder", {{"src", "/q"}, {"dst", "/r/q"}}},
      {"rename_file", {{"target", "/p/B"}}},      {"create", {{"target", "/s"}}}};
  int granted = 0, refused = 0;
  for (int step = 0; step < 60; ++step) {
    Grant& g = held[static_cast<std::size_t>(step) % held.size()];
    const auto& [op, targets] = to[static_cast<std::size_t>(step * 7) % to.size()];
    INFO("step " << step << ": lock " << g.id << " to " << op << " " << targets.front().path);
    const auto before = stored(c, ns);
    const AcquireResult r = engine->convert(ConvertRequest::of(ns, g, op, targets));
    if (r.granted()) {
      ++granted;
      CHECK(r.grant.id == g.id);
      CHECK(r.grant.fence > g.fence);
      g = r.grant;
    } else {
      ++refused;
      REQUIRE(r.outcome == AcquireOutcome::conflicted);
      CHECK(stored(c, ns) == before);
    }
    REQUIRE(inconsistencies(c, m, ns) == "");
  }
  CHECK(granted > 5);
  CHECK(refused > 5);
  for (const Grant& g : held) CHECK(engine->release(ns, g.id, g.token));
  CHECK(inconsistencies(c, m, ns) == "");
  CHECK(test::ns_keys(server, ns) == test::kOnlyMeta);
}
