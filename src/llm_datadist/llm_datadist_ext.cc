// Our extension of the vendor's C++ API (include/llm_datadist/llm_datadist_ext.h):
// each call checks that the LlmDataDist is initialized, as the class's own
// calls do (the cache layer refuses some calls on a finalized manager
// without a line), then forwards to the cache layer behind it
// (ext::DataDistAccess), whose bodies check the arguments and log the one
// ERROR line of a refusal; nothing else is decided here.
#include "llm_datadist/llm_datadist_ext.h"

#include <iterator>
#include <utility>

#include "cache_manager.h"
#include "datadist_access.h"
#include "options.h"
#include "swap_blocks.h"

namespace llm_datadist::ext {
namespace {

internal::CacheManager &Cm(LlmDataDist &datadist) { return DataDistAccess::Manager(datadist); }

// LLM_FAILED with one ERROR line naming `what` unless initialized; else
// call(the cache layer).
template <typename Call>
Status Forward(LlmDataDist &datadist, const char *what, Call call) {
  const Status s = DataDistAccess::Ready(datadist, what);
  return s == LLM_SUCCESS ? call(Cm(datadist)) : s;
}

}  // namespace

Status InitializeEngine(LlmDataDist &datadist, const std::string &local_engine,
                        const std::map<AscendString, AscendString> &engine_options) {
  return DataDistAccess::InitializeEngine(datadist, local_engine, engine_options);
}

Status SetSyncTimeout(LlmDataDist &datadist, int32_t timeout_ms) {
  return Forward(datadist, "SetSyncTimeout",
                 [&](internal::CacheManager &cm) { return cm.SetSyncTimeout(timeout_ms); });
}

Status MoveListener(LlmDataDist &datadist, const std::string &local_engine,
                    const std::map<AscendString, AscendString> &engine_options, const char *what) {
  const Status s = DataDistAccess::Ready(datadist, what);
  return s == LLM_SUCCESS ? DataDistAccess::MoveListener(datadist, local_engine, engine_options, what) : s;
}

Status RegisterCache(LlmDataDist &datadist, const CacheDesc &desc, const std::vector<uintptr_t> &addrs,
                     const std::vector<CacheKey> &cache_keys, std::optional<bool> remote_accessible, Cache &cache) {
  return Forward(datadist, "RegisterCache", [&](internal::CacheManager &cm) {
    return cm.RegisterCache(desc, addrs, cache_keys, remote_accessible, cache);
  });
}

Status RegisterBlocksCache(LlmDataDist &datadist, const CacheDesc &desc, const std::vector<uintptr_t> &addrs,
                           const std::optional<BlocksCacheKey> &blocks_cache_key,
                           std::optional<bool> remote_accessible, Cache &cache) {
  return Forward(datadist, "RegisterBlocksCache", [&](internal::CacheManager &cm) {
    return cm.RegisterBlocksCache(desc, addrs, blocks_cache_key, remote_accessible, cache);
  });
}

Status RemoveCacheKey(LlmDataDist &datadist, const CacheKey &key) {
  return Forward(datadist, "RemoveCacheKey", [&](internal::CacheManager &cm) { return cm.RemoveCacheKey(key); });
}

size_t RegisteredAddrCount(LlmDataDist &datadist) { return Cm(datadist).RegisteredAddrCount(); }

Status LinkClusters(LlmDataDist &datadist, const std::vector<ClusterEngine> &clusters, std::vector<Status> &rets,
                    int32_t timeout_ms) {
  return Forward(datadist, "LinkClusters", [&](internal::CacheManager &cm) {
    return cm.LinkClusters(clusters, rets, timeout_ms);
  });
}

Status UnlinkClusters(LlmDataDist &datadist, const std::vector<ClusterEngine> &clusters, std::vector<Status> &rets,
                      int32_t timeout_ms, bool force) {
  return Forward(datadist, "UnlinkClusters", [&](internal::CacheManager &cm) {
    return cm.UnlinkClusters(clusters, rets, timeout_ms, force);
  });
}

Status CheckLinkStatus(LlmDataDist &datadist, uint64_t remote_cluster_id) {
  return Forward(datadist, "CheckLinkStatus", [&](internal::CacheManager &cm) {
    return cm.CheckLinkStatus(remote_cluster_id);
  });
}

Status PullCache(LlmDataDist &datadist, const CacheKey &key, const Cache &dst, uint32_t batch_index, int64_t size,
                 const LayerRangeArgs &layers) {
  return Forward(datadist, "PullCache", [&](internal::CacheManager &cm) {
    return cm.PullCache(key, dst, batch_index, size, layers);
  });
}

Status PullCache(LlmDataDist &datadist, const CacheKeyByIdAndIndex &key, const Cache &dst, uint32_t batch_index,
                 int64_t size, const LayerRangeArgs &layers) {
  return Forward(datadist, "PullCache", [&](internal::CacheManager &cm) {
    return cm.PullCache(key, dst, batch_index, size, layers);
  });
}

Status PullBlocks(LlmDataDist &datadist, const BlocksCacheKey &key, const Cache &dst,
                  const std::vector<uint64_t> &src_blocks, const std::vector<uint64_t> &dst_blocks,
                  const LayerRangeArgs &layers) {
  return Forward(datadist, "PullBlocks", [&](internal::CacheManager &cm) {
    return cm.PullBlocks(key, dst, src_blocks, dst_blocks, layers);
  });
}

Status PullBlocks(LlmDataDist &datadist, const CacheKey &key, const Cache &dst, const std::vector<uint64_t> &src_blocks,
                  const std::vector<uint64_t> &dst_blocks, const LayerRangeArgs &layers) {
  return Forward(datadist, "PullBlocks", [&](internal::CacheManager &cm) {
    return cm.PullBlocks(key, dst, src_blocks, dst_blocks, layers);
  });
}

Status PullBlocks(LlmDataDist &datadist, const CacheKeyByIdAndIndex &key, const Cache &dst,
                  const std::vector<uint64_t> &src_blocks, const std::vector<uint64_t> &dst_blocks,
                  const LayerRangeArgs &layers) {
  return Forward(datadist, "PullBlocks", [&](internal::CacheManager &cm) {
    return cm.PullBlocks(key, dst, src_blocks, dst_blocks, layers);
  });
}

Status PushCache(LlmDataDist &datadist, const CacheKeyByIdAndIndex &key, const Cache &src, uint32_t src_batch_index,
                 int64_t size, const LayerRangeArgs &layers) {
  return Forward(datadist, "PushCache", [&](internal::CacheManager &cm) {
    return cm.PushCache(key, src, src_batch_index, size, layers);
  });
}

Status PushBlocks(LlmDataDist &datadist, const BlocksCacheKey &key, const Cache &src,
                  const std::vector<uint64_t> &src_blocks, const std::vector<uint64_t> &dst_blocks,
                  const LayerRangeArgs &layers) {
  return Forward(datadist, "PushBlocks", [&](internal::CacheManager &cm) {
    return cm.PushBlocks(key, src, src_blocks, dst_blocks, layers);
  });
}

Status SwapKvBlocks(LlmDataDist &datadist, const Cache &src_cache, const Cache &dst_cache,
                    const std::vector<uint64_t> &src_blocks,
                    const std::vector<std::vector<uint64_t>> &dst_blocks_list) {
  // The cache layer's state is not needed (the caches need not be
  // registered); initialized is still asked for, as by every call here.
  return Forward(datadist, "SwapKvBlocks", [&](internal::CacheManager &) {
    return internal::SwapBlocks(src_cache, dst_cache, src_blocks, dst_blocks_list);
  });
}

Status TransferCacheAsync(LlmDataDist &datadist, const Cache &src, std::shared_ptr<LayerSynchronizer> synchronizer,
                          const std::vector<TransferTarget> &targets, const std::vector<uint64_t> &src_blocks,
                          const std::vector<uint64_t> &dst_blocks, uint64_t dst_block_bytes, CacheTask &task) {
  return Forward(datadist, "TransferCacheAsync", [&](internal::CacheManager &cm) {
    return cm.TransferCacheAsync(src, std::move(synchronizer), targets, src_blocks, dst_blocks, dst_block_bytes,
                                 task);
  });
}

std::vector<adxl::StatusInfo> StatusTable() {
  std::vector<adxl::StatusInfo> table(std::begin(internal::kStatusTable), std::end(internal::kStatusTable));
  table.insert(table.end(), std::begin(internal::kStatusAliases), std::end(internal::kStatusAliases));
  return table;
}

const char *StatusName(Status status) { return internal::StatusName(status); }

void LogRefusal(const char *message) { internal::LogRefusal(message); }

size_t DataTypeSize(DataType type) { return internal::DataTypeSize(type); }

std::optional<EngineKey> EngineOptionKey(const std::string &key) { return internal::EngineOptionKey(key); }

std::vector<std::string> TransferBackends() {
  return std::vector<std::string>(std::begin(internal::kTransferBackends), std::end(internal::kTransferBackends));
}

}  // namespace llm_datadist::ext
