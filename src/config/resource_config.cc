#include "config/resource_config.h"

#include <cmath>
#include <cstdint>
#include <set>

#include <nlohmann/json.hpp>

#include "common/log.h"
#include "common/thread_annotations.h"

namespace adxl {
namespace {

using Json = nlohmann::json;

// Each not-applicable key is logged once per process, not once per engine.
Mutex g_seen_mu;  // a leaf
// Never destroyed: an engine may be initialized from a static destructor.
std::set<std::string> *const g_seen ADXL_PT_GUARDED_BY(g_seen_mu) = new std::set<std::string>();

void NotApplicableOnce(const std::string &option, const std::string &key, const char *why) {
  {
    MutexLock l(&g_seen_mu);
    if (!g_seen->insert(option + "/" + key).second) return;
  }
  ADXL_WARN("%s: '%s' is accepted but not applicable on this host: %s", option.c_str(), key.c_str(), why);
}

bool IsUbProtocol(const std::string &protocol) {
  return protocol == "ub_ctp" || protocol == "ub_tp" || protocol == "ub_rtp" || protocol == "uboe" ||
         protocol == "ubg";
}

// An integer in [lo, hi], given as a JSON number or a decimal string (the
// vendor's samples quote their numbers).
bool IntIn(const Json &v, const std::string &key, int64_t lo, int64_t hi, int64_t *out, std::string *why) {
  int64_t n = 0;
  bool ok = false;
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      ok = false;
    } else {
      n = v.get<int64_t>();
      ok = true;
    }
  } else if (v.is_string()) {
    const std::string s = v.get<std::string>();
    ok = !s.empty() && s.size() <= 18 && s.find_first_not_of("0123456789") == std::string::npos;
    if (ok) n = std::stoll(s);
  }
  if (!ok || n < lo || n > hi) {
    *why = key + ": expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + v.dump();
    return false;
  }
  *out = n;
  return true;
}

// A fraction in (0, 1), as a JSON number or a string.
bool Fraction(const Json &v, const std::string &key, double *out, std::string *why) {
  double d = -1;
  if (v.is_number()) {
    d = v.get<double>();
  } else if (v.is_string()) {
    const std::string s = v.get<std::string>();
    char *end = nullptr;
    // Strictly a decimal fraction ("0.8", ".8"): no sign, blanks, exponent or hex.
    if (s.empty() || s.find_first_not_of("0123456789.") != std::string::npos ||
        s.find('.') != s.rfind('.')) {
      d = -1;
    } else {
      d = strtod(s.c_str(), &end);
      if (*end != '\0') d = -1;
    }
  }
  if (!std::isfinite(d) || d <= 0 || d >= 1) {
    *why = key + ": expected a fraction in (0, 1), got " + v.dump();
    return false;
  }
  *out = d;
  return true;
}

bool ParseProtocols(const Json &v, std::vector<std::string> *out, std::string *why) {
  static const std::set<std::string> kKnown = {"hccs:host", "hccs:device", "roce:host", "roce:device"};
  const std::string key = "comm_resource_config.protocol_desc";
  std::vector<std::string> items;
  if (v.is_string()) {
    items.push_back(v.get<std::string>());
  } else if (v.is_array() && !v.empty()) {
    for (const auto &e : v) {
      if (!e.is_string()) {
        *why = key + ": list entries must be strings";
        return false;
      }
      items.push_back(e.get<std::string>());
    }
  } else {
    *why = key + ": expected a string or a non-empty list of strings";
    return false;
  }
  for (const auto &s : items) {
    if (IsUbProtocol(s.substr(0, s.find(':')))) {
      *why = key + ": '" + s + "' needs UB links, which no host here has; the lanes that exist are " +
             ExistingLanesText();
      return false;
    }
    if (kKnown.count(s) == 0) {
      *why = key + ": unknown value '" + s + "'; the lanes that exist are " + ExistingLanesText();
      return false;
    }
  }
  *out = items;
  return true;
}

// One GlobalResourceConfig key, dotted.
bool VisitGlobal(const std::string &option, const std::string &key, const Json &v, EngineOptions *o,
                 double waterline[2], std::string *why) {
  int64_t n = 0;
  if (key == "comm_resource_config.protocol_desc") return ParseProtocols(v, &o->protocols, why);
  if (key == "connect_pool.thread_num") {
    if (!IntIn(v, key, 1, 64, &n, why)) return false;
    o->connect_threads = static_cast<uint32_t>(n);
    return true;
  }
  if (key == "connect_pool.task_queue_capacity") {
    if (!IntIn(v, key, 1, 65535, &n, why)) return false;
    o->connect_queue_capacity = static_cast<uint32_t>(n);
    return true;
  }
  struct Range {
    const char *key;
    int64_t lo, hi;
    const char *why;
  };
  static const Range kRanges[] = {
      {"fabric_memory.max_capacity", 1, 1024, "the Fabric Mem virtual memory pool needs fabric VMM, which no host "
                                              "here has (EnableUseFabricMem=1 shares MallocMem blocks by mapping)"},
      {"fabric_memory.start_address", 0, 1024, "the Fabric Mem virtual memory pool needs fabric VMM"},
      {"fabric_memory.task_stream_num", 1, 8, "Fabric Mem copy streams are device streams"},
      {"comm_resource_config.listen_port", 1, 65535, "it is the device NIC's port; the engine listens on the port "
                                                     "of its own name"},
      {"comm_resource_config.max_active_channels", 1, UINT32_MAX, "links here have no device-side channels"},
      {"comm_resource_config.qos", 0, 7, "it is the device NICs' QoS level (the network lane's traffic class and "
                                         "service level are RdmaTrafficClass and RdmaServiceLevel)"},
  };
  for (const Range &r : kRanges) {
    if (key != r.key) continue;
    if (!IntIn(v, key, r.lo, r.hi, &n, why)) return false;
    NotApplicableOnce(option, key, r.why);
    return true;
  }
  // The channel pool (core/connector.h): on when any of its keys is given.
  if (key == "channel_pool.max_channel") {
    if (!IntIn(v, key, 1, 512, &n, why)) return false;
    o->pool_on = true;
    o->pool_max_channel = static_cast<uint32_t>(n);
    return true;
  }
  if (key == "channel_pool.high_waterline" || key == "channel_pool.low_waterline") {
    const bool high = key == "channel_pool.high_waterline";
    if (!Fraction(v, key, &waterline[high ? 0 : 1], why)) return false;
    o->pool_on = true;
    (high ? o->pool_high_waterline : o->pool_low_waterline) = waterline[high ? 0 : 1];
    return true;
  }
  ADXL_INFO("%s: key '%s' is not one the vendor documents; ignored", option.c_str(), key.c_str());
  return true;
}

}  // namespace

const char *ExistingLanesText() {
  return "hccs:host, hccs:device (same node: cross-memory attach or a shared mapping) and roce:host, roce:device "
         "(the network: RDMA verbs where a device exists, TCP otherwise)";
}

bool ApplyLocalCommResJson(const std::string &option, const std::string &text, std::string *why) {
  Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    *why = option + ": not a JSON object: '" + text + "'";
    return false;
  }
  // Serving frameworks pass the vendor's rank table here routinely: its keys
  // are expected, so one INFO line per process names them (not a WARN each).
  std::string described;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string &key = it.key();
    if (key == "version") {
      const Json &v = it.value();
      if (!v.is_string() || (v != "1.0" && v != "1.2" && v != "1.3")) {
        *why = option + ": version " + v.dump() + ": expected \"1.0\", \"1.2\" (ranktable) or \"1.3\"";
        return false;
      }
      continue;
    }
    if (key == "endpoint_list") {
      if (!it.value().is_array()) {
        *why = option + ": endpoint_list: expected a list";
        return false;
      }
      for (const auto &ep : it.value()) {
        const std::string protocol = ep.is_object() && ep.contains("protocol") && ep["protocol"].is_string()
                                         ? ep["protocol"].get<std::string>() : std::string();
        if (IsUbProtocol(protocol)) {
          *why = option + ": endpoint_list: protocol '" + protocol + "' needs UB links, which no host here has; "
                 "the lanes that exist are " + ExistingLanesText();
          return false;
        }
      }
    }
    described += (described.empty() ? "" : ", ") + key;
  }
  if (!described.empty()) {
    {
      MutexLock l(&g_seen_mu);
      if (!g_seen->insert(option + "/*").second) return true;
    }
    ADXL_INFO("%s: %s describe the vendor's devices (ranktable or endpoints); the engine finds its own interfaces "
              "(UCX), so they have no effect here",
              option.c_str(), described.c_str());
  }
  return true;
}

bool ApplyGlobalResourceConfigJson(const std::string &option, const std::string &text, EngineOptions *o,
                                   std::string *why) {
  Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    *why = option + ": not a JSON object: '" + text + "'";
    return false;
  }
  double waterline[2] = {0, 0};  // high, low; 0: not given
  // Keys come dotted ("a.b") as in the vendor's samples, or nested ({"a": {"b": ...}}).
  for (const auto &item : j.items()) {
    if (item.value().is_object()) {
      for (const auto &sub : item.value().items()) {
        if (!VisitGlobal(option, item.key() + "." + sub.key(), sub.value(), o, waterline, why)) return false;
      }
    } else if (!VisitGlobal(option, item.key(), item.value(), o, waterline, why)) {
      return false;
    }
  }
  if ((waterline[0] > 0) != (waterline[1] > 0) || (waterline[0] > 0 && waterline[1] >= waterline[0])) {
    *why = option + ": channel_pool.high_waterline and channel_pool.low_waterline go together, low below high";
    return false;
  }
  return true;
}

std::string ShowGlobalResourceConfigJson(const EngineOptions &o) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  if (!o.protocols.empty()) j["comm_resource_config.protocol_desc"] = o.protocols;
  j["connect_pool.task_queue_capacity"] = o.connect_queue_capacity;
  j["connect_pool.thread_num"] = o.connect_threads;
  if (o.pool_on) {
    j["channel_pool.max_channel"] = o.pool_max_channel;
    if (o.pool_high_waterline > 0) {
      j["channel_pool.high_waterline"] = o.pool_high_waterline;
      j["channel_pool.low_waterline"] = o.pool_low_waterline;
    }
  }
  return j.dump();
}

}  // namespace adxl
