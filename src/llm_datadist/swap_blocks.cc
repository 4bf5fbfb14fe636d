// Host <-> device block swaps (swap_blocks.h).
#include "swap_blocks.h"

#include <string>

#include "common/log.h"
#include "local_copy.h"
#include "memory/device_copy.h"

namespace llm_datadist::internal {
namespace {

constexpr const char *kWhat = "SwapKvBlocks";

const char *PlacementName(Placement p) { return p == Placement::HOST ? "HOST" : "DEVICE"; }

// A description the block size can be taken from, and one address per tensor.
bool CheckCache(const char *side, const Cache &c) {
  if (TensorBytes(c.cache_desc) == 0) {
    ADXL_ERROR("%s: the %s cache's description is invalid (empty shape, a dimension <= 0, or an unknown data type)",
               kWhat, side);
    return false;
  }
  if (c.tensor_addrs.size() != c.cache_desc.num_tensors) {
    ADXL_ERROR("%s: the %s cache has %zu addresses for num_tensors %u", kWhat, side, c.tensor_addrs.size(),
               c.cache_desc.num_tensors);
    return false;
  }
  for (uintptr_t a : c.tensor_addrs) {
    if (a == 0) {
      ADXL_ERROR("%s: the %s cache has a null tensor address", kWhat, side);
      return false;
    }
  }
  return true;
}

}  // namespace

Status SwapBlocks(const Cache &src, const Cache &dst, const std::vector<uint64_t> &src_blocks,
                  const std::vector<std::vector<uint64_t>> &dst_blocks_list) {
  if (!src.paged || !dst.paged) {
    ADXL_ERROR("%s: param check failed, src and dst caches should be blocks caches.", kWhat);
    return LLM_PARAM_INVALID;
  }
  if (!CheckCache("src", src) || !CheckCache("dst", dst)) return LLM_PARAM_INVALID;
  const uint64_t sb = TensorBytes(src.cache_desc) / static_cast<uint64_t>(src.cache_desc.shape[0]);
  const uint64_t db = TensorBytes(dst.cache_desc) / static_cast<uint64_t>(dst.cache_desc.shape[0]);
  if (sb != db) {
    ADXL_ERROR("%s: src block size:%lu and dst block size:%lu must be equal", kWhat, static_cast<unsigned long>(sb),
               static_cast<unsigned long>(db));
    return LLM_PARAM_INVALID;
  }
  if (src.cache_desc.num_tensors != dst.cache_desc.num_tensors) {
    ADXL_ERROR("%s: src and dst num_tensors must be equal (%u and %u)", kWhat, src.cache_desc.num_tensors,
               dst.cache_desc.num_tensors);
    return LLM_PARAM_INVALID;
  }
  std::vector<adxl::CopyPiece> pieces;
  const Status planned = PlanBlocks(kWhat, src, dst, src_blocks, dst_blocks_list, sb, &pieces);
  if (planned != LLM_SUCCESS) return planned;
  const Placement sp = src.cache_desc.placement, dp = dst.cache_desc.placement;
  if (sp == dp) {
    ADXL_ERROR("%s: swap from %s to %s is not supported (one cache HOST, the other DEVICE)", kWhat,
               PlacementName(sp), PlacementName(dp));
    return LLM_PARAM_INVALID;
  }
  std::string why;
  const adxl::CopyKind kind =
      sp == Placement::HOST ? adxl::CopyKind::kHostToDevice : adxl::CopyKind::kDeviceToHost;
  switch (adxl::DeviceCopy(pieces, kind, &why)) {
    case adxl::SUCCESS:
      return LLM_SUCCESS;
    case adxl::UNSUPPORTED:
      ADXL_ERROR("%s: %s", kWhat, why.c_str());
      return LLM_FEATURE_NOT_ENABLED;
    default:
      ADXL_ERROR("%s: the copy failed: %s", kWhat, why.c_str());
      return LLM_FAILED;
  }
}

}  // namespace llm_datadist::internal
