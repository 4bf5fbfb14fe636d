// Value helpers of cache_types.h.
#include "cache_types.h"

#include "common/log.h"
#include "graph/types.h"

namespace llm_datadist::internal {

const char *StatusName(Status status) {
  for (const StatusInfo &s : kStatusTable) {
    if (s.value == status) return s.name;
  }
  return "LLM_UNKNOWN_ERROR";
}

bool IsTransferBackend(const std::string &value) {
  for (const char *b : kTransferBackends) {
    if (value == b) return true;
  }
  return false;
}

void LogRefusal(const char *message) { ADXL_ERROR("%s", message); }

Status FromEngine(adxl::Status engine_status) {
  switch (engine_status) {
    case adxl::SUCCESS: return LLM_SUCCESS;
    case adxl::PARAM_INVALID: return LLM_PARAM_INVALID;
    case adxl::TIMEOUT: return LLM_TIMEOUT;
    case adxl::NOT_CONNECTED: return LLM_NOT_YET_LINK;
    case adxl::ALREADY_CONNECTED: return LLM_ALREADY_LINK;
    case adxl::UNSUPPORTED: return LLM_FEATURE_NOT_ENABLED;
    case adxl::RESOURCE_EXHAUSTED: return LLM_OUT_OF_MEMORY;
    default: return LLM_FAILED;
  }
}

// The values are ge::DataType's (graph/types.h), so every sized vendor type
// (the DT_FLOAT8 kinds, complex types, ...) has its size here too.
size_t DataTypeSize(DataType type) { return ge::DataTypeSize(static_cast<ge::DataType>(type)); }

uint64_t TensorBytes(const CacheDesc &desc) {
  uint64_t bytes = DataTypeSize(desc.data_type);
  if (bytes == 0 || desc.shape.empty()) return 0;
  for (int64_t d : desc.shape) {
    if (d <= 0) return 0;
    if (bytes > UINT64_MAX / static_cast<uint64_t>(d)) return 0;
    bytes *= static_cast<uint64_t>(d);
  }
  return bytes;
}

Status CheckBlockRange(const char *what, const char *side, const std::vector<uint64_t> &blocks, uint64_t count) {
  for (uint64_t b : blocks) {
    if (b >= count) {
      ADXL_ERROR("%s: %s block %lu out of range (%lu blocks)", what, side, static_cast<unsigned long>(b),
                 static_cast<unsigned long>(count));
      return LLM_PARAM_INVALID;
    }
  }
  return LLM_SUCCESS;
}

}  // namespace llm_datadist::internal
