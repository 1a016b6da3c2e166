// Redis Cluster key slots, computed by the client (Redis Cluster spec, "Keys
// distribution model"): slot = CRC16(hashed part) mod 16384, where CRC16 is
// the XMODEM variant (polynomial 0x1021, initial value 0, no reflection) and
// the hashed part is the key's hash tag when it has one: the bytes between
// the first '{' and the first '}' after it, if that span is not empty;
// otherwise the whole key. Every key of a pathlock namespace starts with
// "pl:{NS}:", so a namespace lives in the slot of NS. Pure functions.
#pragma once

#include <cstdint>
#include <string_view>

namespace pathlock::redis {

inline constexpr int kSlotCount = 16384;

// CRC16/XMODEM of `data` (crc16("123456789") == 0x31C3).
std::uint16_t crc16(std::string_view data);

// The part of `key` that is hashed: its hash tag, or the whole key.
std::string_view hash_tag(std::string_view key);

// The cluster slot of `key`, in 0..16383.
int key_slot(std::string_view key);

}  // namespace pathlock::redis
