// LLM-DataDist cache layer: value types (cache descriptions, keys, caches,
// statuses).  See cache_manager.h for the manager that registers and moves
// caches, and docs/contract.md §10 for the rules.
//
// Contract of the types here: plain values, copyable, no resources.  A Cache
// is a description of registered memory (id, description, addresses); the
// memory itself belongs to the caller.
#ifndef LLM_DATADIST_CACHE_TYPES_H_
#define LLM_DATADIST_CACHE_TYPES_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "adxl/adxl_types.h"

namespace llm_datadist {

// Statuses.  Where a cache-layer status means the same as an engine status,
// the value is the engine's (a status coming from AdxlEngine passes through
// unchanged); the cache-specific ones are this project's own values.
using Status = uint32_t;
constexpr Status LLM_SUCCESS = adxl::SUCCESS;
constexpr Status LLM_PARAM_INVALID = adxl::PARAM_INVALID;        // bad argument (Python: ValueError)
constexpr Status LLM_TIMEOUT = adxl::TIMEOUT;                    // sync_kv_timeout passed
constexpr Status LLM_NOT_YET_LINK = adxl::NOT_CONNECTED;         // cluster not linked
constexpr Status LLM_ALREADY_LINK = adxl::ALREADY_CONNECTED;     // cluster already linked
constexpr Status LLM_UNSUPPORTED = adxl::UNSUPPORTED;            // e.g. device memory without a device runtime
constexpr Status LLM_FAILED = adxl::FAILED;                      // not initialized, or the engine failed
constexpr Status LLM_RESOURCE_EXHAUSTED = adxl::RESOURCE_EXHAUSTED;  // 240-address limit, metadata full
constexpr Status LLM_KV_CACHE_NOT_EXIST = 103910U;               // no such cache / key (local or remote)
constexpr Status LLM_EXIST_LINK = 103911U;  // remote-accessible device cache registered while a link exists
constexpr Status LLM_CACHE_KEY_ALREADY_EXIST = 103912U;          // key registered twice

// Returns "LLM_SUCCESS", "LLM_PARAM_INVALID", ... ("LLM_UNKNOWN" otherwise).
const char *StatusName(Status status);

// Element types (values follow the reference's DataType enum).
enum class DataType : int32_t {
  DT_FLOAT = 0,
  DT_FLOAT16 = 1,
  DT_INT8 = 2,
  DT_INT32 = 3,
  DT_UINT8 = 4,
  DT_INT16 = 6,
  DT_UINT16 = 7,
  DT_UINT32 = 8,
  DT_INT64 = 9,
  DT_UINT64 = 10,
  DT_DOUBLE = 11,
  DT_BOOL = 12,
  DT_BF16 = 27,
};
// Bytes per element; 0 for a value outside DataType.
size_t DataTypeSize(DataType type);

enum class Placement : int32_t { HOST = 0, DEVICE = 1 };

// Layout of every tensor of a cache: `num_tensors` tensors of `shape` and
// `data_type`, tensors ordered layer by layer (K0, V0, K1, V1, ... when
// tensor_num_per_layer is 2).  Dimension 0 is the batch (not paged) or the
// block index (paged); batch_dim_index must be 0.
struct CacheDesc {
  uint32_t num_tensors = 0;
  std::vector<int64_t> shape;
  DataType data_type = DataType::DT_FLOAT;
  Placement placement = Placement::DEVICE;
  int32_t batch_dim_index = 0;
  int32_t seq_len_dim_index = -1;
};
// Bytes of one tensor (product of shape times element size); 0 when the
// description is invalid (empty shape, a dimension <= 0, overflow, bad type).
uint64_t TensorBytes(const CacheDesc &desc);

// A non-paged cache entry: batch index i of the cache registered with
// cache_keys[i].  cluster_id is the cluster that holds the cache.
struct CacheKey {
  uint64_t cluster_id = 0;
  uint64_t req_id = 0;
  uint64_t model_id = 0;
  uint64_t prefix_id = std::numeric_limits<uint64_t>::max();
};
// A cache addressed by the id its holder's RegisterCache returned.
struct CacheKeyByIdAndIndex {
  uint64_t cluster_id = 0;
  int64_t cache_id = -1;
  uint32_t batch_index = 0;
};
// A paged cache, registered with RegisterBlocksCache(..., blocks_cache_key).
struct BlocksCacheKey {
  uint64_t cluster_id = 0;
  uint64_t model_id = 0;
};

// A registered cache.  cache_id is unique within its CacheManager (> 0).
struct Cache {
  int64_t cache_id = -1;
  CacheDesc cache_desc;
  std::vector<uintptr_t> tensor_addrs;
  bool paged = false;
  bool remote_accessible = false;
};

// Layers [begin, end) (layer index, not tensor index).
struct LayerRange {
  uint32_t begin = 0;
  uint32_t end = 0;
};
// Which layers a pull / push moves.  An absent range means all layers of that
// side; both sides must name the same number of layers.
struct LayerRangeArgs {
  std::optional<LayerRange> src_layer_range;
  std::optional<LayerRange> dst_layer_range;
  uint32_t tensor_num_per_layer = 2;  // K and V
};

// A remote cluster: its id and the engine name it listens on ("ip:port").
struct ClusterInfo {
  uint64_t remote_cluster_id = 0;
  std::string remote_engine;
};

// At most this many addresses over all RegisterCache / RegisterBlocksCache calls.
constexpr size_t kMaxRegisteredAddrs = 240;

}  // namespace llm_datadist

#endif  // LLM_DATADIST_CACHE_TYPES_H_
