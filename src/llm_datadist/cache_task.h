// Layer-wise push (CacheManager::TransferCacheAsync, docs/cache_layer.md
// "Layer-wise push"): the types a caller hands in and the task it gets back.
//
// Contract
//  - TransferCacheAsync(src, synchronizer, targets, src_blocks, dst_blocks,
//    dst_block_bytes) validates everything it can before anything moves
//    (LLM_PARAM_INVALID, LLM_NOT_YET_LINK, LLM_KV_CACHE_NOT_EXIST as the
//    blocking calls) and then returns a CacheTask at once.  A background
//    thread owned by the CacheManager walks the layers L of the union of the
//    targets' source layer ranges in increasing order: it calls
//    synchronizer.SynchronizeLayer(L, timeout) (timeout: the manager's sync
//    timeout) and, as soon as it returns true, WRITEs layer L (its
//    tensor_num_per_layer = 2 tensors, K and V) to every target whose source
//    layer range holds L, one engine TransferSync per target and layer.
//  - SynchronizeLayer returning false ends the task with LLM_TIMEOUT (the
//    layer was not ready in time); a failure of the synchronizer (WaitLayer's
//    status, e.g. an exception in Python's synchronize_layer) with that
//    status.  The status goes to every target
//    that was due to receive that layer or had already received a layer; a
//    target none of whose layers was pushed yet stays "not started"
//    (std::nullopt, Python None), as the reference's get_results says.
//  - A transfer that fails for one target ends that target with the
//    engine's status; the other targets go on.
//  - Synchronize(timeout) / GetResults(timeout) wait for the task; when the
//    wait's timeout passes first, the task is cancelled: the call waits for a
//    TransferSync in flight to end (bounded by the sync timeout), marks every
//    unfinished target LLM_TIMEOUT and returns.  Once a task has reported its
//    result nothing more is pushed for it.  CacheManager::Finalize cancels
//    every task and joins its thread (a synchronizer must return within its
//    timeout for Finalize to return).
//
// Byte layout (per tensor pair; dst base = TransferConfig::dst_addrs[i] or
// the remote cache's tensor address):
//  - source not paged, no dst_blocks: the source batch entry src_batch_index
//    (bytes of one entry) -> dst base (for a remote non-paged cache named by
//    CacheKeyByIdAndIndex, dst base is moved to its batch_index);
//  - source not paged, dst_blocks: the entry cut into dst_block_bytes pieces,
//    piece k -> dst base + dst_blocks[k] * dst_block_bytes (as many pieces
//    as dst_blocks names, at most the entry);
//  - source paged: src_blocks[i] -> dst base + dst_blocks[i] * dst block
//    bytes (dst_block_bytes, or the source block size when 0; a source block
//    must fit).  A paged source needs dst_blocks (no paged -> non-paged).
#ifndef LLM_DATADIST_CACHE_TASK_H_
#define LLM_DATADIST_CACHE_TASK_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <variant>
#include <vector>

#include "cache_types.h"

namespace llm_datadist::internal {

// Implemented by the caller: returns when layer `layer_index` of the source
// may be sent (true), or false when it is not ready within timeout_ms.
// Called from the task's background thread, one layer at a time, in order.
class LayerSynchronizer {
 public:
  virtual ~LayerSynchronizer() = default;
  virtual bool SynchronizeLayer(uint32_t layer_index, int32_t timeout_ms) = 0;
  // What the task calls: LLM_SUCCESS (send the layer), LLM_TIMEOUT (not
  // ready in time) or another failure.  The default maps SynchronizeLayer's
  // answer; a binding may override it to report a failure of its own (the
  // Python package: an exception in synchronize_layer is LLM_FAILED).
  virtual Status WaitLayer(uint32_t layer_index, int32_t timeout_ms) {
    return SynchronizeLayer(layer_index, timeout_ms) ? LLM_SUCCESS : LLM_TIMEOUT;
  }
};

// A destination given by raw addresses at a linked cluster: dst_addrs holds
// two addresses (K, V) per layer of src_layer_range (all source layers when
// absent), in layer order.  The remote engine checks that they are
// registered there.
struct TransferConfig {
  uint64_t dst_cluster_id = 0;
  std::vector<uintptr_t> dst_addrs;
  std::optional<LayerRange> src_layer_range;
  uint32_t src_batch_index = 0;
};

// A destination given by a key of a remote-accessible cache of a linked
// cluster: source layers src_layer_range -> destination layers
// dst_layer_range (same length).
struct TransferWithCacheKeyConfig {
  std::variant<BlocksCacheKey, CacheKeyByIdAndIndex> cache_key;
  LayerRange src_layer_range;
  LayerRange dst_layer_range;
  uint32_t src_batch_index = 0;
};

using TransferTarget = std::variant<TransferConfig, TransferWithCacheKeyConfig>;

// The handle of one layer-wise push.  Copyable (copies share the task);
// a default-constructed CacheTask has no task (Synchronize: LLM_FAILED).
class CacheTask {
 public:
  struct State;
  CacheTask() = default;
  explicit CacheTask(std::shared_ptr<State> state) : state_(std::move(state)) {}

  // Waits for the task (timeout_ms absent: no limit) and returns its
  // status: LLM_SUCCESS when every target got every layer, else the first
  // failure.  See the contract above for a timeout that passes.
  Status Synchronize(std::optional<int32_t> timeout_ms = std::nullopt);
  // Waits like Synchronize and returns one result per target, in order:
  // std::nullopt for a target none of whose layers was pushed.
  std::vector<std::optional<Status>> GetResults(std::optional<int32_t> timeout_ms = std::nullopt);
  // True once the task has its result (no wait).
  bool Done() const;
  // Layers whose synchronizer returned true so far (for tests and tracing).
  uint32_t LayersSynchronized() const;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace llm_datadist::internal

#endif  // LLM_DATADIST_CACHE_TASK_H_
