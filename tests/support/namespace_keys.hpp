// What a drained namespace may leave in Redis, checked without knowing the
// key layout.
//
// Every key of a namespace carries its hash tag "{NS}" (the one part of the
// layout every version keeps: it puts a namespace on one Cluster slot). A
// namespace whose locks and waiters are all gone, and whose expired entries
// have been reaped, may keep only the keys of one allow-list: the suffixes in
// kOnlyMeta (support/redis_server.hpp), compared with what follows
// "{NS}" and one separator. A change of the key layout that adds a key which
// legitimately outlives the locks updates that list, in that one place.
#pragma once

#include "support/redis_server.hpp"

#include <string>
#include <vector>

namespace pathlock::test {

// Every key on `server` with the hash tag of namespace `ns`, sorted.
std::vector<std::string> tagged_keys(const RedisServer& server, const std::string& ns);

// The keys of tagged_keys(server, ns) that are not in the allow-list of a
// drained namespace (see the file comment); empty when the namespace has
// drained.
std::vector<std::string> keys_left_after_drain(const RedisServer& server, const std::string& ns);

// One writing call that reaps what has ended in `ns` (a bounded number of
// locks and places in line per call), and leaves nothing behind: a grant of
// an upload of /reaped/by/a/write and its release. (Listing reaps nothing:
// it writes nothing.)
void reap_by_a_write(LockEngine& engine, const std::string& ns);

}  // namespace pathlock::test
