// Device memory (docs/contract.md §4.6, §8, §9) through the public API: MallocMem /
// FreeMem / ExportToShareableHandle of MEM_DEVICE, RegisterMem(MEM_DEVICE),
// and transfers of device memory between two engines of this process.
//
// What runs depends on what exists, and every skip says why:
//  - everywhere: MallocMem(MEM_DEVICE) without a usable device is UNSUPPORTED
//    with an ERROR line naming the cause; host memory offered as MEM_DEVICE is
//    refused (UNSUPPORTED where UCX cannot move device memory, PARAM_INVALID
//    where it can but the range is not device memory) with an ERROR line, and
//    what was registered before stays registered and transfers.
//  - with the CUDA toolkit at build time (ADXL_TEST_HAVE_CUDA) and a GPU:
//    MallocMem blocks, the range check of RegisterMem, and WRITE / READ of
//    device memory on both lanes, verified with cudaMemcpy; the transfer tests
//    skip where UCX cannot move device memory (no CUDA in UCX, or its old RMA
//    protocols), naming that reason.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "adxl/adxl_engine.h"
#include "cuda_device.h"
#include "pattern.h"
#include "peer_process.h"

#ifdef ADXL_TEST_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

using namespace adxl;
using adxl_test::FillPattern;
using adxl_test::FreePort;
using adxl_test::LoopbackName;

namespace {

constexpr size_t kSize = 1u << 20;

// INFO lines carry what the transport says about device memory at Initialize
// ("device memory: CUDA" or "device memory: unsupported: ..."), which
// HostMemoryOfferedAsDeviceIsRefusedAndNothingIsLost reads.  Set before any
// engine call: the engine reads the level once.
const bool kInfoLogs = [] { return setenv("ADXL_LOG_LEVEL", "info", 1) == 0; }();

bool Contains(const std::string &text, const char *what) { return text.find(what) != std::string::npos; }

using adxl_test::CudaDevice;

// Page-aligned host memory.
struct HostBuffer {
  explicit HostBuffer(size_t n) : len(n) {
    void *p = nullptr;
    if (posix_memalign(&p, 4096, n) == 0) data = static_cast<uint8_t *>(p);
    if (data != nullptr) memset(data, 0, n);
  }
  ~HostBuffer() { free(data); }
  uintptr_t addr() const { return reinterpret_cast<uintptr_t>(data); }
  uint8_t *data = nullptr;
  size_t len;
};

// A listening target and a client-only initiator in this process.
class TwoEngines : public ::testing::Test {
 protected:
  void Start(const std::map<AscendString, AscendString> &opts = {}) {
    target_name_ = LoopbackName(FreePort());
    ASSERT_EQ(target_.Initialize(target_name_.c_str(), opts), SUCCESS);
    ASSERT_EQ(initiator_.Initialize("127.0.0.1", opts), SUCCESS);
  }
  void TearDown() override {
    initiator_.Finalize();
    target_.Finalize();
  }

  AdxlEngine initiator_;
  AdxlEngine target_;
  std::string target_name_;
};

// -------------------------------------------------------------- everywhere

TEST(DeviceMemoryTest, MallocMemWithoutADeviceIsUnsupportedAndSaysWhy) {
  std::string why;
  if (CudaDevice(&why)) GTEST_SKIP() << "a CUDA device is usable here: MallocMemDeviceBlockLifeCycle covers it";
  void *p = reinterpret_cast<void *>(0x1);
  testing::internal::CaptureStderr();
  const Status st = AdxlEngine::MallocMem(MEM_DEVICE, kSize, &p);
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(st, UNSUPPORTED);
  EXPECT_EQ(p, reinterpret_cast<void *>(0x1)) << "untouched on error";
  EXPECT_TRUE(Contains(log, "ERROR")) << log;
#ifdef ADXL_TEST_HAVE_CUDA
  // The cause, in the CUDA runtime's words.
  EXPECT_TRUE(Contains(log, "cudaGetDeviceCount")) << log;
#else
  EXPECT_TRUE(Contains(log, "without a device runtime")) << log;
#endif
  // Still a host allocator: nothing else is affected.
  ASSERT_EQ(AdxlEngine::MallocMem(MEM_HOST, kSize, &p), SUCCESS);
  EXPECT_EQ(AdxlEngine::FreeMem(p), SUCCESS);
}

TEST_F(TwoEngines, HostMemoryOfferedAsDeviceIsRefusedAndNothingIsLost) {
  ASSERT_TRUE(kInfoLogs);
  testing::internal::CaptureStderr();
  Start();
  const std::string init_log = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(Contains(init_log, "device memory: ")) << "the transport's word on device memory:\n" << init_log;
  const bool transport_takes_device =
      Contains(init_log, "device memory: CUDA") || Contains(init_log, "device memory: ROCm");
  HostBuffer remote(kSize), local(kSize), other(kSize);
  MemHandle remote_h = nullptr, local_h = nullptr;
  ASSERT_EQ(target_.RegisterMem({remote.addr(), remote.len}, MEM_HOST, remote_h), SUCCESS);
  ASSERT_EQ(initiator_.RegisterMem({local.addr(), local.len}, MEM_HOST, local_h), SUCCESS);
  ASSERT_EQ(initiator_.Connect(target_name_.c_str(), 5000), SUCCESS);

  // While a peer is linked: another host range, and the registered one itself.
  std::vector<Status> refused;
  std::string log;
  for (uintptr_t addr : {other.addr(), remote.addr()}) {
    MemHandle h = nullptr;
    testing::internal::CaptureStderr();
    refused.push_back(target_.RegisterMem({addr, kSize}, MEM_DEVICE, h));
    log += testing::internal::GetCapturedStderr();
  }
  MemHandle local_dev = nullptr;
  refused.push_back(initiator_.RegisterMem({local.addr() + 4096, 4096}, MEM_DEVICE, local_dev));

  // What was registered before is still there (the same handle back) ...
  MemHandle again = nullptr;
  ASSERT_EQ(target_.RegisterMem({remote.addr(), remote.len}, MEM_HOST, again), SUCCESS);
  EXPECT_EQ(again, remote_h);
  EXPECT_EQ(target_.DeregisterMem(again), SUCCESS);  // back to one reference
  // ... and the link moves bytes into and out of it.
  FillPattern(local.data, kSize, 7);
  std::vector<TransferOpDesc> descs;
  for (size_t off = 0; off < kSize; off += 64 * 1024) descs.push_back({local.addr() + off, remote.addr() + off, 64 * 1024});
  ASSERT_EQ(initiator_.TransferSync(target_name_.c_str(), WRITE, descs, 5000), SUCCESS);
  EXPECT_EQ(memcmp(remote.data, local.data, kSize), 0);
  FillPattern(remote.data, kSize, 8);
  ASSERT_EQ(initiator_.TransferSync(target_name_.c_str(), READ, descs, 5000), SUCCESS);
  EXPECT_EQ(memcmp(remote.data, local.data, kSize), 0);

  // Now the verdict on the refusals.
  if (!transport_takes_device) {
    // As on Debian's UCX: UNSUPPORTED, saying what is missing.
    for (Status st : refused) EXPECT_EQ(st, UNSUPPORTED);
    EXPECT_TRUE(Contains(log, "ERROR") && Contains(log, "device memory is not supported") &&
                Contains(log, "CUDA or ROCm"))
        << log;
    return;
  }
  std::string why;
  if (!CudaDevice(&why)) {
    GTEST_SKIP() << "this transport takes device memory and libadxl cannot check ranges here (" << why
                 << "): host memory offered as MEM_DEVICE is the caller's word (README, device memory)";
  }
  for (Status st : refused) EXPECT_EQ(st, PARAM_INVALID);
  EXPECT_TRUE(Contains(log, "ERROR") && Contains(log, "not CUDA device memory")) << log;
}

// -------------------------------------------------------------- CUDA + GPU

#ifdef ADXL_TEST_HAVE_CUDA

void ToDevice(void *dst, const void *src, size_t n) { ASSERT_EQ(cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice), cudaSuccess); }
std::vector<uint8_t> FromDevice(uintptr_t src, size_t n) {
  std::vector<uint8_t> v(n);
  EXPECT_EQ(cudaMemcpy(v.data(), reinterpret_cast<const void *>(src), n, cudaMemcpyDeviceToHost), cudaSuccess);
  return v;
}

TEST(DeviceMemoryTest, MallocMemDeviceBlockLifeCycle) {
  std::string why;
  if (!CudaDevice(&why)) GTEST_SKIP() << why;
  void *p = nullptr;
  ASSERT_EQ(AdxlEngine::MallocMem(MEM_DEVICE, kSize, &p), SUCCESS);
  ASSERT_NE(p, nullptr);
  cudaPointerAttributes attr{};
  ASSERT_EQ(cudaPointerGetAttributes(&attr, p), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeDevice);
  // Usable by this program's own CUDA runtime.
  std::vector<uint8_t> pattern(kSize);
  FillPattern(pattern.data(), kSize, 3);
  ToDevice(p, pattern.data(), kSize);
  EXPECT_EQ(FromDevice(reinterpret_cast<uintptr_t>(p), kSize), pattern);
  ShareableHandle h;
  EXPECT_EQ(AdxlEngine::ExportToShareableHandle(p, h), UNSUPPORTED);
  EXPECT_EQ(AdxlEngine::FreeMem(p), SUCCESS);
  EXPECT_EQ(AdxlEngine::FreeMem(p), PARAM_INVALID);
  EXPECT_EQ(AdxlEngine::ExportToShareableHandle(p, h), PARAM_INVALID);
}

TEST(DeviceMemoryTest, RegisterMemChecksThatTheRangeIsDeviceMemory) {
  std::string why;
  if (!CudaDevice(&why)) GTEST_SKIP() << why;
  AdxlEngine e;
  ASSERT_EQ(e.Initialize("127.0.0.1", {}), SUCCESS);
  void *dev = nullptr, *managed = nullptr, *pinned = nullptr;
  ASSERT_EQ(cudaMalloc(&dev, kSize), cudaSuccess);
  ASSERT_EQ(cudaMallocManaged(&managed, kSize), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(&pinned, kSize), cudaSuccess);
  MemHandle h = nullptr;
  const Status st = e.RegisterMem({reinterpret_cast<uintptr_t>(dev), kSize}, MEM_DEVICE, h);
  if (st == UNSUPPORTED) {
    e.Finalize();
    cudaFree(dev);
    cudaFree(managed);
    cudaFreeHost(pinned);
    GTEST_SKIP() << "UCX here cannot move device memory (no CUDA memory type, or UCX_PROTO_ENABLE=n); the engine's "
                    "ERROR line above says which";
  }
  EXPECT_EQ(st, SUCCESS);
  MemHandle bad = nullptr;
  EXPECT_EQ(e.RegisterMem({reinterpret_cast<uintptr_t>(managed), kSize}, MEM_DEVICE, bad), PARAM_INVALID);
  EXPECT_EQ(e.RegisterMem({reinterpret_cast<uintptr_t>(pinned), kSize}, MEM_DEVICE, bad), PARAM_INVALID);
  EXPECT_EQ(e.DeregisterMem(h), SUCCESS);
  e.Finalize();
  cudaFree(dev);
  cudaFree(managed);
  cudaFreeHost(pinned);
}

// WRITE and READ of device memory on each lane, with host memory on the
// other side too (D2rD, rD2D, H2rD, D2rH).
class DeviceTransfer : public TwoEngines, public ::testing::WithParamInterface<const char *> {};

TEST_P(DeviceTransfer, WriteAndReadVerified) {
  std::string why;
  if (!CudaDevice(&why)) GTEST_SKIP() << why;
  const std::string lane = GetParam();
  Start({{"GlobalResourceConfig",
          R"({"comm_resource_config": {"protocol_desc": [")" + lane + R"(:host", ")" + lane + R"(:device"]}})"}});
  void *ld = nullptr, *rd = nullptr;
  ASSERT_EQ(AdxlEngine::MallocMem(MEM_DEVICE, kSize, &ld), SUCCESS);
  ASSERT_EQ(AdxlEngine::MallocMem(MEM_DEVICE, kSize, &rd), SUCCESS);
  const uintptr_t l = reinterpret_cast<uintptr_t>(ld), r = reinterpret_cast<uintptr_t>(rd);
  HostBuffer lh(kSize), rh(kSize);
  MemHandle h[4] = {};
  const Status st = target_.RegisterMem({r, kSize}, MEM_DEVICE, h[0]);
  if (st == UNSUPPORTED) {
    AdxlEngine::FreeMem(ld);
    AdxlEngine::FreeMem(rd);
    GTEST_SKIP() << "UCX here cannot move device memory (no CUDA memory type, or UCX_PROTO_ENABLE=n); the engine's "
                    "ERROR line above says which";
  }
  ASSERT_EQ(st, SUCCESS);
  ASSERT_EQ(initiator_.RegisterMem({l, kSize}, MEM_DEVICE, h[1]), SUCCESS);
  ASSERT_EQ(target_.RegisterMem({rh.addr(), kSize}, MEM_HOST, h[2]), SUCCESS);
  ASSERT_EQ(initiator_.RegisterMem({lh.addr(), kSize}, MEM_HOST, h[3]), SUCCESS);
  ASSERT_EQ(initiator_.Connect(target_name_.c_str(), 5000), SUCCESS);

  // Blocks in a scattered order, so that a misplaced block shows.
  constexpr size_t kBlock = 64 * 1024;
  auto descs = [&](uintptr_t local, uintptr_t remote) {
    std::vector<TransferOpDesc> d;
    for (size_t i = 0; i < kSize / kBlock; ++i) {
      const size_t off = ((i * 7) % (kSize / kBlock)) * kBlock;
      d.push_back({local + off, remote + off, kBlock});
    }
    return d;
  };
  std::vector<uint8_t> pattern(kSize), got;

  // D2rD: WRITE device -> remote device.
  FillPattern(pattern.data(), kSize, 11);
  ToDevice(ld, pattern.data(), kSize);
  ASSERT_EQ(initiator_.TransferSync(target_name_.c_str(), WRITE, descs(l, r), 5000), SUCCESS);
  EXPECT_EQ(FromDevice(r, kSize), pattern);
  // rD2D: READ remote device -> device.
  FillPattern(pattern.data(), kSize, 12);
  ToDevice(rd, pattern.data(), kSize);
  ASSERT_EQ(initiator_.TransferSync(target_name_.c_str(), READ, descs(l, r), 5000), SUCCESS);
  EXPECT_EQ(FromDevice(l, kSize), pattern);
  // H2rD: WRITE host -> remote device.
  FillPattern(lh.data, kSize, 13);
  ASSERT_EQ(initiator_.TransferSync(target_name_.c_str(), WRITE, descs(lh.addr(), r), 5000), SUCCESS);
  EXPECT_EQ(FromDevice(r, kSize), std::vector<uint8_t>(lh.data, lh.data + kSize));
  // D2rH: WRITE device -> remote host.
  FillPattern(pattern.data(), kSize, 14);
  ToDevice(ld, pattern.data(), kSize);
  ASSERT_EQ(initiator_.TransferSync(target_name_.c_str(), WRITE, descs(l, rh.addr()), 5000), SUCCESS);
  EXPECT_EQ(memcmp(rh.data, pattern.data(), kSize), 0);
  // And host -> host on the same link still takes its own path.
  FillPattern(lh.data, kSize, 15);
  ASSERT_EQ(initiator_.TransferSync(target_name_.c_str(), WRITE, descs(lh.addr(), rh.addr()), 5000), SUCCESS);
  EXPECT_EQ(memcmp(rh.data, lh.data, kSize), 0);

  ASSERT_EQ(initiator_.Disconnect(target_name_.c_str(), 5000), SUCCESS);
  for (int i = 0; i < 4; ++i) EXPECT_EQ((i % 2 == 0 ? target_ : initiator_).DeregisterMem(h[i]), SUCCESS);
  EXPECT_EQ(AdxlEngine::FreeMem(ld), SUCCESS);
  EXPECT_EQ(AdxlEngine::FreeMem(rd), SUCCESS);
}

INSTANTIATE_TEST_SUITE_P(Lanes, DeviceTransfer, ::testing::Values("hccs", "roce"),
                         [](const ::testing::TestParamInfo<const char *> &i) { return std::string(i.param); });

#endif  // ADXL_TEST_HAVE_CUDA

}  // namespace
