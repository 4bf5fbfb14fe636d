// ext::SwapKvBlocks (the Python package's swap_blocks): blocks between a host
// cache and a device cache of this process.  The caches need not be
// registered (a Cache.create_cpu_cache host cache is not): the Cache values
// given are used as they are, description and addresses.  Every argument is
// checked before a byte moves (the block plan is local_copy.h's PlanBlocks,
// shared with CopyKvBlocks); the copy is memory/device_copy.h's.
#ifndef LLM_DATADIST_SRC_SWAP_BLOCKS_H_
#define LLM_DATADIST_SRC_SWAP_BLOCKS_H_

#include <cstdint>
#include <vector>

#include "cache_types.h"

namespace llm_datadist::internal {

// src blocks src_blocks[i] -> dst blocks dst_blocks[i], every tensor, for
// each list of dst_blocks_list.  LLM_PARAM_INVALID (one ERROR line) unless
// both are blocks caches with valid descriptions and one address per tensor,
// of equal block size and num_tensors, every index in range, one HOST and
// the other DEVICE; LLM_FEATURE_NOT_ENABLED when no device runtime here can
// copy the device cache, LLM_FAILED when the runtime's copy failed (one
// ERROR line each).  No blocks: LLM_SUCCESS, nothing copied.
Status SwapBlocks(const Cache &src, const Cache &dst, const std::vector<uint64_t> &src_blocks,
                  const std::vector<std::vector<uint64_t>> &dst_blocks_list);

}  // namespace llm_datadist::internal

#endif  // LLM_DATADIST_SRC_SWAP_BLOCKS_H_
