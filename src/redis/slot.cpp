// CRC16/XMODEM and the hash-tag rule; see slot.hpp.
#include "redis/slot.hpp"

#include <array>

namespace pathlock::redis {
namespace {

// Byte-at-a-time table of the polynomial 0x1021 (MSB first).
constexpr std::array<std::uint16_t, 256> make_table() {
  std::array<std::uint16_t, 256> table{};
  for (unsigned byte = 0; byte < 256; ++byte) {
    unsigned crc = byte << 8;
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 0x8000u) ? ((crc << 1) ^ 0x1021u) : (crc << 1);
    table[byte] = static_cast<std::uint16_t>(crc & 0xFFFFu);
  }
  return table;
}

constexpr std::array<std::uint16_t, 256> kTable = make_table();

}  // namespace

std::uint16_t crc16(std::string_view data) {
  unsigned crc = 0;
  for (const char c : data) {
    const unsigned index = ((crc >> 8) ^ static_cast<unsigned char>(c)) & 0xFFu;
    crc = ((crc << 8) ^ kTable[index]) & 0xFFFFu;
  }
  return static_cast<std::uint16_t>(crc);
}

std::string_view hash_tag(std::string_view key) {
  const std::size_t open = key.find('{');
  if (open == std::string_view::npos) return key;
  const std::size_t close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) return key;
  return key.substr(open + 1, close - open - 1);
}

int key_slot(std::string_view key) { return crc16(hash_tag(key)) % kSlotCount; }

}  // namespace pathlock::redis
