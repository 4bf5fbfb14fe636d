// ext::SwapKvBlocks (include/llm_datadist/llm_datadist_ext.h) with CUDA
// memory: the copy's first step (src/memory/device_copy.h), cudaMemcpy
// between host blocks and blocks of cudaMalloc or cudaMallocManaged memory,
// each block where the mapping says and nothing else touched.  The host ACL
// emulation's path has its own test (tests/acl_host/device_cache_test.cc);
// this one needs the CUDA toolkit at build time and a GPU, and skips,
// saying which is missing, elsewhere.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "llm_datadist/llm_datadist.h"
#include "llm_datadist/llm_datadist_ext.h"

#ifdef ADXL_TEST_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace {

namespace ext = llm_datadist::ext;
using llm_datadist::LlmDataDist;
using llm_datadist::LlmRole;

constexpr int64_t kBlocks = 8;
constexpr int64_t kBlockElems = 1024;  // 4 KiB blocks of int32
constexpr uint32_t kTensors = 2;
constexpr size_t kTensorBytes = kBlocks * kBlockElems * sizeof(int32_t);

// Whether a CUDA device is usable; *why says why not.
bool CudaDevice(std::string *why) {
#ifdef ADXL_TEST_HAVE_CUDA
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    *why = std::string("no usable CUDA device (cudaGetDeviceCount: ") + cudaGetErrorString(e) + ")";
    return false;
  }
  if (n <= 0) *why = "no CUDA device";
  return n > 0;
#else
  *why = "built without the CUDA toolkit";
  return false;
#endif
}

#ifdef ADXL_TEST_HAVE_CUDA

ext::Cache Blocks(const std::vector<uintptr_t> &addrs, ext::Placement where) {
  ext::Cache c;
  c.cache_desc.num_tensors = kTensors;
  c.cache_desc.shape = {kBlocks, kBlockElems};
  c.cache_desc.data_type = ext::DataType::DT_INT32;
  c.cache_desc.placement = where;
  c.tensor_addrs = addrs;
  c.paged = true;
  return c;
}

std::vector<int32_t> Block(const std::vector<int32_t> &v, int64_t b) {
  return std::vector<int32_t>(v.begin() + b * kBlockElems, v.begin() + (b + 1) * kBlockElems);
}

std::vector<int32_t> ReadDevice(uintptr_t addr) {
  std::vector<int32_t> v(kBlocks * kBlockElems);
  EXPECT_EQ(cudaMemcpy(v.data(), reinterpret_cast<void *>(addr), kTensorBytes, cudaMemcpyDeviceToHost), cudaSuccess);
  return v;
}

// Out: host blocks 3, 0 -> device blocks 1, 2 and 5, 7; in: device blocks 2,
// 1 -> blocks 4, 6 of a zeroed host cache; every other block stays zero.
void SwapOutAndIn(bool managed) {
  LlmDataDist dd(1, LlmRole::kMix);
  ASSERT_EQ(ext::InitializeEngine(dd, "127.0.0.1", {}), llm_datadist::LLM_SUCCESS);
  std::vector<std::vector<int32_t>> host(kTensors, std::vector<int32_t>(kBlocks * kBlockElems));
  std::vector<uintptr_t> host_addrs, dev_addrs;
  for (uint32_t t = 0; t < kTensors; ++t) {
    for (size_t i = 0; i < host[t].size(); ++i) host[t][i] = static_cast<int32_t>(1 + t * 100000 + i);
    host_addrs.push_back(reinterpret_cast<uintptr_t>(host[t].data()));
    void *m = nullptr;
    ASSERT_EQ(managed ? cudaMallocManaged(&m, kTensorBytes) : cudaMalloc(&m, kTensorBytes), cudaSuccess);
    ASSERT_EQ(cudaMemset(m, 0, kTensorBytes), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    dev_addrs.push_back(reinterpret_cast<uintptr_t>(m));
  }
  const ext::Cache h = Blocks(host_addrs, ext::Placement::HOST), d = Blocks(dev_addrs, ext::Placement::DEVICE);
  ASSERT_EQ(ext::SwapKvBlocks(dd, h, d, {3, 0}, {{1, 2}, {5, 7}}), llm_datadist::LLM_SUCCESS);
  const std::vector<int32_t> zero(kBlockElems, 0);
  for (uint32_t t = 0; t < kTensors; ++t) {
    const std::vector<int32_t> dev = ReadDevice(dev_addrs[t]);
    for (int64_t b = 0; b < kBlocks; ++b) {
      const int64_t from = b == 1 || b == 5 ? 3 : b == 2 || b == 7 ? 0 : -1;
      EXPECT_EQ(Block(dev, b), from < 0 ? zero : Block(host[t], from)) << "tensor " << t << " device block " << b;
    }
  }
  std::vector<std::vector<int32_t>> back(kTensors, std::vector<int32_t>(kBlocks * kBlockElems, 0));
  std::vector<uintptr_t> back_addrs;
  for (auto &b : back) back_addrs.push_back(reinterpret_cast<uintptr_t>(b.data()));
  ASSERT_EQ(ext::SwapKvBlocks(dd, d, Blocks(back_addrs, ext::Placement::HOST), {2, 1}, {{4, 6}}),
            llm_datadist::LLM_SUCCESS);
  for (uint32_t t = 0; t < kTensors; ++t) {
    for (int64_t b = 0; b < kBlocks; ++b) {
      const int64_t from = b == 4 ? 0 : b == 6 ? 3 : -1;
      EXPECT_EQ(Block(back[t], b), from < 0 ? zero : Block(host[t], from)) << "tensor " << t << " host block " << b;
    }
  }
  for (uintptr_t a : dev_addrs) EXPECT_EQ(cudaFree(reinterpret_cast<void *>(a)), cudaSuccess);
  dd.Finalize();
}

#endif  // ADXL_TEST_HAVE_CUDA

TEST(SwapKvBlocksCuda, DeviceMemory) {
  std::string why;
  if (!CudaDevice(&why)) GTEST_SKIP() << why;
#ifdef ADXL_TEST_HAVE_CUDA
  SwapOutAndIn(false);
#endif
}

TEST(SwapKvBlocksCuda, ManagedMemory) {
  std::string why;
  if (!CudaDevice(&why)) GTEST_SKIP() << why;
#ifdef ADXL_TEST_HAVE_CUDA
  SwapOutAndIn(true);
#endif
}

}  // namespace
