#include "config/options.h"

#include <cstdlib>
#include <cstring>
#include <set>

#include <nlohmann/json.hpp>

#include "common/log.h"

namespace adxl {
namespace {

constexpr size_t kMaxAuthToken = 1024;

bool ParseInt(const std::string &s, int64_t lo, int64_t hi, int64_t *out) {
  if (s.empty() || s.size() > 20) return false;
  size_t i = 0;
  bool neg = false;
  if (s[0] == '-') {
    neg = true;
    i = 1;
    if (s.size() == 1) return false;
  }
  uint64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    uint64_t d = static_cast<uint64_t>(s[i] - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  if (v > static_cast<uint64_t>(INT64_MAX)) return false;
  int64_t sv = neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
  if (sv < lo || sv > hi) return false;
  *out = sv;
  return true;
}

// Looks a vendor key up in both spellings; the un-prefixed one wins.
const std::string *Find(const std::map<std::string, std::string> &m, const std::string &key) {
  auto it = m.find(key);
  if (it != m.end()) return &it->second;
  it = m.find("adxl." + key);
  return it != m.end() ? &it->second : nullptr;
}

// Value of a project key, or of its environment fallback.
const char *ProjectValue(const std::map<std::string, std::string> &m, const std::string &key, const char *env) {
  auto it = m.find(key);
  if (it != m.end()) return it->second.c_str();
  return getenv(env);
}

bool ParseProtocols(const nlohmann::json &v, std::vector<std::string> *out, std::string *why) {
  static const std::set<std::string> kKnown = {"hccs:host", "hccs:device", "roce:host", "roce:device"};
  std::vector<std::string> items;
  if (v.is_string()) {
    items.push_back(v.get<std::string>());
  } else if (v.is_array() && !v.empty()) {
    for (const auto &e : v) {
      if (!e.is_string()) {
        *why = "comm_resource_config.protocol_desc: list entries must be strings";
        return false;
      }
      items.push_back(e.get<std::string>());
    }
  } else {
    *why = "comm_resource_config.protocol_desc: expected a string or a non-empty list of strings";
    return false;
  }
  for (const auto &s : items) {
    if (kKnown.count(s) == 0) {
      *why = "comm_resource_config.protocol_desc: unknown value '" + s +
             "' (expected hccs:host, hccs:device, roce:host or roce:device)";
      return false;
    }
  }
  *out = items;
  return true;
}

bool PositiveJsonInt(const nlohmann::json &v, const char *key, uint32_t *out, std::string *why) {
  int64_t n = 0;
  if (v.is_number_integer()) {
    n = v.get<int64_t>();
  } else if (!v.is_string() || !ParseInt(v.get<std::string>(), 1, UINT32_MAX, &n)) {
    *why = std::string(key) + ": expected a positive integer";
    return false;
  }
  if (n <= 0 || n > static_cast<int64_t>(UINT32_MAX)) {
    *why = std::string(key) + ": expected a positive integer";
    return false;
  }
  *out = static_cast<uint32_t>(n);
  return true;
}

bool ParseGlobalResourceConfig(const std::string &text, EngineOptions *o, std::string *why) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    *why = "GlobalResourceConfig: not a JSON object: '" + text + "'";
    return false;
  }
  auto visit = [&](const std::string &key, const nlohmann::json &v) {
    if (key == "comm_resource_config.protocol_desc") return ParseProtocols(v, &o->protocols, why);
    if (key == "connect_pool.task_queue_capacity") {
      return PositiveJsonInt(v, key.c_str(), &o->connect_queue_capacity, why);
    }
    if (key == "connect_pool.thread_num") return PositiveJsonInt(v, key.c_str(), &o->connect_threads, why);
    ADXL_INFO("GlobalResourceConfig: key '%s' has no meaning here and is ignored", key.c_str());
    return true;
  };
  // Keys come dotted ("a.b") as in the reference, or nested ({"a": {"b": ...}}).
  for (const auto &item : j.items()) {
    if (item.value().is_object()) {
      for (const auto &sub : item.value().items()) {
        if (!visit(item.key() + "." + sub.key(), sub.value())) return false;
      }
    } else if (!visit(item.key(), item.value())) {
      return false;
    }
  }
  return true;
}

}  // namespace

bool ParseOptions(const std::map<std::string, std::string> &options, EngineOptions *out, std::string *why) {
  static const std::set<std::string> kVendor = {"RdmaTrafficClass", "RdmaServiceLevel", "BufferPool",
                                                "LocalCommRes", "GlobalResourceConfig", "EnableUseFabricMem",
                                                "AutoConnect"};
  static const std::set<std::string> kProject = {"adxl.MaxRegistrations", "adxl.MaxDeviceMemory",
                                                 "adxl.MaxHostMemory", "adxl.HeartbeatMs", "adxl.HccsCopyThreads",
                                                 "adxl.PluginPath",
                                                 "adxl.Plugin", "adxl.AuthToken"};
  for (const auto &kv : options) {
    const std::string &k = kv.first;
    bool known = kVendor.count(k) != 0 || kProject.count(k) != 0 ||
                 (k.rfind("adxl.", 0) == 0 && kVendor.count(k.substr(5)) != 0);
    if (!known) {
      *why = "unknown option '" + k + "'";
      return false;
    }
  }
  EngineOptions o;
  int64_t n = 0;

  const char *env_tc = getenv("HCCL_RDMA_TC");
  const std::string *tc = Find(options, "RdmaTrafficClass");
  // Given as an option (even empty) it must be valid; an empty variable is unset.
  std::string tc_text = tc != nullptr ? *tc : (env_tc != nullptr ? env_tc : "");
  if (tc != nullptr || !tc_text.empty()) {
    if (!ParseInt(tc_text, 0, 255, &n) || n % 4 != 0) {
      *why = "RdmaTrafficClass '" + tc_text + "': expected an integer in [0,255] that is a multiple of 4" +
             (tc == nullptr ? " (from HCCL_RDMA_TC)" : "");
      return false;
    }
    o.traffic_class = static_cast<int>(n);
  }
  const char *env_sl = getenv("HCCL_RDMA_SL");
  const std::string *sl = Find(options, "RdmaServiceLevel");
  std::string sl_text = sl != nullptr ? *sl : (env_sl != nullptr ? env_sl : "");
  if (sl != nullptr || !sl_text.empty()) {
    if (!ParseInt(sl_text, 0, 7, &n)) {
      *why = "RdmaServiceLevel '" + sl_text + "': expected an integer in [0,7]" +
             (sl == nullptr ? " (from HCCL_RDMA_SL)" : "");
      return false;
    }
    o.service_level = static_cast<int>(n);
  }
  if (const std::string *v = Find(options, "AutoConnect")) {
    if (*v != "0" && *v != "1") {
      *why = "AutoConnect '" + *v + "': expected \"0\" or \"1\"";
      return false;
    }
    o.auto_connect = *v == "1";
  }
  if (const std::string *v = Find(options, "EnableUseFabricMem")) {
    if (*v != "0" && *v != "1") {
      *why = "EnableUseFabricMem '" + *v + "': expected \"0\" or \"1\"";
      return false;
    }
    o.fabric_mem = *v == "1";
  }
  if (const std::string *v = Find(options, "BufferPool")) {
    size_t colon = v->find(':');
    int64_t nb = 0, sz = 0;
    bool ok = colon != std::string::npos && ParseInt(v->substr(0, colon), 0, 1024, &nb) &&
              ParseInt(v->substr(colon + 1), 0, 1024, &sz) && ((nb == 0 && sz == 0) || (nb > 0 && sz > 0));
    if (!ok) {
      *why = "BufferPool '" + *v + "': expected \"N:S\" (N buffers of S MiB, both in [1,1024]) or \"0:0\"";
      return false;
    }
    o.pool_buffers = static_cast<uint32_t>(nb);
    o.pool_buffer_mib = static_cast<uint32_t>(sz);
  }
  if (const std::string *v = Find(options, "LocalCommRes")) {
    nlohmann::json j = nlohmann::json::parse(*v, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      *why = "LocalCommRes: not a JSON object: '" + *v + "'";
      return false;
    }
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.key() != "version") {
        ADXL_INFO("LocalCommRes: field '%s' describes vendor devices and is ignored", it.key().c_str());
      }
    }
  }
  if (const std::string *v = Find(options, "GlobalResourceConfig")) {
    if (!ParseGlobalResourceConfig(*v, &o, why)) return false;
  }

  struct Limit {
    const char *key;
    const char *env;
    int64_t lo;
    uint64_t *u64;
    uint32_t *u32;
  };
  const Limit limits[] = {
      {"adxl.MaxRegistrations", "ADXL_MAX_REGISTRATIONS", 1, nullptr, &o.max_registrations},
      {"adxl.MaxDeviceMemory", "ADXL_MAX_DEVICE_MEMORY", 0, &o.max_device_bytes, nullptr},
      {"adxl.MaxHostMemory", "ADXL_MAX_HOST_MEMORY", 0, &o.max_host_bytes, nullptr},
      {"adxl.HeartbeatMs", "ADXL_HEARTBEAT_MS", 10, nullptr, &o.heartbeat_ms},
      {"adxl.HccsCopyThreads", "ADXL_HCCS_COPY_THREADS", 0, nullptr, &o.hccs_copy_threads},
  };
  for (const Limit &l : limits) {
    const char *v = ProjectValue(options, l.key, l.env);
    if (v == nullptr) continue;
    int64_t hi = l.u32 != nullptr ? static_cast<int64_t>(UINT32_MAX) : INT64_MAX;
    if (!ParseInt(v, l.lo, hi, &n)) {
      *why = std::string(l.key) + " '" + v + "': expected an integer >= " + std::to_string(l.lo) + " (option or " +
             l.env + ")";
      return false;
    }
    if (l.u64 != nullptr) *l.u64 = static_cast<uint64_t>(n);
    if (l.u32 != nullptr) *l.u32 = static_cast<uint32_t>(n);
  }
  if (o.hccs_copy_threads > 64) {
    *why = "adxl.HccsCopyThreads " + std::to_string(o.hccs_copy_threads) + ": expected 0 (automatic) to 64";
    return false;
  }
  if (const char *v = ProjectValue(options, "adxl.PluginPath", "ADXL_PLUGIN_PATH")) o.plugin_path = v;
  if (const char *v = ProjectValue(options, "adxl.Plugin", "ADXL_PLUGIN")) {
    std::string name = v;
    if (name.empty() || name.find('/') != std::string::npos) {
      *why = "adxl.Plugin '" + name + "': expected a plugin name such as \"ucx\"";
      return false;
    }
    o.plugin = name;
  }
  {
    auto it = options.find("adxl.AuthToken");
    const char *env = getenv("ADXL_AUTH_TOKEN");
    if (it != options.end()) {
      if (it->second.empty() || it->second.size() > kMaxAuthToken) {
        *why = "adxl.AuthToken: expected 1.." + std::to_string(kMaxAuthToken) + " bytes, got " +
               std::to_string(it->second.size());
        return false;
      }
      o.auth_token = it->second;
    } else if (env != nullptr && *env != '\0') {
      if (strlen(env) > kMaxAuthToken) {
        *why = "ADXL_AUTH_TOKEN: expected at most " + std::to_string(kMaxAuthToken) + " bytes";
        return false;
      }
      o.auth_token = env;
    }
  }
  *out = o;
  return true;
}

}  // namespace adxl
