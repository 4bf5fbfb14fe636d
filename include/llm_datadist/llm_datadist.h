// LLM-DataDist, the vendor's C++ API (class llm_datadist::LlmDataDist): KV
// caches registered in each cluster's memory, links between clusters, and
// pull / push / local copy of caches and of blocks.  Declared as the vendor
// declares it, so programs written for the vendor's stack compile unchanged;
// docs/cache_layer.md says what each call does on this implementation
// (UCX transfers through libadxl; host memory, and device memory where a
// device runtime exists) and what is not supported.
//
// Contract, in short (docs/contract.md §10 for the rules):
//  - Initialize(options) before anything else; every other call before it or
//    after Finalize is LLM_FAILED.  A cluster that others link to listens on
//    OPTION_LISTEN_IP_INFO ("ip:port"); the Prompt role must have it.
//  - LinkLlmClusters connects to each cluster's remote_ip_infos[0]; links
//    are two-way on the default backend, one-way (the linking side moves
//    data) with llm.TransferBackend "hixl".  rets holds one status per
//    cluster; the call returns the last failure, as the vendor's.
//  - A cache is a set of num_tensors tensors of one shape; dimension 0 is
//    the batch (PullKvCache / PushKvCache: batch_index) or the block
//    (PullKvBlocks / PushKvBlocks / CopyKvBlocks).  Caches are named by id:
//    a Cache argument needs only cache_id.
//  - KvCacheExtParam layer ranges are inclusive [first, last] layer pairs of
//    tensor_num_per_layer tensors each; {-1, -1} means every layer.  size
//    -1 means the whole batch entry.
//  - Every call is thread-safe, returns a status (never throws), and a
//    rejected call logs one ERROR line on stderr.
#ifndef LLM_DATADIST_LLM_DATADIST_H_
#define LLM_DATADIST_LLM_DATADIST_H_

#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "external/ge_common/ge_api_error_codes.h"

// Kept when adxl/adxl_types.h (or another vendor header) defined it first:
// a program that includes both must compile warning-free under -Werror.
#ifndef ASCEND_FUNC_VISIBILITY
#ifdef FUNC_VISIBILITY
#define ASCEND_FUNC_VISIBILITY __attribute__((visibility("default")))
#else
#define ASCEND_FUNC_VISIBILITY
#endif
#endif

namespace llm_datadist {
// Our extension's access to the implementation (llm_datadist_ext.h): a
// friend declaration only, the class layout is the vendor's.
namespace ext {
struct DataDistAccess;
}  // namespace ext

constexpr uint8_t kDefaultTensorNumPerLayer = 2U;
using Status = ge::Status;
using AscendString = ge::AscendString;
using DataType = ge::DataType;

// Option keys of Initialize (and SetRole).
constexpr const char OPTION_LISTEN_IP_INFO[] = "llm.ListenIpInfo";
constexpr const char OPTION_DEVICE_ID[] = "llm.DeviceId";
constexpr const char OPTION_SYNC_CACHE_WAIT_TIME[] = "llm.SyncKvCacheWaitTime";
constexpr const char OPTION_BUF_POOL_CFG[] = "llm.BufPoolCfg";
constexpr const char OPTION_ENABLE_SET_ROLE[] = "llm.EnableSwitchRole";
constexpr const char OPTION_LOCAL_COMM_RES[] = "llm.LocalCommRes";
constexpr const char OPTION_TRANSFER_BACKEND[] = "llm.TransferBackend";
// The key the vendor's Python LLMConfig.global_resource_config emits (its
// HIXL backend reads it); the engine's GlobalResourceConfig.
constexpr const char OPTION_GLOBAL_RESOURCE_CONFIG[] = "llm.GlobalResourceConfig";

// Status codes (the vendor's values; llm_error_codes.h has the full list).
constexpr Status LLM_SUCCESS = 0x0U;
constexpr Status LLM_FAILED = 0xFFFFFFFFU;
constexpr Status LLM_WAIT_PROC_TIMEOUT = 0x5010B001U;
constexpr Status LLM_KV_CACHE_NOT_EXIST = 0x5010B002U;
constexpr Status LLM_PARAM_INVALID = 0x5010B005U;
constexpr Status LLM_NOT_YET_LINK = 0x5010B007U;
constexpr Status LLM_ALREADY_LINK = 0x5010B008U;
constexpr Status LLM_LINK_FAILED = 0x5010B009U;
constexpr Status LLM_UNLINK_FAILED = 0x5010B00AU;
constexpr Status LLM_NOTIFY_PROMPT_UNLINK_FAILED = 0x5010B00BU;
constexpr Status LLM_CLUSTER_NUM_EXCEED_LIMIT = 0x5010B00CU;
constexpr Status LLM_PROCESSING_LINK = 0x5010B00DU;
constexpr Status LLM_DEVICE_OUT_OF_MEMORY = 0x5010B00EU;
constexpr Status LLM_EXIST_LINK = 0x5010B018U;
constexpr Status LLM_FEATURE_NOT_ENABLED = 0x5010B019U;
constexpr Status LLM_TIMEOUT = 0x5010B01AU;
constexpr Status LLM_LINK_BUSY = 0x5010B01BU;
constexpr Status LLM_OUT_OF_MEMORY = 0x5010B01CU;

// Data types (ge::DataType, graph/types.h).
using ge::DT_BF16;
using ge::DT_BOOL;
using ge::DT_COMPLEX128;
using ge::DT_COMPLEX32;
using ge::DT_COMPLEX64;
using ge::DT_DOUBLE;
using ge::DT_DUAL;
using ge::DT_DUAL_SUB_INT8;
using ge::DT_DUAL_SUB_UINT8;
using ge::DT_FLOAT;
using ge::DT_FLOAT16;
using ge::DT_FLOAT4_E1M2;
using ge::DT_FLOAT4_E2M1;
using ge::DT_FLOAT6_E2M3;
using ge::DT_FLOAT6_E3M2;
using ge::DT_FLOAT8_E4M3FN;
using ge::DT_FLOAT8_E5M2;
using ge::DT_FLOAT8_E8M0;
using ge::DT_HIFLOAT8;
using ge::DT_INT16;
using ge::DT_INT2;
using ge::DT_INT32;
using ge::DT_INT4;
using ge::DT_INT64;
using ge::DT_INT8;
using ge::DT_QINT16;
using ge::DT_QINT32;
using ge::DT_QINT8;
using ge::DT_QUINT16;
using ge::DT_QUINT8;
using ge::DT_RESOURCE;
using ge::DT_STRING;
using ge::DT_STRING_REF;
using ge::DT_UINT1;
using ge::DT_UINT16;
using ge::DT_UINT2;
using ge::DT_UINT32;
using ge::DT_UINT64;
using ge::DT_UINT8;
using ge::DT_UNDEFINED;
using ge::DT_VARIANT;

struct IpInfo {
  AscendString ip;
  uint16_t port = 0U;
  uint8_t reserved[128];
};

// A cluster to link to: its id and the address it listens on
// (remote_ip_infos[0]).  remote_role_type and local_ip_infos are not used here.
struct ClusterInfo {
  uint64_t remote_cluster_id = 0U;
  int32_t remote_role_type = 0;
  std::vector<IpInfo> local_ip_infos;
  std::vector<IpInfo> remote_ip_infos;
  uint8_t reserved[128];
};

enum class LlmRole : int32_t { kPrompt = 1, kDecoder = 2, kMix = 3, kEnd };

// A remote cache: the cluster holding it, its id there, a batch index.
struct CacheIndex {
  uint64_t cluster_id;
  int64_t cache_id;
  uint32_t batch_index;
  uint8_t reserved[128];
};

enum class CachePlacement : uint32_t {
  kHost = 0U,
  kDevice = 1U,
};

struct CacheDesc {
  CachePlacement placement = CachePlacement::kDevice;
  uint32_t num_tensors = 0U;
  DataType data_type = DT_UNDEFINED;
  std::vector<int64_t> shape;
  uint8_t reserved[128];
};

struct Cache {
  int64_t cache_id = -1;
  std::vector<uintptr_t> tensor_addrs;
  CacheDesc cache_desc;
  uint8_t reserved[128];
};

// Layer ranges are inclusive: {first, last}; {-1, -1} is every layer.
struct KvCacheExtParam {
  std::pair<int32_t, int32_t> src_layer_range = {-1, -1};
  std::pair<int32_t, int32_t> dst_layer_range{-1, -1};
  uint8_t tensor_num_per_layer = kDefaultTensorNumPerLayer;
  uint8_t reserved[127];
};

struct RegisterCfg {
  uint8_t reserved[128] = {0};
};

class ASCEND_FUNC_VISIBILITY LlmDataDist {
 public:
  LlmDataDist(uint64_t cluster_id, LlmRole role);
  ~LlmDataDist();  // runs Finalize()

  // Options: OPTION_* above.  The Prompt role needs OPTION_LISTEN_IP_INFO.
  Status Initialize(const std::map<AscendString, AscendString> &options);
  // Unlinks every cluster, unregisters every cache, frees AllocateCache's
  // memory.  Idempotent.
  void Finalize();

  // Needs OPTION_ENABLE_SET_ROLE "1" at Initialize (else
  // LLM_FEATURE_NOT_ENABLED) and no link (else LLM_EXIST_LINK).  A new
  // OPTION_LISTEN_IP_INFO in options moves the listener there (registered
  // caches keep their ids); switching to kPrompt needs one unless this
  // cluster listens already.
  Status SetRole(LlmRole role, const std::map<AscendString, AscendString> &options = {});

  Status LinkLlmClusters(const std::vector<ClusterInfo> &clusters, std::vector<Status> &rets,
                         int32_t timeout_in_millis = 1000);
  // force_flag: the link is dropped here even when the peer cannot be told.
  Status UnlinkLlmClusters(const std::vector<ClusterInfo> &clusters, std::vector<Status> &rets,
                           int32_t timeout_in_millis = 1000, bool force_flag = false);

  // Allocates num_tensors tensors (kHost: host memory; kDevice: the device
  // runtime's memory: CUDA, or aclrtMalloc of the host ACL emulation when the
  // process has it; LLM_FEATURE_NOT_ENABLED without either) and registers them.
  Status AllocateCache(const CacheDesc &cache_desc, Cache &cache);
  // LLM_SUCCESS also for an id that is not (or no longer) allocated.  The
  // memory is freed only once unregistered: when that fails (a concurrent
  // Finalize), the status is returned and Finalize frees it.
  Status DeallocateCache(int64_t cache_id);

  Status PullKvCache(const CacheIndex &src_cache_index, const Cache &dst_cache, uint32_t batch_index = 0U,
                     int64_t size = -1, const KvCacheExtParam &ext_param = {});
  // Empty src_blocks: the remote batch entry src_cache_index.batch_index,
  // cut into dst_cache's blocks.
  Status PullKvBlocks(const CacheIndex &src_cache_index, const Cache &dst_cache,
                      const std::vector<uint64_t> &src_blocks, const std::vector<uint64_t> &dst_blocks,
                      const KvCacheExtParam &ext_param = {});

  // Local copies between registered caches of this cluster (host memory, or
  // device memory of the host ACL emulation; other device memory:
  // LLM_FEATURE_NOT_ENABLED).
  Status CopyKvCache(const Cache &src_cache, const Cache &dst_cache, uint32_t src_batch_index = 0U,
                     uint32_t dst_batch_index = 0U, uint64_t offset = 0U, int64_t size = -1);
  Status CopyKvBlocks(const Cache &src_cache, const Cache &dst_cache, const std::vector<uint64_t> &src_blocks,
                      const std::vector<std::vector<uint64_t>> &dst_blocks_list);

  Status PushKvCache(const Cache &src_cache, const CacheIndex &dst_cache_index, uint32_t src_batch_index = 0U,
                     int64_t size = -1, const KvCacheExtParam &ext_param = {});
  Status PushKvBlocks(const Cache &src_cache, const CacheIndex &dst_cache_index,
                      const std::vector<uint64_t> &src_blocks, const std::vector<uint64_t> &dst_blocks,
                      const KvCacheExtParam &ext_param = {});

  // One address per tensor (addrs.size() == num_tensors); the memory stays
  // the caller's.  The cache is visible to linked clusters.
  Status RegisterKvCache(const CacheDesc &cache_desc, const std::vector<uint64_t> &addrs, const RegisterCfg &cfg,
                         int64_t &cache_id);
  Status UnregisterKvCache(int64_t cache_id);

 private:
  friend struct ext::DataDistAccess;
  class LlmDataDistImpl;
  std::unique_ptr<LlmDataDistImpl> impl_;
};
}  // namespace llm_datadist

#endif  // LLM_DATADIST_LLM_DATADIST_H_
