// Our extension of the vendor's LLM-DataDist C++ API (not in the vendor's
// headers): the value types of llm_datadist_ext.h, namespace
// llm_datadist::ext.  They are the cache layer's own types (the internal
// CacheManager uses these very definitions), so what the extension's calls
// take reaches the cache layer unconverted.  docs/cache_layer.md, "Our
// extension", says what each call does.
//
// Plain values, copyable, no resources.  A Cache describes registered memory
// (id, description, addresses); the memory belongs to the caller.
#ifndef LLM_DATADIST_LLM_DATADIST_EXT_TYPES_H_
#define LLM_DATADIST_LLM_DATADIST_EXT_TYPES_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "llm_datadist/llm_datadist.h"

// Build with the C++11 string ABI, as the library is: the extension passes
// std::string inside structs (ClusterEngine), whose layout differs between
// libstdc++'s two string ABIs and which no mangled name records, so a
// program built with _GLIBCXX_USE_CXX11_ABI=0 (as the vendor's stack builds)
// would link and then hand over strings of the wrong layout.  The vendor's
// own header keeps to types safe under both (docs/cache_layer.md).

namespace llm_datadist {
namespace ext {

// Element types: the one table, X(name, value) (values follow the
// reference's DataType enum, which are ge::DataType's).  DataType and
// kDataTypeTable come from it; the Python package's DataType is bound from
// kDataTypeTable.
#define LLM_DATADIST_DATA_TYPES(X) \
  X(DT_FLOAT, 0)                   \
  X(DT_FLOAT16, 1)                 \
  X(DT_INT8, 2)                    \
  X(DT_INT32, 3)                   \
  X(DT_UINT8, 4)                   \
  X(DT_INT16, 6)                   \
  X(DT_UINT16, 7)                  \
  X(DT_UINT32, 8)                  \
  X(DT_INT64, 9)                   \
  X(DT_UINT64, 10)                 \
  X(DT_DOUBLE, 11)                 \
  X(DT_BOOL, 12)                   \
  X(DT_BF16, 27)

#define LLM_DATADIST_DATA_TYPE_ENUM_(name, value) name = value,
enum class DataType : int32_t { LLM_DATADIST_DATA_TYPES(LLM_DATADIST_DATA_TYPE_ENUM_) };
#undef LLM_DATADIST_DATA_TYPE_ENUM_

struct DataTypeInfo {
  const char *name;
  DataType value;
};
#define LLM_DATADIST_DATA_TYPE_INFO_(name, value) DataTypeInfo{#name, DataType::name},
inline constexpr DataTypeInfo kDataTypeTable[] = {LLM_DATADIST_DATA_TYPES(LLM_DATADIST_DATA_TYPE_INFO_)};
#undef LLM_DATADIST_DATA_TYPE_INFO_

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

// A non-paged cache entry: batch index i of the cache registered with
// cache_keys[i].  cluster_id is the cluster that holds the cache.
struct CacheKey {
  uint64_t cluster_id = 0;
  uint64_t req_id = 0;
  uint64_t model_id = 0;
  uint64_t prefix_id = std::numeric_limits<uint64_t>::max();
};
// A cache addressed by the id its holder's registration returned.
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

// A registered cache.  cache_id is unique within its cluster (> 0).
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

// A remote cluster by the engine name it listens on ("ip:port",
// "[ipv6]:port"), as the Python package's clusters and rank-table links name
// it (the vendor's ClusterInfo carries an ip and a port instead).
struct ClusterEngine {
  uint64_t remote_cluster_id = 0;
  std::string remote_engine;
};

// At most this many addresses over all registrations of one cluster.
constexpr size_t kMaxRegisteredAddrs = 240;

// Where an option key goes in the engine's options (EngineOptionKey).
struct EngineKey {
  std::string name;
  bool drop_empty = false;  // an empty value is "not configured": dropped
};

}  // namespace ext
}  // namespace llm_datadist

#endif  // LLM_DATADIST_LLM_DATADIST_EXT_TYPES_H_
