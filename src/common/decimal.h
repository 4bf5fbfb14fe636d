// ParseDecimal: a whole unsigned decimal string (digits only, at most
// max_digits of them) into *out; false for anything else (empty, a sign,
// spaces, other characters, too many digits).  The engine name's port and
// the NUMA node override parse with it.
#ifndef ADXL_COMMON_DECIMAL_H_
#define ADXL_COMMON_DECIMAL_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace adxl {

// max_digits at most 19, so that the value cannot overflow.
inline bool ParseDecimal(const std::string &s, size_t max_digits, uint64_t *out) {
  if (s.empty() || s.size() > max_digits) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

}  // namespace adxl

#endif  // ADXL_COMMON_DECIMAL_H_
