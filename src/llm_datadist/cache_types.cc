// Value helpers of cache_types.h.
#include "cache_types.h"

namespace llm_datadist::internal {

const char *StatusName(Status status) {
  for (const StatusInfo &s : kStatusTable) {
    if (s.value == status) return s.name;
  }
  return "LLM_UNKNOWN_ERROR";
}

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

size_t DataTypeSize(DataType type) {
  switch (type) {
    case DataType::DT_INT8:
    case DataType::DT_UINT8:
    case DataType::DT_BOOL: return 1;
    case DataType::DT_FLOAT16:
    case DataType::DT_BF16:
    case DataType::DT_INT16:
    case DataType::DT_UINT16: return 2;
    case DataType::DT_FLOAT:
    case DataType::DT_INT32:
    case DataType::DT_UINT32: return 4;
    case DataType::DT_INT64:
    case DataType::DT_UINT64:
    case DataType::DT_DOUBLE: return 8;
  }
  return 0;
}

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

}  // namespace llm_datadist::internal
