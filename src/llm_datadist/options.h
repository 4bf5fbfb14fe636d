// LlmDataDist::Initialize / SetRole options (llm_datadist.h OPTION_*): what
// each does here, checked once, and the engine options they become.
#ifndef LLM_DATADIST_SRC_OPTIONS_H_
#define LLM_DATADIST_SRC_OPTIONS_H_

#include <map>
#include <optional>
#include <string>

#include "adxl/adxl_types.h"
#include "cache_types.h"
#include "graph/ascend_string.h"

namespace llm_datadist::internal {

struct DataDistOptions {
  std::optional<std::string> listen;  // "ip:port" from llm.ListenIpInfo
  std::optional<int32_t> sync_timeout_ms;
  bool enable_switch_role = false;
  // For AdxlEngine::Initialize: llm.LocalCommRes -> adxl.LocalCommRes,
  // llm.GlobalResourceConfig -> GlobalResourceConfig, adxl.* and the engine's
  // own option names unchanged.
  std::map<adxl::AscendString, adxl::AscendString> engine;
};

// Where a key of the options goes in AdxlEngine::Initialize's options: the
// one table of the keys the cache layer hands to the engine, read by
// ParseOptions and by the Python package (through its extension).
//  - llm.RdmaTrafficClass, llm.RdmaServiceLevel, llm.LocalCommRes,
//    llm.GlobalResourceConfig: translated, as the vendor's LLM-DataDist
//    translates them for its transfer engine; an empty value is the vendor's
//    "not configured" and goes nowhere (drop_empty);
//  - adxl.* and the engine's own option names (src/config/option_table.cc):
//    unchanged.
// std::nullopt for every other key (the cache layer's own, or one with no
// effect here).
using ext::EngineKey;  // public (llm_datadist_ext_types.h): the extension returns it
std::optional<EngineKey> EngineOptionKey(const std::string &key);

// Reads `options`: LLM_PARAM_INVALID (one ERROR line) for a malformed value
// of a known key.  Keys with no effect here (llm.DeviceId, llm.BufPoolCfg,
// llm.TransferBackend "hixl"/"adxl", the earlier engine API's keys, other
// llm. / ge. keys) are accepted and logged once per process at INFO.
Status ParseOptions(const char *what, const std::map<ge::AscendString, ge::AscendString> &options,
                    DataDistOptions *out);

}  // namespace llm_datadist::internal

#endif  // LLM_DATADIST_SRC_OPTIONS_H_
