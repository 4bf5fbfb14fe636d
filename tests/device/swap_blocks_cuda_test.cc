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

#include "cuda_device.h"
#include "llm_datadist/llm_datadist.h"
#include "llm_datadist/llm_datadist_ext.h"
#include "swap_blocks_check.h"

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

using adxl_test::CudaDevice;

#ifdef ADXL_TEST_HAVE_CUDA

std::vector<int32_t> ReadDevice(uintptr_t addr) {
  std::vector<int32_t> v(kBlocks * kBlockElems);
  EXPECT_EQ(cudaMemcpy(v.data(), reinterpret_cast<void *>(addr), kTensorBytes, cudaMemcpyDeviceToHost), cudaSuccess);
  return v;
}

// The round trip of swap_blocks_check.h on zeroed cudaMalloc or
// cudaMallocManaged tensors.
void SwapOutAndIn(bool managed) {
  LlmDataDist dd(1, LlmRole::kMix);
  ASSERT_EQ(ext::InitializeEngine(dd, "127.0.0.1", {}), llm_datadist::LLM_SUCCESS);
  std::vector<uintptr_t> dev_addrs;
  for (uint32_t t = 0; t < kTensors; ++t) {
    void *m = nullptr;
    ASSERT_EQ(managed ? cudaMallocManaged(&m, kTensorBytes) : cudaMalloc(&m, kTensorBytes), cudaSuccess);
    dev_addrs.push_back(reinterpret_cast<uintptr_t>(m));
    ASSERT_EQ(cudaMemset(m, 0, kTensorBytes), cudaSuccess);
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<std::vector<int32_t>> host;
  adxl_test::CheckSwapOutAndIn(dd, {kBlocks, kBlockElems}, dev_addrs, ReadDevice, &host);
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
