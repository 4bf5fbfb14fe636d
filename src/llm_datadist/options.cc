// LlmDataDist options (options.h).
#include "options.h"

#include <cerrno>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>

#include "common/log.h"

namespace llm_datadist::internal {
namespace {

// Once per key per process: a program that creates many LlmDataDist objects
// with the same options says it once.
void InfoOnce(const std::string &key, const char *why) {
  static std::mutex mu;
  static std::set<std::string> said;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!said.insert(key).second) return;
  }
  ADXL_INFO("option %s accepted, no effect here: %s", key.c_str(), why);
}

bool ParseInt(const std::string &text, long long lo, long long hi, long long *v) {
  if (text.empty()) return false;
  errno = 0;
  char *end = nullptr;
  const long long x = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || x < lo || x > hi) return false;
  *v = x;
  return true;
}

// The engine's own option names (src/config/option_table.cc) that pass unchanged.
const std::set<std::string> kEngineNames = {"RdmaTrafficClass", "RdmaServiceLevel", "AutoConnect",
                                            "EnableUseFabricMem", "BufferPool", "LocalCommRes",
                                            "GlobalResourceConfig"};

// The vendor's keys it translates for its transfer engine (its
// LLMDataDist2HixlOptions): llm. key -> the engine's key here.
const std::map<std::string, std::string> kTranslated = {
    {"llm.RdmaTrafficClass", "adxl.RdmaTrafficClass"},
    {"llm.RdmaServiceLevel", "adxl.RdmaServiceLevel"},
    {"llm.LocalCommRes", "adxl.LocalCommRes"},
    {"llm.GlobalResourceConfig", "GlobalResourceConfig"},
};

}  // namespace

std::optional<EngineKey> EngineOptionKey(const std::string &key) {
  auto it = kTranslated.find(key);
  if (it != kTranslated.end()) return EngineKey{it->second, true};
  if (key.rfind("adxl.", 0) == 0 || kEngineNames.count(key) != 0) return EngineKey{key, false};
  return std::nullopt;
}

Status ParseOptions(const char *what, const std::map<ge::AscendString, ge::AscendString> &options,
                    DataDistOptions *out) {
  for (const auto &kv : options) {
    const std::string key = kv.first.GetString();
    const std::string value = kv.second.GetString();
    long long n = 0;
    if (key == "llm.ListenIpInfo") {
      // "ip:port"; the engine checks the address itself (contract §2.1).
      const auto colon = value.rfind(':');
      if (colon == std::string::npos || colon == 0 || !ParseInt(value.substr(colon + 1), 1, 65535, &n)) {
        ADXL_ERROR("%s: llm.ListenIpInfo '%s' is not ip:port with a port in [1, 65535]", what, value.c_str());
        return LLM_PARAM_INVALID;
      }
      out->listen = value;
    } else if (key == "llm.SyncKvCacheWaitTime") {
      if (!ParseInt(value, 1, INT32_MAX, &n)) {
        ADXL_ERROR("%s: llm.SyncKvCacheWaitTime '%s' is not an integer number of ms in [1, %d]", what,
                   value.c_str(), INT32_MAX);
        return LLM_PARAM_INVALID;
      }
      out->sync_timeout_ms = static_cast<int32_t>(n);
    } else if (key == "llm.EnableSwitchRole") {
      if (value != "0" && value != "1" && value != "true" && value != "false") {
        ADXL_ERROR("%s: llm.EnableSwitchRole '%s' is not 0, 1, true or false", what, value.c_str());
        return LLM_PARAM_INVALID;
      }
      out->enable_switch_role = value == "1" || value == "true";
    } else if (key == "llm.DeviceId") {
      if (!ParseInt(value, 0, INT32_MAX, &n)) {
        ADXL_ERROR("%s: llm.DeviceId '%s' is not a device number >= 0", what, value.c_str());
        return LLM_PARAM_INVALID;
      }
      InfoOnce(key, "the device is the one whose memory a cache names (registered or allocated)");
    } else if (key == "llm.TransferBackend") {
      if (!IsTransferBackend(value)) {
        ADXL_ERROR("%s: llm.TransferBackend '%s' is not one of hixl, adxl (or empty)", what, value.c_str());
        return LLM_PARAM_INVALID;
      }
      // The cache layer takes it (CacheManager::Initialize): "hixl" makes
      // links one-way, as the vendor's HIXL backend's; the engine is the same.
      out->engine[kv.first] = kv.second;
    } else if (key == "llm.BufPoolCfg") {
      InfoOnce(key, "transfers of registered caches need no staging pool (engine option BufferPool sizes one)");
    } else if (const std::optional<EngineKey> to = EngineOptionKey(key)) {
      // Empty is the vendor's "not configured" (its LLMConfig emits it so).
      if (!to->drop_empty || !value.empty()) out->engine[adxl::AscendString(to->name.c_str())] = kv.second;
    } else {
      // The vendor ignores keys it does not translate, with an INFO line.
      InfoOnce(key, "an option of the vendor's runtime that has no counterpart here");
    }
  }
  return LLM_SUCCESS;
}

}  // namespace llm_datadist::internal
