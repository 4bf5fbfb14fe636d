// The vendor's llm_engine_types.h: role names and the option keys of its
// earlier LLM engine API (namespace llm).  LlmDataDist (llm_datadist.h)
// reads llm.SyncKvCacheWaitTime, llm.EnableSwitchRole and llm.BufPoolCfg
// under the same names; llm.ClusterInfo, llm.Role and llm.OutputMaxSize
// belong to the earlier engine API and have no effect here (accepted, logged
// once).
#ifndef LLM_DATADIST_LLM_ENGINE_TYPES_H_
#define LLM_DATADIST_LLM_ENGINE_TYPES_H_

namespace llm {
constexpr const char kPrompt[] = "Prompt";
constexpr const char kDecoder[] = "Decoder";

constexpr const char LLM_OPTION_CLUSTER_INFO[] = "llm.ClusterInfo";
constexpr const char LLM_OPTION_ROLE[] = "llm.Role";
constexpr const char LLM_OPTION_SYNC_KV_CACHE_WAIT_TIME[] = "llm.SyncKvCacheWaitTime";
constexpr const char LLM_OPTION_OUTPUT_MAX_SIZE[] = "llm.OutputMaxSize";
constexpr const char LLM_OPTION_ENABLE_SWITCH_ROLE[] = "llm.EnableSwitchRole";
constexpr const char LLM_OPTION_BUF_POOL_CFG[] = "llm.BufPoolCfg";
}  // namespace llm

#endif  // LLM_DATADIST_LLM_ENGINE_TYPES_H_
