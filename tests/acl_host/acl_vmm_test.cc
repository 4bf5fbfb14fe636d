// The host ACL runtime emulation's calls for transfer clients beyond plain
// device memory (emulation/acl/src/acl_vmm.cc, acl_memory.cc, acl_runtime.cc):
//  - physical memory, reservation and mapping: two mappings of one physical
//    allocation show the same bytes (file-backed), mapped memory is device
//    memory to copies and pointer attributes, a range past the mapped memory
//    is refused, unmap / release / free in the vendor's order;
//  - shareable handles, the uint64_t and the fabric (V2) forms, imported in
//    another process, which sees and changes the same bytes;
//  - aclrtMemcpyBatch (attributes, the failing index), streams with config,
//    their ordered asynchronous copies, synchronize with timeout, abort;
//  - aclrtHostRegister / Unregister, device ids, the SoC name, granularity,
//    aclrtGetMemInfo;
//  - mapped memory registered with the engine as MEM_DEVICE and written by a
//    peer engine on the same-node mapped lane (the file-backed path), every
//    byte checked.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "adxl/adxl_engine.h"
#include "adxl/adxl_ext.h"
#include "free_port.h"

namespace {

constexpr size_t kMiB = 1u << 20;

aclrtPhysicalMemProp DeviceProp(uint32_t device) {
  aclrtPhysicalMemProp p;
  memset(&p, 0, sizeof p);
  p.handleType = ACL_MEM_HANDLE_TYPE_NONE;
  p.allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED;
  p.memAttr = ACL_HBM_MEM_HUGE;
  p.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
  p.location.id = device;
  return p;
}

// Reserve `reserve` bytes and map `phys` (of `size` bytes) at its start.
void *ReserveAndMap(aclrtDrvMemHandle phys, size_t size, size_t reserve) {
  void *va = nullptr;
  EXPECT_EQ(aclrtReserveMemAddress(&va, reserve, 0, nullptr, 0), ACL_SUCCESS);
  EXPECT_EQ(aclrtMapMem(va, size, 0, phys, 0), ACL_SUCCESS);
  return va;
}

TEST(AclHostVmm, GranularityDeviceIdsAndSocName) {
  aclrtPhysicalMemProp p = DeviceProp(0);
  size_t g = 0;
  ASSERT_EQ(aclrtMemGetAllocationGranularity(&p, ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED, &g), ACL_SUCCESS);
  EXPECT_EQ(g, 2 * kMiB);
  int32_t phy = -1, logic = -1;
  ASSERT_EQ(aclrtGetPhyDevIdByLogicDevId(3, &phy), ACL_SUCCESS);
  EXPECT_EQ(phy, 3);
  ASSERT_EQ(aclrtGetLogicDevIdByUserDevId(2, &logic), ACL_SUCCESS);
  EXPECT_EQ(logic, 2);
  EXPECT_NE(aclrtGetPhyDevIdByLogicDevId(100000, &phy), ACL_SUCCESS);
  size_t free_bytes = 0, total_bytes = 0;
  ASSERT_EQ(aclrtGetMemInfo(ACL_HBM_MEM, &free_bytes, &total_bytes), ACL_SUCCESS);
  EXPECT_GT(total_bytes, 0u);
  EXPECT_LE(free_bytes, total_bytes);
  EXPECT_NE(aclrtGetMemInfo(ACL_HBM_MEM, nullptr, &total_bytes), ACL_SUCCESS);
  const char *soc = aclrtGetSocName();
  ASSERT_NE(soc, nullptr);
  EXPECT_EQ(std::string(soc).rfind("Ascend", 0), 0u) << soc;
}

TEST(AclHostVmm, TwoMappingsOfOnePhysicalAllocationShareTheBytes) {
  aclrtPhysicalMemProp p = DeviceProp(1);
  aclrtDrvMemHandle phys = nullptr;
  ASSERT_EQ(aclrtMallocPhysical(&phys, 2 * kMiB, &p, 0), ACL_SUCCESS);
  auto *a = static_cast<uint8_t *>(ReserveAndMap(phys, 2 * kMiB, 4 * kMiB));
  auto *b = static_cast<uint8_t *>(ReserveAndMap(phys, 2 * kMiB, 2 * kMiB));
  ASSERT_NE(a, b);
  for (size_t i = 0; i < 2 * kMiB; i += 4096) a[i] = static_cast<uint8_t>(i >> 12);
  for (size_t i = 0; i < 2 * kMiB; i += 4096) ASSERT_EQ(b[i], static_cast<uint8_t>(i >> 12)) << i;

  aclrtPtrAttributes attr;
  ASSERT_EQ(aclrtPointerGetAttributes(a + 100, &attr), ACL_SUCCESS);
  EXPECT_EQ(attr.location.type, ACL_MEM_LOCATION_TYPE_DEVICE);
  EXPECT_EQ(attr.location.id, 1u);
  // The unmapped half of the reservation is not device memory.
  ASSERT_EQ(aclrtPointerGetAttributes(a + 3 * kMiB, &attr), ACL_SUCCESS);
  EXPECT_NE(attr.location.type, ACL_MEM_LOCATION_TYPE_DEVICE);

  // Copies: mapped memory is device memory; a range past it is refused.
  std::vector<uint8_t> host(kMiB, 0x5a), back(kMiB);
  ASSERT_EQ(aclrtMemcpy(a + kMiB, kMiB, host.data(), kMiB, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpy(back.data(), kMiB, b + kMiB, kMiB, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  EXPECT_EQ(back, host);
  EXPECT_NE(aclrtMemcpy(back.data(), kMiB, a + 2 * kMiB - 10, kMiB, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  EXPECT_NE(aclrtMemcpy(host.data(), kMiB, a, kMiB, ACL_MEMCPY_HOST_TO_HOST), ACL_SUCCESS);  // a is device memory

  // Order: release refuses while mapped; unmap, then release; free.
  EXPECT_NE(aclrtReleaseMemAddress(a), ACL_SUCCESS);
  EXPECT_NE(aclrtUnmapMem(a + 4096), ACL_SUCCESS);  // not the start of a mapping
  ASSERT_EQ(aclrtUnmapMem(a), ACL_SUCCESS);
  ASSERT_EQ(aclrtReleaseMemAddress(a), ACL_SUCCESS);
  ASSERT_EQ(aclrtFreePhysical(phys), ACL_SUCCESS);  // still mapped at b: the bytes stay
  EXPECT_EQ(b[4096], 1);
  EXPECT_NE(aclrtMapMem(a, 2 * kMiB, 0, phys, 0), ACL_SUCCESS);  // a freed handle
  EXPECT_NE(aclrtFreePhysical(phys), ACL_SUCCESS);
  ASSERT_EQ(aclrtUnmapMem(b), ACL_SUCCESS);
  ASSERT_EQ(aclrtReleaseMemAddress(b), ACL_SUCCESS);
}

TEST(AclHostVmm, AdjacentMappingsFormOneDeviceRange) {
  aclrtPhysicalMemProp p = DeviceProp(0);
  aclrtDrvMemHandle h1 = nullptr, h2 = nullptr;
  ASSERT_EQ(aclrtMallocPhysical(&h1, 2 * kMiB, &p, 0), ACL_SUCCESS);
  ASSERT_EQ(aclrtMallocPhysical(&h2, 2 * kMiB, &p, 0), ACL_SUCCESS);
  void *va = nullptr;
  ASSERT_EQ(aclrtReserveMemAddress(&va, 4 * kMiB, 2 * kMiB, nullptr, 0), ACL_SUCCESS);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(va) % (2 * kMiB), 0u);
  auto *v = static_cast<uint8_t *>(va);
  ASSERT_EQ(aclrtMapMem(v, 2 * kMiB, 0, h1, 0), ACL_SUCCESS);
  EXPECT_NE(aclrtMapMem(v + kMiB, 2 * kMiB, 0, h2, 0), ACL_SUCCESS);  // overlaps
  ASSERT_EQ(aclrtMapMem(v + 2 * kMiB, 2 * kMiB, 0, h2, 0), ACL_SUCCESS);
  aclrtMemAccessDesc d;
  memset(&d, 0, sizeof d);
  d.flags = ACL_RT_MEM_ACCESS_FLAGS_READWRITE;
  d.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
  ASSERT_EQ(aclrtMemSetAccess(v, 4 * kMiB, &d, 1), ACL_SUCCESS);
  std::vector<uint8_t> host(3 * kMiB), back(3 * kMiB);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<uint8_t>(i * 7 + 3);
  ASSERT_EQ(aclrtMemcpy(v + kMiB / 2, host.size(), host.data(), host.size(), ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpy(back.data(), back.size(), v + kMiB / 2, back.size(), ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  EXPECT_EQ(back, host);
  for (void *m : {static_cast<void *>(v), static_cast<void *>(v + 2 * kMiB)}) ASSERT_EQ(aclrtUnmapMem(m), ACL_SUCCESS);
  ASSERT_EQ(aclrtReleaseMemAddress(va), ACL_SUCCESS);
  ASSERT_EQ(aclrtFreePhysical(h1), ACL_SUCCESS);
  ASSERT_EQ(aclrtFreePhysical(h2), ACL_SUCCESS);
}

// The child imports `shared` (the given form), maps it, checks the parent's
// pattern and writes its own; exit status 0 when all went well.
int ImportInChild(bool fabric, const aclrtMemFabricHandle &fh, uint64_t plain) {
  const pid_t pid = fork();
  if (pid != 0) {
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
  }
  aclrtDrvMemHandle h = nullptr;
  aclrtMemFabricHandle copy = fh;
  const aclError e = fabric ? aclrtMemImportFromShareableHandleV2(&copy, ACL_MEM_SHARE_HANDLE_TYPE_FABRIC, 0, &h)
                            : aclrtMemImportFromShareableHandle(plain, 0, &h);
  if (e != ACL_SUCCESS) _exit(1);
  void *va = nullptr;
  if (aclrtReserveMemAddress(&va, 2 * kMiB, 0, nullptr, 0) != ACL_SUCCESS) _exit(2);
  if (aclrtMapMem(va, 2 * kMiB, 0, h, 0) != ACL_SUCCESS) _exit(3);
  auto *p = static_cast<uint8_t *>(va);
  for (size_t i = 0; i < 2 * kMiB; i += 512) {
    if (p[i] != static_cast<uint8_t>(i / 512)) _exit(4);
  }
  for (size_t i = 0; i < 2 * kMiB; i += 512) p[i] = static_cast<uint8_t>(~(i / 512));
  _exit(0);
}

TEST(AclHostVmm, ShareableHandlesImportInAnotherProcess) {
  aclrtPhysicalMemProp p = DeviceProp(0);
  aclrtDrvMemHandle phys = nullptr;
  ASSERT_EQ(aclrtMallocPhysical(&phys, 2 * kMiB, &p, 0), ACL_SUCCESS);
  auto *a = static_cast<uint8_t *>(ReserveAndMap(phys, 2 * kMiB, 2 * kMiB));
  for (int fabric = 0; fabric < 2; ++fabric) {
    SCOPED_TRACE(fabric ? "fabric (V2)" : "uint64_t (V1)");
    for (size_t i = 0; i < 2 * kMiB; i += 512) a[i] = static_cast<uint8_t>(i / 512);
    aclrtMemFabricHandle fh;
    memset(&fh, 0, sizeof fh);
    uint64_t plain = 0;
    if (fabric) {
      ASSERT_EQ(aclrtMemExportToShareableHandleV2(phys, 0, ACL_MEM_SHARE_HANDLE_TYPE_FABRIC, &fh), ACL_SUCCESS);
      int32_t pid = getpid();
      EXPECT_EQ(aclrtMemSetPidToShareableHandleV2(&fh, ACL_MEM_SHARE_HANDLE_TYPE_FABRIC, &pid, 1), ACL_SUCCESS);
    } else {
      ASSERT_EQ(aclrtMemExportToShareableHandle(phys, ACL_MEM_HANDLE_TYPE_NONE, 0, &plain), ACL_SUCCESS);
      int32_t pid = getpid();
      EXPECT_EQ(aclrtMemSetPidToShareableHandle(plain, &pid, 1), ACL_SUCCESS);
    }
    ASSERT_EQ(ImportInChild(fabric != 0, fh, plain), 0);
    for (size_t i = 0; i < 2 * kMiB; i += 512) ASSERT_EQ(a[i], static_cast<uint8_t>(~(i / 512))) << i;
  }
  aclrtMemFabricHandle junk;
  memset(&junk, 0x11, sizeof junk);
  aclrtDrvMemHandle h = nullptr;
  EXPECT_NE(aclrtMemImportFromShareableHandleV2(&junk, ACL_MEM_SHARE_HANDLE_TYPE_FABRIC, 0, &h), ACL_SUCCESS);
  ASSERT_EQ(aclrtUnmapMem(a), ACL_SUCCESS);
  ASSERT_EQ(aclrtReleaseMemAddress(a), ACL_SUCCESS);
  ASSERT_EQ(aclrtFreePhysical(phys), ACL_SUCCESS);
}

TEST(AclHostVmm, MemcpyBatchFollowsItsAttributesAndNamesTheFailingCopy) {
  void *dev = nullptr;
  ASSERT_EQ(aclrtMalloc(&dev, 3 * 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  auto *d = static_cast<uint8_t *>(dev);
  std::vector<uint8_t> h0(4096, 1), h1(4096, 2), out(4096, 0);
  void *dsts[3] = {d, d + 4096, out.data()};
  void *srcs[3] = {h0.data(), h1.data(), d + 4096};
  size_t sizes[3] = {4096, 4096, 4096};
  size_t maxes[3] = {4096, 4096, 4096};
  aclrtMemcpyBatchAttr attrs[2];
  memset(attrs, 0, sizeof attrs);
  attrs[0].dstLoc.type = ACL_MEM_LOCATION_TYPE_DEVICE;  // copies 0, 1: host to device
  attrs[0].srcLoc.type = ACL_MEM_LOCATION_TYPE_HOST;
  attrs[1].dstLoc.type = ACL_MEM_LOCATION_TYPE_HOST;  // copy 2: device to host
  attrs[1].srcLoc.type = ACL_MEM_LOCATION_TYPE_DEVICE;
  size_t idx[2] = {0, 2};
  size_t fail = 7;
  ASSERT_EQ(aclrtMemcpyBatch(dsts, maxes, srcs, sizes, 3, attrs, idx, 2, &fail), ACL_SUCCESS);
  EXPECT_EQ(fail, SIZE_MAX);
  EXPECT_EQ(d[0], 1);
  EXPECT_EQ(out, h1);
  // Copy 1 claims a device source that is host memory: it fails, copy 0 is done.
  memset(d, 0, 4096);
  srcs[1] = h1.data();
  dsts[1] = h0.data();
  attrs[0].dstLoc.type = ACL_MEM_LOCATION_TYPE_DEVICE;
  EXPECT_NE(aclrtMemcpyBatch(dsts, maxes, srcs, sizes, 3, attrs, idx, 2, &fail), ACL_SUCCESS);
  EXPECT_EQ(fail, 1u);
  EXPECT_EQ(d[0], 1);
  size_t bad_idx[2] = {1, 2};
  EXPECT_NE(aclrtMemcpyBatch(dsts, maxes, srcs, sizes, 3, attrs, bad_idx, 2, &fail), ACL_SUCCESS);
  ASSERT_EQ(aclrtFree(dev), ACL_SUCCESS);
}

TEST(AclHostVmm, StreamsWithConfigCompleteAsyncCopiesInOrder) {
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStreamWithConfig(&s, 0, ACL_STREAM_FAST_LAUNCH | ACL_STREAM_FAST_SYNC), ACL_SUCCESS);
  void *dev = nullptr;
  ASSERT_EQ(aclrtMalloc(&dev, kMiB, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  std::vector<uint8_t> first(kMiB, 0x11), second(kMiB, 0x22), out(kMiB);
  ASSERT_EQ(aclrtMemcpyAsync(dev, kMiB, first.data(), kMiB, ACL_MEMCPY_HOST_TO_DEVICE, s), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpyAsync(dev, kMiB, second.data(), kMiB, ACL_MEMCPY_HOST_TO_DEVICE, s), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpyAsync(out.data(), kMiB, dev, kMiB, ACL_MEMCPY_DEVICE_TO_HOST, s), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStreamWithTimeout(s, 1000), ACL_SUCCESS);
  EXPECT_EQ(out, second);
  EXPECT_EQ(aclrtStreamAbort(s), ACL_SUCCESS);
  EXPECT_NE(aclrtSynchronizeStreamWithTimeout(s, -5), ACL_SUCCESS);
  ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
  EXPECT_NE(aclrtStreamAbort(s), ACL_SUCCESS);
  EXPECT_NE(aclrtSynchronizeStreamWithTimeout(s, 1000), ACL_SUCCESS);
  ASSERT_EQ(aclrtFree(dev), ACL_SUCCESS);
}

TEST(AclHostVmm, HostRegisterMapsHostMemoryForTheDevice) {
  std::vector<uint8_t> buf(8192);
  void *devp = nullptr;
  ASSERT_EQ(aclrtHostRegister(buf.data(), buf.size(), ACL_HOST_REGISTER_MAPPED, &devp), ACL_SUCCESS);
  EXPECT_EQ(devp, buf.data());
  aclrtPtrAttributes attr;
  ASSERT_EQ(aclrtPointerGetAttributes(buf.data() + 10, &attr), ACL_SUCCESS);
  EXPECT_EQ(attr.location.type, ACL_MEM_LOCATION_TYPE_HOST);
  EXPECT_NE(aclrtHostRegister(buf.data() + 4096, 10, ACL_HOST_REGISTER_MAPPED, &devp), ACL_SUCCESS);  // overlaps
  ASSERT_EQ(aclrtHostUnregister(buf.data()), ACL_SUCCESS);
  EXPECT_NE(aclrtHostUnregister(buf.data()), ACL_SUCCESS);
  ASSERT_EQ(aclrtPointerGetAttributes(buf.data() + 10, &attr), ACL_SUCCESS);
  EXPECT_EQ(attr.location.type, ACL_MEM_LOCATION_TYPE_UNREGISTERED);
}

// Mapped memory is MEM_DEVICE to the engine and moves on the same-node
// mapped lane (it is a file's pages, so the peer maps them).
TEST(AclHostVmm, MappedMemoryMovesThroughTheEngine) {
  aclrtPhysicalMemProp p = DeviceProp(0);
  aclrtDrvMemHandle phys = nullptr;
  ASSERT_EQ(aclrtMallocPhysical(&phys, 4 * kMiB, &p, 0), ACL_SUCCESS);
  auto *target = static_cast<uint8_t *>(ReserveAndMap(phys, 4 * kMiB, 4 * kMiB));
  memset(target, 0, 4 * kMiB);

  const int port = adxl_test::FreePort();
  const std::string name = "127.0.0.1:" + std::to_string(port);
  adxl::AdxlEngine server, client;
  ASSERT_EQ(server.Initialize(name.c_str(), {}), adxl::SUCCESS);
  ASSERT_EQ(client.Initialize("127.0.0.1", {}), adxl::SUCCESS);
  adxl::MemHandle sh = nullptr, ch = nullptr;
  adxl::MemDesc past{};
  past.addr = reinterpret_cast<uintptr_t>(target);
  past.len = 4 * kMiB + 4096;
  EXPECT_NE(server.RegisterMem(past, adxl::MEM_DEVICE, sh), adxl::SUCCESS);  // runs past the mapping
  adxl::MemDesc md{};
  md.addr = reinterpret_cast<uintptr_t>(target);
  md.len = 4 * kMiB;
  ASSERT_EQ(server.RegisterMem(md, adxl::MEM_DEVICE, sh), adxl::SUCCESS);
  std::vector<uint8_t> src(4 * kMiB);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>((i * 131u) ^ (i >> 11));
  adxl::MemDesc cd{};
  cd.addr = reinterpret_cast<uintptr_t>(src.data());
  cd.len = src.size();
  ASSERT_EQ(client.RegisterMem(cd, adxl::MEM_HOST, ch), adxl::SUCCESS);
  ASSERT_EQ(client.Connect(name.c_str(), 5000), adxl::SUCCESS);
  ASSERT_EQ(client.TransferSync(name.c_str(), adxl::WRITE, {{cd.addr, md.addr, cd.len}}, 10000), adxl::SUCCESS);
  EXPECT_EQ(memcmp(target, src.data(), src.size()), 0);
  std::vector<adxl::ext::LinkRegion> regions;
  ASSERT_EQ(adxl::ext::GetLinkRegions(client, name.c_str(), regions), adxl::SUCCESS);
  ASSERT_EQ(regions.size(), 1u);
  EXPECT_EQ(regions[0].mem_type, adxl::MEM_DEVICE);
  EXPECT_EQ(regions[0].path, "mapped/memfd");
  client.Disconnect(name.c_str());
  client.DeregisterMem(ch);
  server.DeregisterMem(sh);
  client.Finalize();
  server.Finalize();
  ASSERT_EQ(aclrtUnmapMem(target), ACL_SUCCESS);
  ASSERT_EQ(aclrtReleaseMemAddress(target), ACL_SUCCESS);
  ASSERT_EQ(aclrtFreePhysical(phys), ACL_SUCCESS);
}

}  // namespace
