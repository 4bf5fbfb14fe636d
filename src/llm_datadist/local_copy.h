// LlmDataDist::CopyKvCache / CopyKvBlocks: copies between two registered
// caches of one cluster.  The plan (which bytes go where) is checked in full
// before a byte moves; the copy is memcpy, so both caches must be host
// memory or device memory of the host ACL emulation (host memory underneath);
// other device memory: LLM_FEATURE_NOT_ENABLED with one ERROR line (the
// device runtime's copy is not wired in).
#ifndef LLM_DATADIST_SRC_LOCAL_COPY_H_
#define LLM_DATADIST_SRC_LOCAL_COPY_H_

#include <cstdint>
#include <vector>

#include "cache_types.h"
#include "memory/device_copy.h"

namespace llm_datadist::internal {

// src batch entry src_batch -> dst batch entry dst_batch, every tensor,
// bytes [offset, offset + size) of the entry (size -1: to the end of the
// source entry).
Status CopyCache(const Cache &src, const Cache &dst, uint32_t src_batch, uint32_t dst_batch, uint64_t offset,
                 int64_t size);
// src blocks src_blocks[i] -> dst blocks dst_blocks[i], for each list of
// dst_blocks_list (one source, several destinations).
Status CopyBlocks(const Cache &src, const Cache &dst, const std::vector<uint64_t> &src_blocks,
                  const std::vector<std::vector<uint64_t>> &dst_blocks_list);

// The block plan of CopyKvBlocks and SwapKvBlocks (swap_blocks.h): every
// list of dst_blocks_list as long as src_blocks and every index below its
// cache's block count (dimension 0), else LLM_PARAM_INVALID with one ERROR
// line naming `what`; then *pieces: src block src_blocks[k] -> dst block
// dst_blocks[k] of every tensor, block_bytes each, list by list and block by
// block (a cache copied onto itself sees its blocks move in that order).
Status PlanBlocks(const char *what, const Cache &src, const Cache &dst, const std::vector<uint64_t> &src_blocks,
                  const std::vector<std::vector<uint64_t>> &dst_blocks_list, uint64_t block_bytes,
                  std::vector<adxl::CopyPiece> *pieces);

}  // namespace llm_datadist::internal

#endif  // LLM_DATADIST_SRC_LOCAL_COPY_H_
