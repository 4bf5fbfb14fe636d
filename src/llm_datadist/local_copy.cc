// Local cache copies (local_copy.h).
#include "local_copy.h"

#include <cstring>
#include <string>

#include "common/log.h"
#include "memory/acl_host.h"

namespace llm_datadist::internal {

uint64_t EntryBytes(const CacheDesc &d);  // cache_manager.cc

namespace {

using Move = adxl::CopyPiece;  // the plan's pieces, PlanBlocks'

// A cache memcpy can reach: host memory, or device memory of the host ACL
// emulation (host memory underneath; memory/acl_host.h), each tensor inside
// one aclrtMalloc block.  Other device memory (CUDA, a real ACL runtime)
// needs that runtime's copy, which the cache layer does not call: *why.
bool HostReachable(const Cache &c, std::string *why) {
  if (c.cache_desc.placement == Placement::HOST) return true;
  const uint64_t bytes = TensorBytes(c.cache_desc);
  for (uintptr_t a : c.tensor_addrs) {
    std::string w;
    switch (adxl::QueryAclHostRange(a, bytes, &w)) {
      case adxl::AclHostRange::kInside:
        continue;
      case adxl::AclHostRange::kNoEmulation:
        *why = "no device runtime the cache layer can copy with is in this process (a device cache is copied "
               "here only on the host ACL emulation)";
        return false;
      case adxl::AclHostRange::kNotInside:
        *why = "its memory is not the host ACL emulation's (" + w +
               "), and the cache layer copies no other device memory";
        return false;
    }
  }
  return true;
}

Status CheckPair(const char *what, const Cache &src, const Cache &dst) {
  std::string why;
  for (const Cache *c : {&src, &dst}) {
    if (!HostReachable(*c, &why)) {
      ADXL_ERROR("%s: device cache %ld cannot be copied: %s", what, static_cast<long>(c->cache_id), why.c_str());
      return LLM_FEATURE_NOT_ENABLED;
    }
  }
  if (src.cache_desc.num_tensors != dst.cache_desc.num_tensors) {
    ADXL_ERROR("%s: source has %u tensors, destination %u", what, src.cache_desc.num_tensors,
               dst.cache_desc.num_tensors);
    return LLM_PARAM_INVALID;
  }
  return LLM_SUCCESS;
}

void Run(const std::vector<Move> &moves) {
  // memmove: a cache copied onto itself (overlapping blocks) stays defined.
  for (const Move &m : moves) {
    std::memmove(reinterpret_cast<void *>(m.dst), reinterpret_cast<const void *>(m.src), m.len);
  }
}

}  // namespace

Status CopyCache(const Cache &src, const Cache &dst, uint32_t src_batch, uint32_t dst_batch, uint64_t offset,
                 int64_t size) {
  const char *what = "CopyKvCache";
  Status s = CheckPair(what, src, dst);
  if (s != LLM_SUCCESS) return s;
  const uint64_t se = EntryBytes(src.cache_desc), de = EntryBytes(dst.cache_desc);
  if (src_batch >= static_cast<uint64_t>(src.cache_desc.shape[0]) ||
      dst_batch >= static_cast<uint64_t>(dst.cache_desc.shape[0])) {
    ADXL_ERROR("%s: batch index %u -> %u out of range (batches %ld, %ld)", what, src_batch, dst_batch,
               static_cast<long>(src.cache_desc.shape[0]), static_cast<long>(dst.cache_desc.shape[0]));
    return LLM_PARAM_INVALID;
  }
  if (offset >= se || (size != -1 && size <= 0)) {
    ADXL_ERROR("%s: offset %lu (entry of %lu bytes) or size %ld is invalid", what, static_cast<unsigned long>(offset),
               static_cast<unsigned long>(se), static_cast<long>(size));
    return LLM_PARAM_INVALID;
  }
  const uint64_t len = size == -1 ? se - offset : static_cast<uint64_t>(size);
  if (len > se - offset || offset + len > de) {
    ADXL_ERROR("%s: bytes [%lu, %lu) do not fit the entries (%lu and %lu bytes)", what,
               static_cast<unsigned long>(offset), static_cast<unsigned long>(offset + len),
               static_cast<unsigned long>(se), static_cast<unsigned long>(de));
    return LLM_PARAM_INVALID;
  }
  std::vector<Move> moves;
  for (size_t i = 0; i < src.tensor_addrs.size(); ++i) {
    moves.push_back({dst.tensor_addrs[i] + dst_batch * de + offset, src.tensor_addrs[i] + src_batch * se + offset,
                     len});
  }
  Run(moves);
  return LLM_SUCCESS;
}

Status CopyBlocks(const Cache &src, const Cache &dst, const std::vector<uint64_t> &src_blocks,
                  const std::vector<std::vector<uint64_t>> &dst_blocks_list) {
  const char *what = "CopyKvBlocks";
  Status s = CheckPair(what, src, dst);
  if (s != LLM_SUCCESS) return s;
  const uint64_t sb = EntryBytes(src.cache_desc), db = EntryBytes(dst.cache_desc);
  if (sb != db) {
    ADXL_ERROR("%s: block sizes differ (%lu and %lu bytes)", what, static_cast<unsigned long>(sb),
               static_cast<unsigned long>(db));
    return LLM_PARAM_INVALID;
  }
  if (src_blocks.empty() || dst_blocks_list.empty()) {
    ADXL_ERROR("%s: no source blocks or no destination list", what);
    return LLM_PARAM_INVALID;
  }
  std::vector<Move> moves;
  s = PlanBlocks(what, src, dst, src_blocks, dst_blocks_list, sb, &moves);
  if (s != LLM_SUCCESS) return s;
  Run(moves);
  return LLM_SUCCESS;
}

Status PlanBlocks(const char *what, const Cache &src, const Cache &dst, const std::vector<uint64_t> &src_blocks,
                  const std::vector<std::vector<uint64_t>> &dst_blocks_list, uint64_t block_bytes,
                  std::vector<adxl::CopyPiece> *pieces) {
  const uint64_t sn = static_cast<uint64_t>(src.cache_desc.shape[0]);
  const uint64_t dn = static_cast<uint64_t>(dst.cache_desc.shape[0]);
  for (const auto &dst_blocks : dst_blocks_list) {
    if (dst_blocks.size() != src_blocks.size()) {
      ADXL_ERROR("%s: %zu source blocks for %zu destination blocks", what, src_blocks.size(), dst_blocks.size());
      return LLM_PARAM_INVALID;
    }
    for (size_t k = 0; k < src_blocks.size(); ++k) {
      if (src_blocks[k] >= sn || dst_blocks[k] >= dn) {
        ADXL_ERROR("%s: block pair (%lu, %lu) out of range (%lu and %lu blocks)", what,
                   static_cast<unsigned long>(src_blocks[k]), static_cast<unsigned long>(dst_blocks[k]),
                   static_cast<unsigned long>(sn), static_cast<unsigned long>(dn));
        return LLM_PARAM_INVALID;
      }
    }
  }
  for (const auto &dst_blocks : dst_blocks_list) {
    for (size_t k = 0; k < src_blocks.size(); ++k) {
      for (size_t i = 0; i < src.tensor_addrs.size(); ++i) {
        pieces->push_back({dst.tensor_addrs[i] + dst_blocks[k] * block_bytes,
                           src.tensor_addrs[i] + src_blocks[k] * block_bytes, block_bytes});
      }
    }
  }
  return LLM_SUCCESS;
}

}  // namespace llm_datadist::internal
