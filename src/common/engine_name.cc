#include "common/engine_name.h"

#include <arpa/inet.h>

#include "common/decimal.h"

namespace adxl {
namespace {

bool ParsePort(const std::string &s, uint16_t *port) {
  uint64_t v = 0;
  if (!ParseDecimal(s, 5, &v) || v > 65535) return false;
  *port = static_cast<uint16_t>(v);
  return true;
}

}  // namespace

bool ParseEngineName(const std::string &text, EngineName *out, std::string *why) {
  EngineName n;
  n.text = text;
  std::string port_text;
  bool has_port = false;
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos) {
      *why = "'" + text + "': missing ']' after an IPv6 address";
      return false;
    }
    n.host = text.substr(1, close - 1);
    n.ipv6 = true;
    if (close + 1 < text.size()) {
      if (text[close + 1] != ':') {
        *why = "'" + text + "': expected ':port' after ']'";
        return false;
      }
      port_text = text.substr(close + 2);
      has_port = true;
    }
    in6_addr a6;
    if (inet_pton(AF_INET6, n.host.c_str(), &a6) != 1) {
      *why = "'" + text + "': '" + n.host + "' is not a numeric IPv6 address";
      return false;
    }
  } else {
    size_t colon = text.find(':');
    if (colon != std::string::npos && text.find(':', colon + 1) != std::string::npos) {
      *why = "'" + text + "': IPv6 addresses must be written in brackets, e.g. [::1]:26000";
      return false;
    }
    n.host = text.substr(0, colon);
    if (colon != std::string::npos) {
      port_text = text.substr(colon + 1);
      has_port = true;
    }
    in_addr a4;
    if (inet_pton(AF_INET, n.host.c_str(), &a4) != 1) {
      *why = "'" + text + "': '" + n.host + "' is not a numeric IPv4 address";
      return false;
    }
  }
  if (has_port && !ParsePort(port_text, &n.port)) {
    *why = "'" + text + "': port '" + port_text + "' is not a number in [0, 65535]";
    return false;
  }
  *out = n;
  return true;
}

}  // namespace adxl
