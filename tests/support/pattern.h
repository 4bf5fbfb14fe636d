// Deterministic byte patterns and hashes shared by tests, the demo and the
// bench: both processes can compute what a buffer must hold.
#ifndef ADXL_TESTS_SUPPORT_PATTERN_H_
#define ADXL_TESTS_SUPPORT_PATTERN_H_

#include <cstddef>
#include <cstdint>

namespace adxl_test {

// Byte i of the pattern `seed` (i counted from the buffer start).
inline uint8_t PatternByte(uint64_t seed, uint64_t i) {
  uint64_t x = (seed + 1) * 0x9E3779B97F4A7C15ull + i * 0xBF58476D1CE4E5B9ull;
  x ^= x >> 31;
  x *= 0x94D049BB133111EBull;
  return static_cast<uint8_t>(x >> 56);
}

inline void FillPattern(void *buf, size_t len, uint64_t seed, uint64_t first_index = 0) {
  auto *p = static_cast<uint8_t *>(buf);
  for (size_t i = 0; i < len; ++i) p[i] = PatternByte(seed, first_index + i);
}

// FNV-1a, 64-bit.
inline uint64_t Hash(const void *buf, size_t len) {
  const auto *p = static_cast<const uint8_t *>(buf);
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < len; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace adxl_test

#endif  // ADXL_TESTS_SUPPORT_PATTERN_H_
