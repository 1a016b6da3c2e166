// The Redis Functions library of a matrix, built at run time.
//
// Contract: library_for(table) returns the complete text to pass to
// FUNCTION LOAD: a "#!lua name=..." line, a data chunk generated here from
// the MatrixTable (operations, roles, blockers, fingerprint) and from the
// C++ definitions of every limit the functions enforce (pathlock/engine.hpp,
// pathlock/path.hpp, the reservation cap of core/waiting.hpp), the key
// suffixes, the numbers of the layout (below) and the layout version, then
// the Lua runtime of lua/*.lua, one module per file (lua/README.md), which
// the build embeds (tools/cmake/EmbedLua.cmake -> lua_sources()). The same table
// gives the same bytes. The protocol the library implements, its keys,
// arguments, replies and versioning: docs/lua-protocol.md.
//
// Names are unique per library text: "pathlock_v<layout>_<h>", where <h> is
// a 64-bit FNV-1a hash of the whole text (data chunk and runtime) with the
// name left out. Libraries of several matrices, layouts and pathlock
// versions share one server, each calling its own functions; none replaces
// another (docs/lua-protocol.md#the-library).
//
// This target (pathlock_redis_library) has no hiredis dependency, so
// pathlock-matrixc can write the library of a compiled matrix to a file.
#pragma once

#include <pathlock/matrix_table.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace pathlock::redis {

// The version of the key layout and protocol the library implements. A
// namespace records the layout that created it (meta field "layout"); a
// library of another layout refuses it. Layout 1: pathlock 0.1 EVAL scripts;
// 2: one matrix per namespace; 3: several matrices share a namespace during
// a rolling deploy; 4: pathlock 0.2, reentry by proof and idempotency keys
// (docs/lua-protocol.md#versions).
inline constexpr int kLayoutVersion = 4;
// meta.layout of a namespace of layout 4 whose keys expire (protocol 4.2,
// docs/lua-protocol.md#expiry): every key of the namespace expires
// kExpiryMarginMs after the latest end of a lease, a reservation or the
// fence's time that any call set. Libraries before 4.2 refuse such a
// namespace (they would write it without moving the expiry); a library of
// 4.2 writes new and drained namespaces so, and serves namespaces of layout
// "4" (where an older library may still write) without expiry.
inline constexpr std::string_view kExpiringLayout = "4.2";
inline constexpr long long kExpiryMarginMs = 10000;

// The keys every function takes, in this order, after the namespace's
// prefix "pl:{NS}:" (the last is the SPUBLISH wake-up channel). The data
// chunk gives them to the Lua runtime as PL_KEY_SUFFIXES.
inline constexpr std::string_view kKeySuffixes[] = {"meta", "idx", "locks", "exp", "ent", "wq", "wexp", "wrec", "wake"};

// The numbers of the layout (docs/lua-protocol.md#keys): changing one changes
// the data layout. The data chunk gives each to the Lua runtime (PL_*).
// Global codes in idx and ent: tag * kCodesPerTag + the matrix's own code,
// tags 1..kMaxTags, written with kCodeDigits digits in entry members.
inline constexpr int kCodesPerTag = 100;
inline constexpr int kMaxTags = 99;
inline constexpr int kCodeDigits = 4;
// Fences: written with kFenceDigits digits; at most kMaxFence (2^53 - 1,
// exact in a double: Lua, JSON and double-precision clients).
inline constexpr int kFenceDigits = 16;
inline constexpr long long kMaxFence = (1LL << 53) - 1;
// Number arguments: at most kMaxDecimalDigits plain decimal digits.
inline constexpr int kMaxDecimalDigits = 15;
// KEYS[1] is at most the namespace plus kMaxKeyOverheadBytes bytes (the
// prefix before {NS} and the suffix).
inline constexpr int kMaxKeyOverheadBytes = 200;

// What one call does at most: expired locks (and ended places in line) it
// reaps, and locks one list call looks at (docs/lua-protocol.md#list).
inline constexpr int kReapLimit = 32;
inline constexpr int kListScan = 512;

struct Library {
  std::string name;             // FUNCTION LOAD library name: pathlock_v<layout>_<hash>
  std::string function_prefix;  // function names: prefix + "acquire", ...
  std::string code;             // the complete library text
};

// Throws std::invalid_argument if the table cannot be expressed (a name with
// a byte Lua cannot hold is still escaped, so in practice never).
Library library_for(const MatrixTable& table);

// "pl:{NS}:meta", "pl:{NS}:idx", ...: the KEYS of every function, for
// namespace `ns` (already validated).
std::vector<std::string> namespace_keys(std::string_view ns);
// One of them: "pl:{NS}:" + suffix (one of kKeySuffixes).
std::string namespace_key(std::string_view ns, std::string_view suffix);
// The SCAN MATCH pattern of every key of the namespaces whose names start
// with `prefix` ("pl:{" + prefix + "*"; namespace names hold no glob
// character).
std::string namespaces_key_pattern(std::string_view prefix);
// The namespace whose key `key` is with `suffix` ("pl:{NS}:meta" -> "NS"),
// or "" if `key` is not such a key.
std::string namespace_of_key(std::string_view key, std::string_view suffix);

struct LuaSource {
  std::string_view name;  // file name without ".lua"
  std::string_view text;
};
// The pathlock release that writes data layout `layout`
// (docs/lua-protocol.md#versions), for messages.
std::string layout_release(std::string_view layout);

// The embedded lua/*.lua files (generated source, see the CMake target):
// a constant-initialised array, so no call of this takes a first-use guard.
std::span<const LuaSource> lua_sources() noexcept;

}  // namespace pathlock::redis
