// The round trip both SwapKvBlocks tests check, on whichever device memory
// their program has (tests/acl_host/device_cache_test.cc: the host ACL
// emulation's; tests/device/swap_blocks_cuda_test.cc: CUDA's): host blocks
// 3, 0 out to device blocks 1, 2 (and, a second list, 5, 7), then device
// blocks 2, 1 back into blocks 4, 6 of a zeroed host cache; every other
// block stays zero.  Blocks are single rows of `block_elems` int32 values;
// the host values are distinct per tensor and element.
#ifndef ADXL_TESTS_SUPPORT_SWAP_BLOCKS_CHECK_H_
#define ADXL_TESTS_SUPPORT_SWAP_BLOCKS_CHECK_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "llm_datadist/llm_datadist.h"
#include "llm_datadist/llm_datadist_ext.h"

namespace adxl_test {

struct SwapShape {
  int64_t blocks;       // >= 8
  int64_t block_elems;  // int32 values per block
};

// A paged cache of shape.blocks single-row blocks per tensor at `addrs`.
inline llm_datadist::ext::Cache SwapBlocksCache(const SwapShape &shape, const std::vector<uintptr_t> &addrs,
                                                llm_datadist::ext::Placement where) {
  llm_datadist::ext::Cache c;
  c.cache_desc.num_tensors = static_cast<uint32_t>(addrs.size());
  c.cache_desc.shape = {shape.blocks, shape.block_elems};
  c.cache_desc.data_type = llm_datadist::ext::DataType::DT_INT32;
  c.cache_desc.placement = where;
  c.tensor_addrs = addrs;
  c.paged = true;
  return c;
}

// `device`: one zeroed device tensor per address; `read(addr)` copies one
// device tensor to the host.  Returns the host cache the blocks came from
// (its memory lives in *host) for the caller's further checks.
inline llm_datadist::ext::Cache CheckSwapOutAndIn(llm_datadist::LlmDataDist &dd, const SwapShape &shape,
                                                  const std::vector<uintptr_t> &device,
                                                  const std::function<std::vector<int32_t>(uintptr_t)> &read,
                                                  std::vector<std::vector<int32_t>> *host) {
  namespace ext = llm_datadist::ext;
  const size_t elems = static_cast<size_t>(shape.blocks * shape.block_elems);
  host->assign(device.size(), std::vector<int32_t>(elems));
  std::vector<uintptr_t> host_addrs;
  for (size_t t = 0; t < device.size(); ++t) {
    for (size_t i = 0; i < elems; ++i) (*host)[t][i] = static_cast<int32_t>(1 + t * 100000 + i);
    host_addrs.push_back(reinterpret_cast<uintptr_t>((*host)[t].data()));
  }
  const ext::Cache h = SwapBlocksCache(shape, host_addrs, ext::Placement::HOST);
  const ext::Cache d = SwapBlocksCache(shape, device, ext::Placement::DEVICE);
  const auto block = [&shape](const std::vector<int32_t> &v, int64_t b) {
    return std::vector<int32_t>(v.begin() + b * shape.block_elems, v.begin() + (b + 1) * shape.block_elems);
  };
  const std::vector<int32_t> zero(static_cast<size_t>(shape.block_elems), 0);
  EXPECT_EQ(ext::SwapKvBlocks(dd, h, d, {3, 0}, {{1, 2}, {5, 7}}), llm_datadist::LLM_SUCCESS);
  for (size_t t = 0; t < device.size(); ++t) {
    const std::vector<int32_t> dev = read(device[t]);
    for (int64_t b = 0; b < shape.blocks; ++b) {
      const int64_t from = b == 1 || b == 5 ? 3 : b == 2 || b == 7 ? 0 : -1;
      EXPECT_EQ(block(dev, b), from < 0 ? zero : block((*host)[t], from)) << "tensor " << t << " device block " << b;
    }
  }
  std::vector<std::vector<int32_t>> back(device.size(), std::vector<int32_t>(elems, 0));
  std::vector<uintptr_t> back_addrs;
  for (auto &b : back) back_addrs.push_back(reinterpret_cast<uintptr_t>(b.data()));
  EXPECT_EQ(ext::SwapKvBlocks(dd, d, SwapBlocksCache(shape, back_addrs, ext::Placement::HOST), {2, 1}, {{4, 6}}),
            llm_datadist::LLM_SUCCESS);
  for (size_t t = 0; t < device.size(); ++t) {
    for (int64_t b = 0; b < shape.blocks; ++b) {
      const int64_t from = b == 4 ? 0 : b == 6 ? 3 : -1;
      EXPECT_EQ(block(back[t], b), from < 0 ? zero : block((*host)[t], from)) << "tensor " << t << " host block " << b;
    }
  }
  return h;
}

}  // namespace adxl_test

#endif  // ADXL_TESTS_SUPPORT_SWAP_BLOCKS_CHECK_H_
