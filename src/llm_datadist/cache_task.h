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

#include "cache_types.h"
#include "llm_datadist/llm_datadist_ext_layerwise.h"

namespace llm_datadist::internal {

// The types are public, our extension's
// (include/llm_datadist/llm_datadist_ext_layerwise.h).
using ext::CacheTask;
using ext::LayerSynchronizer;
using ext::TransferConfig;
using ext::TransferTarget;
using ext::TransferWithCacheKeyConfig;

}  // namespace llm_datadist::internal

#endif  // LLM_DATADIST_CACHE_TASK_H_
