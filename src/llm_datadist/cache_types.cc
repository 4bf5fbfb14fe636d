// Value helpers of cache_types.h.
#include "llm_datadist/cache_types.h"

namespace llm_datadist {

const char *StatusName(Status status) {
  for (const StatusInfo &s : kStatusTable) {
    if (s.value == status) return s.name;
  }
  return "LLM_UNKNOWN";
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

}  // namespace llm_datadist
