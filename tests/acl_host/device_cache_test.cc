// Device caches on the host ACL emulation (emulation/acl), in one process
// that has the emulation and no CUDA device:
//  - AdxlEngine::MallocMem(MEM_DEVICE) hands out the emulation's device
//    memory (aclrtPointerGetAttributes says DEVICE), FreeMem frees it;
//  - LlmDataDist::AllocateCache(kDevice) likewise, DeallocateCache frees it;
//  - RegisterKvCache of kDevice caches from aclrtMalloc, CopyKvCache and
//    CopyKvBlocks between device caches (and a host one), bytes checked by
//    aclrtMemcpy back to host;
//  - host memory claimed as a kDevice cache is refused;
//  - a kDevice cache registered after a link exists (lazily, as omni-infer
//    does) is pulled by the linked peer, with no relink;
//  - SwapKvBlocks (our extension; Python's swap_blocks) between a host cache
//    and the emulation's device memory, both ways, bytes checked; host
//    memory said to be DEVICE is FEATURE_NOT_ENABLED, nothing moved.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "error_lines.h"
#include "swap_blocks_check.h"
#include "adxl/adxl_engine.h"
#include "llm_datadist/llm_datadist.h"
#include "llm_datadist/llm_datadist_ext.h"

namespace {

using llm_datadist::Cache;
using llm_datadist::CacheDesc;
using llm_datadist::CachePlacement;
using llm_datadist::LlmDataDist;
using llm_datadist::LlmRole;

constexpr int64_t kRows = 8, kRowElems = 16;
constexpr size_t kTensorBytes = kRows * kRowElems * sizeof(int32_t);

using adxl_test::ErrorLines;

CacheDesc Desc(CachePlacement placement, uint32_t tensors) {
  CacheDesc d{};
  d.placement = placement;
  d.num_tensors = tensors;
  d.data_type = llm_datadist::DT_INT32;
  d.shape = {kRows, kRowElems};
  return d;
}

aclrtMemLocationType Where(const void *p) {
  aclrtPtrAttributes a{};
  EXPECT_EQ(aclrtPointerGetAttributes(p, &a), ACL_SUCCESS);
  return a.location.type;
}

std::vector<int32_t> Read(uint64_t dev) {
  std::vector<int32_t> v(kTensorBytes / sizeof(int32_t));
  EXPECT_EQ(aclrtMemcpy(v.data(), kTensorBytes, reinterpret_cast<void *>(dev), kTensorBytes,
                        ACL_MEMCPY_DEVICE_TO_HOST),
            ACL_SUCCESS);
  return v;
}

void Fill(uint64_t dev, int32_t seed) {
  std::vector<int32_t> v(kTensorBytes / sizeof(int32_t));
  for (size_t i = 0; i < v.size(); ++i) v[i] = seed * 100000 + static_cast<int32_t>(i);
  ASSERT_EQ(aclrtMemcpy(reinterpret_cast<void *>(dev), kTensorBytes, v.data(), kTensorBytes,
                        ACL_MEMCPY_HOST_TO_DEVICE),
            ACL_SUCCESS);
}

class DeviceCache : public testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS); }
};

TEST_F(DeviceCache, MallocMemDeviceIsEmulatedDeviceMemory) {
  void *p = nullptr;
  ASSERT_EQ(adxl::AdxlEngine::MallocMem(adxl::MEM_DEVICE, 12345, &p), adxl::SUCCESS);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(Where(p), ACL_MEM_LOCATION_TYPE_DEVICE);
  EXPECT_EQ(aclrtMemset(p, 12345, 0x5a, 12345), ACL_SUCCESS);  // the whole block is the emulation's
  adxl::ShareableHandle h{};
  EXPECT_EQ(ErrorLines([&] { EXPECT_EQ(adxl::AdxlEngine::ExportToShareableHandle(p, h), adxl::UNSUPPORTED); }), 1);
  EXPECT_EQ(adxl::AdxlEngine::FreeMem(p), adxl::SUCCESS);
  EXPECT_EQ(Where(p), ACL_MEM_LOCATION_TYPE_UNREGISTERED);
  // A program's own aclrtMalloc block is not the engine's to free.
  void *mine = nullptr;
  ASSERT_EQ(aclrtMalloc(&mine, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  EXPECT_NE(adxl::AdxlEngine::FreeMem(mine), adxl::SUCCESS);
  EXPECT_EQ(Where(mine), ACL_MEM_LOCATION_TYPE_DEVICE);
  EXPECT_EQ(aclrtFree(mine), ACL_SUCCESS);
}

TEST_F(DeviceCache, AllocateRegisterCopyDeallocate) {
  LlmDataDist dd(1, LlmRole::kDecoder);
  ASSERT_EQ(dd.Initialize({}), llm_datadist::LLM_SUCCESS);
  Cache a{};
  ASSERT_EQ(dd.AllocateCache(Desc(CachePlacement::kDevice, 2), a), llm_datadist::LLM_SUCCESS);
  ASSERT_EQ(a.tensor_addrs.size(), 2u);
  for (uint32_t t = 0; t < 2; ++t) {
    EXPECT_EQ(Where(reinterpret_cast<void *>(a.tensor_addrs[t])), ACL_MEM_LOCATION_TYPE_DEVICE);
    Fill(a.tensor_addrs[t], static_cast<int32_t>(t + 1));
  }
  // The program's own device memory, registered as a kDevice cache.
  std::vector<void *> mem(2, nullptr);
  std::vector<uint64_t> addrs;
  for (void *&m : mem) {
    ASSERT_EQ(aclrtMalloc(&m, kTensorBytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    ASSERT_EQ(aclrtMemset(m, kTensorBytes, 0, kTensorBytes), ACL_SUCCESS);
    addrs.push_back(reinterpret_cast<uint64_t>(m));
  }
  Cache b{};
  b.cache_desc = Desc(CachePlacement::kDevice, 2);
  b.tensor_addrs = addrs;
  ASSERT_EQ(dd.RegisterKvCache(b.cache_desc, addrs, {}, b.cache_id), llm_datadist::LLM_SUCCESS);

  // Entry 2 of a -> entry 6 of b, bytes [16, 48); blocks 0, 3 of a -> 1, 7 of b.
  ASSERT_EQ(dd.CopyKvCache(a, b, 2, 6, 16, 32), llm_datadist::LLM_SUCCESS);
  ASSERT_EQ(dd.CopyKvBlocks(a, b, {0, 3}, {{1, 7}}), llm_datadist::LLM_SUCCESS);
  for (uint32_t t = 0; t < 2; ++t) {
    const std::vector<int32_t> src = Read(a.tensor_addrs[t]), dst = Read(b.tensor_addrs[t]);
    std::vector<int32_t> want(src.size(), 0);
    for (int e = 4; e < 12; ++e) want[6 * kRowElems + e] = src[2 * kRowElems + e];
    for (int e = 0; e < kRowElems; ++e) {
      want[1 * kRowElems + e] = src[0 * kRowElems + e];
      want[7 * kRowElems + e] = src[3 * kRowElems + e];
    }
    EXPECT_EQ(dst, want) << "tensor " << t;
  }
  // Device -> host cache works too (host memory underneath).
  Cache h{};
  ASSERT_EQ(dd.AllocateCache(Desc(CachePlacement::kHost, 2), h), llm_datadist::LLM_SUCCESS);
  ASSERT_EQ(dd.CopyKvBlocks(b, h, {7}, {{0}}), llm_datadist::LLM_SUCCESS);
  EXPECT_EQ(std::memcmp(reinterpret_cast<const int32_t *>(h.tensor_addrs[1]), Read(a.tensor_addrs[1]).data() + 3 * kRowElems,
                        kRowElems * sizeof(int32_t)),
            0);

  const std::vector<uint64_t> freed = a.tensor_addrs;
  EXPECT_EQ(dd.DeallocateCache(a.cache_id), llm_datadist::LLM_SUCCESS);
  for (uint64_t p : freed) EXPECT_EQ(Where(reinterpret_cast<void *>(p)), ACL_MEM_LOCATION_TYPE_UNREGISTERED);
  EXPECT_EQ(dd.DeallocateCache(h.cache_id), llm_datadist::LLM_SUCCESS);
  EXPECT_EQ(dd.UnregisterKvCache(b.cache_id), llm_datadist::LLM_SUCCESS);
  for (void *m : mem) EXPECT_EQ(aclrtFree(m), ACL_SUCCESS);
  dd.Finalize();
}

// Host memory claimed as a kDevice cache is refused where the emulation can
// tell (it is in no aclrtMalloc block), so no such cache reaches a copy.
TEST_F(DeviceCache, HostMemoryAsDeviceCacheIsRefused) {
  LlmDataDist dd(1, LlmRole::kDecoder);
  ASSERT_EQ(dd.Initialize({}), llm_datadist::LLM_SUCCESS);
  Cache a{};
  ASSERT_EQ(dd.AllocateCache(Desc(CachePlacement::kDevice, 1), a), llm_datadist::LLM_SUCCESS);
  Cache h{};
  ASSERT_EQ(dd.AllocateCache(Desc(CachePlacement::kHost, 1), h), llm_datadist::LLM_SUCCESS);
  int64_t id = -1;
  EXPECT_GE(ErrorLines([&] {
              EXPECT_NE(dd.RegisterKvCache(Desc(CachePlacement::kDevice, 1), h.tensor_addrs, {}, id),
                        llm_datadist::LLM_SUCCESS);
            }),
            1);
  EXPECT_EQ(dd.DeallocateCache(a.cache_id), llm_datadist::LLM_SUCCESS);
  EXPECT_EQ(dd.DeallocateCache(h.cache_id), llm_datadist::LLM_SUCCESS);
  dd.Finalize();
}

uint16_t FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)), 0);
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len), 0);
  close(fd);
  return ntohs(a.sin_port);
}

// Both sides register their device caches after the link (the holder's is
// announced to the puller by the republished table): the pull moves them.
TEST_F(DeviceCache, RegisteredAfterTheLinkIsPulled) {
  const uint16_t port = FreePort();
  LlmDataDist holder(1, LlmRole::kPrompt), puller(2, LlmRole::kDecoder);
  const std::string listen = "127.0.0.1:" + std::to_string(port);
  ASSERT_EQ(holder.Initialize({{llm_datadist::OPTION_LISTEN_IP_INFO, listen.c_str()}}), llm_datadist::LLM_SUCCESS);
  ASSERT_EQ(puller.Initialize({}), llm_datadist::LLM_SUCCESS);
  llm_datadist::ClusterInfo c{};
  c.remote_cluster_id = 1;
  llm_datadist::IpInfo ip{};
  ip.ip = "127.0.0.1";
  ip.port = port;
  c.remote_ip_infos.push_back(ip);
  std::vector<llm_datadist::Status> rets;
  ASSERT_EQ(puller.LinkLlmClusters({c}, rets, 3000), llm_datadist::LLM_SUCCESS);
  Cache src{}, dst{};
  ASSERT_EQ(holder.AllocateCache(Desc(CachePlacement::kDevice, 2), src), llm_datadist::LLM_SUCCESS);
  ASSERT_EQ(puller.AllocateCache(Desc(CachePlacement::kDevice, 2), dst), llm_datadist::LLM_SUCCESS);
  for (uint32_t t = 0; t < 2; ++t) {
    Fill(src.tensor_addrs[t], static_cast<int32_t>(t + 7));
    ASSERT_EQ(aclrtMemset(reinterpret_cast<void *>(dst.tensor_addrs[t]), kTensorBytes, 0, kTensorBytes), ACL_SUCCESS);
  }
  llm_datadist::CacheIndex from{};
  from.cluster_id = 1;
  from.cache_id = src.cache_id;
  ASSERT_EQ(puller.PullKvBlocks(from, dst, {2, 5}, {0, 6}), llm_datadist::LLM_SUCCESS);
  for (uint32_t t = 0; t < 2; ++t) {
    const std::vector<int32_t> s = Read(src.tensor_addrs[t]), d = Read(dst.tensor_addrs[t]);
    std::vector<int32_t> want(s.size(), 0);
    for (int e = 0; e < kRowElems; ++e) {
      want[0 * kRowElems + e] = s[2 * kRowElems + e];
      want[6 * kRowElems + e] = s[5 * kRowElems + e];
    }
    EXPECT_EQ(d, want) << "tensor " << t;
  }
  ASSERT_EQ(puller.UnlinkLlmClusters({c}, rets, 3000, true), llm_datadist::LLM_SUCCESS);
  puller.Finalize();
  holder.Finalize();
}

// ext::SwapKvBlocks: host blocks out to the emulation's device memory and
// back in, each block where the mapping says and nothing else touched.  (The
// emulation is linked here, as by a program of the vendor's stack; the
// cache layer finds it by dlsym, memory/acl_host.h.)
TEST_F(DeviceCache, SwapKvBlocksMovesBlocksBetweenHostAndDevice) {
  namespace ext = llm_datadist::ext;
  LlmDataDist dd(1, LlmRole::kMix);
  ASSERT_EQ(ext::InitializeEngine(dd, "127.0.0.1", {}), llm_datadist::LLM_SUCCESS);
  constexpr uint32_t kTensors = 2;
  const adxl_test::SwapShape shape{kRows, kRowElems};  // kRows blocks of one row each
  std::vector<uintptr_t> dev_addrs;
  for (uint32_t t = 0; t < kTensors; ++t) {  // zeroed aclrtMalloc blocks
    void *m = nullptr;
    ASSERT_EQ(aclrtMalloc(&m, kTensorBytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    dev_addrs.push_back(reinterpret_cast<uintptr_t>(m));
    ASSERT_EQ(aclrtMemset(m, kTensorBytes, 0, kTensorBytes), ACL_SUCCESS);
  }
  std::vector<std::vector<int32_t>> host;
  const ext::Cache h = adxl_test::CheckSwapOutAndIn(
      dd, shape, dev_addrs, [](uintptr_t a) { return Read(a); }, &host);
  // Host memory said to be DEVICE: no runtime here copies it, nothing moves.
  std::vector<std::vector<int32_t>> posing(kTensors, std::vector<int32_t>(kRows * kRowElems, 0));
  std::vector<uintptr_t> posing_addrs;
  for (auto &p : posing) posing_addrs.push_back(reinterpret_cast<uintptr_t>(p.data()));
  EXPECT_EQ(ErrorLines([&] {
              EXPECT_EQ(ext::SwapKvBlocks(dd, h, adxl_test::SwapBlocksCache(shape, posing_addrs, ext::Placement::DEVICE),
                                          {0}, {{0}}),
                        llm_datadist::LLM_FEATURE_NOT_ENABLED);
            }),
            1);
  for (const auto &p : posing) EXPECT_EQ(p, std::vector<int32_t>(kRows * kRowElems, 0));
  for (uintptr_t a : dev_addrs) EXPECT_EQ(aclrtFree(reinterpret_cast<void *>(a)), ACL_SUCCESS);
  dd.Finalize();
}

}  // namespace
