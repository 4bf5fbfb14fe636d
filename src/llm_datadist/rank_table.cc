// The rank table's parse and the derived ports (rank_table.h).  The rules
// are the Python package's, which had them before this file: the same
// tables give the same engine names and ports.
#include "rank_table.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "common/log.h"

namespace llm_datadist::internal {
namespace {

using nlohmann::json;

std::array<uint32_t, 256> Crc32Table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1U) != 0 ? 0xEDB88320U ^ (c >> 1) : c >> 1;
    t[i] = c;
  }
  return t;
}

// A value as Python's str() of a JSON scalar mostly writes it: a string as
// it is, anything else as JSON text.
std::string Text(const json &v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// rank_id as Python's int() takes it: an integer, a number (truncated), a
// bool, or a string holding an integer (spaces around it allowed).
bool RankId(const json &v, int64_t *rank) {
  if (v.is_number_integer() || v.is_boolean()) {
    *rank = v.is_boolean() ? (v.get<bool>() ? 1 : 0)
                           : (v.is_number_unsigned() ? static_cast<int64_t>(v.get<uint64_t>()) : v.get<int64_t>());
    return true;
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    // Outside int64_t the conversion is undefined: not a rank either.
    if (!std::isfinite(d) || d < -9.2233720368547758e18 || d >= 9.2233720368547758e18) return false;
    *rank = static_cast<int64_t>(d);
    return true;
  }
  if (!v.is_string()) return false;
  const std::string &s = v.get_ref<const std::string &>();
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return false;
  const size_t e = s.find_last_not_of(" \t\r\n") + 1;
  const std::string digits = s.substr(b, e - b);
  char *end = nullptr;
  errno = 0;
  const long long r = std::strtoll(digits.c_str(), &end, 10);
  if (errno != 0 || end == digits.c_str() || *end != '\0') return false;
  *rank = r;
  return true;
}

// A device's port as the engine name needs it: an integer or a string of
// digits, 1 to 65535.  Anything else (0, too large, "abc", 8000.5) would make
// an engine name no peer listens on, and the link would wait out its 10 s
// deadline before failing; refused here it fails at once.
bool Port(const json &v, std::string *port) {
  uint64_t n = 0;
  if (v.is_number_unsigned()) {
    n = v.get<uint64_t>();
  } else if (v.is_string()) {
    const std::string &s = v.get_ref<const std::string &>();
    if (s.empty() || s.size() > 5 || s.find_first_not_of("0123456789") != std::string::npos) return false;
    n = std::stoul(s);
  } else {
    return false;  // negative, float, bool, object...
  }
  if (n < 1 || n > 65535) return false;
  *port = std::to_string(n);
  return true;
}

// The engine of one device, or false (the ERROR line written) when it lacks
// rank_id or device_ip, its rank_id is no number or its port no port.
bool Device(const char *what, const json &d, const std::string &comm_name, const std::vector<uint32_t> &ranks,
            std::map<int64_t, RankEngine> *engines) {
  const bool has_rank = d.is_object() && d.contains("rank_id");
  const bool has_ip = d.is_object() && d.contains("device_ip");
  int64_t rank = 0;
  if (!has_rank || !has_ip || !RankId(d["rank_id"], &rank)) {
    std::string why = !has_rank && !has_ip ? "no rank_id and no device_ip"
                      : !has_rank          ? "no rank_id"
                      : !has_ip            ? "no device_ip"
                                           : "rank_id is not a number";
    ADXL_ERROR("%s: rank_table device %s: %s", what, d.dump().c_str(), why.c_str());
    return false;
  }
  const std::string ip = Text(d["device_ip"]);
  const bool v6 = ip.find(':') != std::string::npos;
  // device_port first; an explicit null there means no port, as the Python's d.get did.
  const char *port_key = d.contains("device_port") ? "device_port" : d.contains("port") ? "port" : nullptr;
  const json port = port_key != nullptr ? d[port_key] : json();
  std::string port_text;
  if (!port.is_null() && !Port(port, &port_text)) {
    ADXL_ERROR("%s: rank_table device %s (rank_id %lld): %s must be a port, 1 to 65535 (it is %s)", what,
               d.dump().c_str(), static_cast<long long>(rank), port_key, port.dump().c_str());
    return false;
  }
  RankEngine e;
  if (!port.is_null()) {
    e.engine = (v6 ? "[" + ip + "]:" : ip + ":") + port_text;
  } else if (std::count(ip.begin(), ip.end(), ':') == 1 || (!ip.empty() && ip[0] == '[')) {
    e.engine = ip;  // "ip:port" or "[ipv6]:port" already
  } else {
    size_t place = 0;
    for (size_t i = 0; i < ranks.size(); ++i) {
      if (static_cast<int64_t>(ranks[i]) == rank) place = i;
    }
    const std::string p = std::to_string(RankPort(comm_name, place));
    e.engine = (v6 ? "[" + ip + "]:" : ip + ":") + p;
    e.port_given = false;
  }
  (*engines)[rank] = std::move(e);
  return true;
}

}  // namespace

uint32_t Crc32(const std::string &bytes) {
  static const std::array<uint32_t, 256> table = Crc32Table();
  uint32_t c = 0xFFFFFFFFU;
  for (unsigned char b : bytes) c = table[(c ^ b) & 0xFFU] ^ (c >> 8);
  return c ^ 0xFFFFFFFFU;
}

uint32_t RankPort(const std::string &comm_name, size_t place) {
  return kRankPortBase + 4 * (Crc32(comm_name) % kRankPortSlots) + static_cast<uint32_t>(place);
}

Status ParseRankTable(const char *what, const std::string &rank_table, const std::string &comm_name,
                      const std::vector<uint32_t> &ranks, std::map<int64_t, RankEngine> *engines) {
  engines->clear();
  const json table = json::parse(rank_table, nullptr, /*allow_exceptions=*/false);
  bool shaped = table.is_object() && table.contains("server_list") && table["server_list"].is_array();
  if (shaped) {
    for (const json &server : table["server_list"]) {
      if (!server.is_object() || !server.contains("device") || !server["device"].is_array()) shaped = false;
    }
  }
  if (!shaped) {
    ADXL_ERROR("%s: rank_table must be JSON with server_list[].device[]", what);
    return LLM_PARAM_INVALID;
  }
  for (const json &server : table["server_list"]) {
    for (const json &d : server["device"]) {
      if (!Device(what, d, comm_name, ranks, engines)) return LLM_PARAM_INVALID;
    }
  }
  return LLM_SUCCESS;
}

}  // namespace llm_datadist::internal
