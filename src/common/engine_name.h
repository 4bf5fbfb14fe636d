// Engine names: "ipv4", "ipv4:port", "[ipv6]", "[ipv6]:port" (docs/contract.md §2).
//
// Numeric addresses only (no host names, no bare IPv6); the port is decimal
// in [0, 65535].  A port > 0 means the engine listens; 0 or none: client only.
#ifndef ADXL_SRC_COMMON_ENGINE_NAME_H_
#define ADXL_SRC_COMMON_ENGINE_NAME_H_

#include <cstdint>
#include <string>

namespace adxl {

struct EngineName {
  std::string text;  // exactly as given: the engine's identity
  std::string host;  // numeric address, without brackets
  bool ipv6 = false;
  uint16_t port = 0;
  bool listens() const { return port != 0; }
};

// Returns false and sets *why when `text` is not a valid engine name.
bool ParseEngineName(const std::string &text, EngineName *out, std::string *why);

}  // namespace adxl

#endif  // ADXL_SRC_COMMON_ENGINE_NAME_H_
