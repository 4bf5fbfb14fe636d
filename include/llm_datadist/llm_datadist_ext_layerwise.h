// Our extension of the vendor's LLM-DataDist C++ API (not in the vendor's
// headers): the types of the layer-wise push, ext::TransferCacheAsync
// (llm_datadist_ext.h).  The contract, what moves where and when a task
// ends, is docs/cache_layer.md "Layer-wise push".
#ifndef LLM_DATADIST_LLM_DATADIST_EXT_LAYERWISE_H_
#define LLM_DATADIST_LLM_DATADIST_EXT_LAYERWISE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <variant>
#include <utility>
#include <vector>

#include "llm_datadist/llm_datadist_ext_types.h"

namespace llm_datadist {
namespace ext {

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
  // failure.  A timeout that passes first cancels the task (docs/cache_layer.md).
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

}  // namespace ext
}  // namespace llm_datadist

#endif  // LLM_DATADIST_LLM_DATADIST_EXT_LAYERWISE_H_
