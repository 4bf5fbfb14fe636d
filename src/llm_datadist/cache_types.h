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

namespace llm_datadist::internal {

// Statuses: the one table, X(name, value, description), and the other names
// of some of its values, X(alias, name).  The constants below, kStatusTable,
// kStatusAliases, StatusName and the Python package's LLMStatusCode all come
// from them.
//
// Names and values are the vendor's: every ge::LLM_* code of its
// llm_error_codes.h (0x5010B0xx, of which its llm_datadist.h re-declares
// a subset in namespace llm_datadist), ge::SUCCESS / ge::FAILED, and the two
// ACL runtime codes its Python package reports (LLM_DEVICE_MEM_ERROR,
// LLM_SUSPECT_REMOTE_ERROR).  tests/llm_datadist/status_table_test.cc pins
// this table to include/llm_datadist/llm_datadist.h and llm_error_codes.h.
// LLM_UNSUPPORTED and LLM_RESOURCE_EXHAUSTED, this project's earlier names,
// stay as aliases.  Engine statuses (adxl::*) never pass through unchanged:
// FromEngine() maps them.
using Status = uint32_t;
#define LLM_DATADIST_STATUS_TABLE(X)                                                                          \
  X(LLM_SUCCESS, 0x0U, "success")                                                                             \
  X(LLM_FAILED, 0xFFFFFFFFU, "not initialized, or the engine failed")                                         \
  X(LLM_WAIT_PROC_TIMEOUT, 0x5010B001U, "waiting for a process timed out")                                   \
  X(LLM_KV_CACHE_NOT_EXIST, 0x5010B002U, "no such cache or key (local or remote)")                            \
  X(LLM_REPEAT_REQUEST, 0x5010B003U, "request repeated")                                                      \
  X(LLM_REQUEST_ALREADY_COMPLETED, 0x5010B004U, "request already completed")                                  \
  X(LLM_PARAM_INVALID, 0x5010B005U, "invalid argument")                                                       \
  X(LLM_ENGINE_FINALIZED, 0x5010B006U, "engine finalized")                                                    \
  X(LLM_NOT_YET_LINK, 0x5010B007U, "cluster not linked")                                                      \
  X(LLM_ALREADY_LINK, 0x5010B008U, "cluster already linked")                                                  \
  X(LLM_LINK_FAILED, 0x5010B009U, "linking failed")                                                           \
  X(LLM_UNLINK_FAILED, 0x5010B00AU, "unlinking failed")                                                       \
  X(LLM_NOTIFY_PROMPT_UNLINK_FAILED, 0x5010B00BU, "telling the prompt about an unlink failed")                \
  X(LLM_CLUSTER_NUM_EXCEED_LIMIT, 0x5010B00CU, "too many clusters")                                           \
  X(LLM_PROCESSING_LINK, 0x5010B00DU, "a link or unlink of this cluster is under way")                        \
  X(LLM_DEVICE_OUT_OF_MEMORY, 0x5010B00EU, "device memory exhausted")                                         \
  X(LLM_PREFIX_ALREADY_EXIST, 0x5010B00FU, "prefix already exists")                                           \
  X(LLM_PREFIX_NOT_EXIST, 0x5010B010U, "no such prefix")                                                      \
  X(LLM_SEQ_LEN_OVER_LIMIT, 0x5010B011U, "sequence length over the limit")                                    \
  X(LLM_NO_FREE_BLOCK, 0x5010B012U, "no free block")                                                          \
  X(LLM_BLOCKS_OUT_OF_MEMORY, 0x5010B013U, "blocks out of memory")                                            \
  X(LLM_CACHE_INCOMPATIBLE, 0x5010B014U, "caches incompatible")                                               \
  X(LLM_CACHE_KEY_ALREADY_EXIST, 0x5010B015U, "key registered twice")                                         \
  X(LLM_COPY_CACHE_FAILED, 0x5010B016U, "local cache copy failed")                                            \
  X(LLM_CACHE_ID_ALREADY_EXIST, 0x5010B017U, "cache id already exists")                                       \
  X(LLM_EXIST_LINK, 0x5010B018U, "a link exists (register remote-accessible caches or switch role first)")   \
  X(LLM_FEATURE_NOT_ENABLED, 0x5010B019U, "not supported here (e.g. device memory without a device runtime)") \
  X(LLM_TIMEOUT, 0x5010B01AU, "timed out")                                                                    \
  X(LLM_LINK_BUSY, 0x5010B01BU, "link busy")                                                                  \
  X(LLM_OUT_OF_MEMORY, 0x5010B01CU, "a limit is reached (240 addresses, metadata full, out of memory)")      \
  X(LLM_DEVICE_MEM_ERROR, 507053U, "device memory error (ACL runtime code)")                                  \
  X(LLM_SUSPECT_REMOTE_ERROR, 507057U, "suspected remote error (ACL runtime code)")
#define LLM_DATADIST_STATUS_ALIASES(X)              \
  X(LLM_UNSUPPORTED, LLM_FEATURE_NOT_ENABLED)       \
  X(LLM_RESOURCE_EXHAUSTED, LLM_OUT_OF_MEMORY)

// The values of the option llm.TransferBackend (Initialize's, init()'s):
// the vendor's backend names, "" and "adxl" its default (links two-way),
// "hixl" its HIXL backend (links one-way).  The Python package checks
// against this list too (_native.TRANSFER_BACKENDS).
inline constexpr const char *kTransferBackends[] = {"", "adxl", "hixl"};
inline constexpr char kOneWayBackend[] = "hixl";
bool IsTransferBackend(const std::string &value);

#define LLM_DATADIST_STATUS_CONSTANT_(name, value, description) constexpr Status name = value;
#define LLM_DATADIST_STATUS_ALIAS_(alias, name) constexpr Status alias = name;
LLM_DATADIST_STATUS_TABLE(LLM_DATADIST_STATUS_CONSTANT_)
LLM_DATADIST_STATUS_ALIASES(LLM_DATADIST_STATUS_ALIAS_)
#undef LLM_DATADIST_STATUS_CONSTANT_
#undef LLM_DATADIST_STATUS_ALIAS_

using adxl::StatusInfo;
#define LLM_DATADIST_STATUS_INFO_(name, value, description) StatusInfo{#name, value, description},
#define LLM_DATADIST_STATUS_ALIAS_INFO_(alias, name) StatusInfo{#alias, name, "same as " #name},
inline constexpr StatusInfo kStatusTable[] = {LLM_DATADIST_STATUS_TABLE(LLM_DATADIST_STATUS_INFO_)};
inline constexpr StatusInfo kStatusAliases[] = {LLM_DATADIST_STATUS_ALIASES(LLM_DATADIST_STATUS_ALIAS_INFO_)};
#undef LLM_DATADIST_STATUS_INFO_
#undef LLM_DATADIST_STATUS_ALIAS_INFO_

// The LLM status that means what an engine status (adxl::Status) means:
// PARAM_INVALID -> LLM_PARAM_INVALID, TIMEOUT -> LLM_TIMEOUT, NOT_CONNECTED
// -> LLM_NOT_YET_LINK, ALREADY_CONNECTED -> LLM_ALREADY_LINK, UNSUPPORTED ->
// LLM_FEATURE_NOT_ENABLED, RESOURCE_EXHAUSTED -> LLM_OUT_OF_MEMORY, anything
// else that is not SUCCESS -> LLM_FAILED.  The engine's and the vendor's
// LLM codes are different numbers, so every engine result goes through here.
Status FromEngine(adxl::Status engine_status);

// The name of a status in kStatusTable ("LLM_SUCCESS", "LLM_OUT_OF_MEMORY",
// ...); "LLM_UNKNOWN_ERROR" for a value not in it.
const char *StatusName(Status status);

// Writes `message` as one ERROR line of this layer ("[llm_datadist ERROR
// pid] message"): the Python package's own argument checks refuse a call
// before it reaches this layer, and each refusal still gets its one line.
void LogRefusal(const char *message);

// Element types: the one table, X(name, value) (values follow the
// reference's DataType enum).  DataType and kDataTypeTable come from it; the
// Python package's DataType is bound from kDataTypeTable.
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

}  // namespace llm_datadist::internal

#endif  // LLM_DATADIST_CACHE_TYPES_H_
