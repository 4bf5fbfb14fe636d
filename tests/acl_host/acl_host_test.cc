// The host ACL runtime emulation (emulation/acl) with the engine:
//  - the runtime calls on their own: every aclrtMemcpy kind, memset,
//    pointer attributes, devices, streams, and bad input (unknown pointer,
//    double free, wrong free call, out-of-range copies) giving a clear status
//    and an aclGetRecentErrMsg text;
//  - aclrtMalloc memory registered as MEM_DEVICE (range-checked against its
//    block), refused past its block or when not from aclrtMalloc, with the
//    engine's ERROR line coming back from aclGetRecentErrMsg;
//  - transfers of it both ways between two real processes (this program
//    re-executed as the peer) on the same-node lane and, forced with
//    protocol_desc roce:device, on the network lane, every byte checked, and
//    the peer's region advertised as device memory.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "adxl/adxl_engine.h"
#include "adxl/adxl_ext.h"
#include "free_port.h"

using namespace adxl;

namespace {

constexpr size_t kSize = 4u << 20;
constexpr char kPeerEnv[] = "ADXL_ACL_HOST_TEST_PEER";

std::string RecentErr() {
  const char *m = aclGetRecentErrMsg();
  return m == nullptr ? std::string() : std::string(m);
}

uint8_t Byte(size_t i, uint8_t seed) { return static_cast<uint8_t>((i * 131u + seed) ^ (i >> 9)); }

std::vector<uint8_t> Pattern(uint8_t seed) {
  std::vector<uint8_t> v(kSize);
  for (size_t i = 0; i < kSize; ++i) v[i] = Byte(i, seed);
  return v;
}

std::map<AscendString, AscendString> Options(const std::string &protocol) {
  std::map<AscendString, AscendString> o;
  if (!protocol.empty()) {
    o["GlobalResourceConfig"] =
        AscendString(("{\"comm_resource_config.protocol_desc\": [\"" + protocol + "\"]}").c_str());
  }
  return o;
}

// The peer: device memory filled with pattern 1, registered as MEM_DEVICE;
// prints its address, then waits for a line on stdin and checks that the
// buffer now holds pattern 2 (what the test wrote).  Exit 0: all good.
int PeerMain(const char *name, const char *protocol) {
  if (aclrtSetDevice(1) != ACL_SUCCESS) return 10;
  void *dev = nullptr;
  if (aclrtMalloc(&dev, kSize, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) return 11;
  std::vector<uint8_t> p1 = Pattern(1);
  if (aclrtMemcpy(dev, kSize, p1.data(), kSize, ACL_MEMCPY_HOST_TO_DEVICE) != ACL_SUCCESS) return 12;
  AdxlEngine engine;
  if (engine.Initialize(name, Options(protocol)) != SUCCESS) return 13;
  MemHandle h = nullptr;
  if (engine.RegisterMem(MemDesc{reinterpret_cast<uintptr_t>(dev), kSize}, MEM_DEVICE, h) != SUCCESS) return 14;
  printf("%llu\n", static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(dev)));
  fflush(stdout);
  char line[16];
  if (fgets(line, sizeof(line), stdin) == nullptr) return 15;
  std::vector<uint8_t> back(kSize);
  if (aclrtMemcpy(back.data(), kSize, dev, kSize, ACL_MEMCPY_DEVICE_TO_HOST) != ACL_SUCCESS) return 16;
  const int rc = back == Pattern(2) ? 0 : 17;
  engine.DeregisterMem(h);
  engine.Finalize();
  aclrtFree(dev);
  aclrtResetDevice(1);
  return rc;
}

// The peer process, with pipes to its stdin and from its stdout.
class Peer {
 public:
  Peer(const std::string &name, const std::string &protocol) {
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      close(in[1]);
      close(out[0]);
      setenv(kPeerEnv, "1", 1);
      char exe[] = "/proc/self/exe";
      std::string n = name, p = protocol.empty() ? "-" : protocol;
      char *argv[] = {exe, &n[0], &p[0], nullptr};
      execv(exe, argv);
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    to_ = fdopen(in[1], "w");
    from_ = fdopen(out[0], "r");
  }
  ~Peer() {
    if (to_ != nullptr) fclose(to_);
    if (from_ != nullptr) fclose(from_);
    if (pid_ > 0 && !reaped_) waitpid(pid_, nullptr, 0);
  }
  uintptr_t ReadAddress() {
    unsigned long long a = 0;
    if (from_ == nullptr || fscanf(from_, "%llu", &a) != 1) return 0;
    return static_cast<uintptr_t>(a);
  }
  // Tells the peer to check its buffer; its exit status.
  int Finish() {
    fputs("go\n", to_);
    fflush(to_);
    int st = 0;
    waitpid(pid_, &st, 0);
    reaped_ = true;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  FILE *to_ = nullptr;
  FILE *from_ = nullptr;
};

TEST(AclHostRuntime, EveryCopyKindMovesTheBytes) {
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  int32_t dev_id = -1;
  ASSERT_EQ(aclrtGetDevice(&dev_id), ACL_SUCCESS);
  EXPECT_EQ(dev_id, 0);
  uint32_t count = 0;
  ASSERT_EQ(aclrtGetDeviceCount(&count), ACL_SUCCESS);
  EXPECT_GE(count, 2u);
  void *d1 = nullptr, *d2 = nullptr, *h = nullptr;
  ASSERT_EQ(aclrtMalloc(&d1, 4096, ACL_MEM_MALLOC_HUGE_ONLY), ACL_SUCCESS);
  ASSERT_EQ(aclrtMalloc(&d2, 4096, ACL_MEM_MALLOC_NORMAL_ONLY), ACL_SUCCESS);
  ASSERT_EQ(aclrtMallocHost(&h, 4096), ACL_SUCCESS);
  std::vector<uint8_t> src(4096), dst(4096);
  for (size_t i = 0; i < src.size(); ++i) src[i] = Byte(i, 7);
  ASSERT_EQ(aclrtMemcpy(d1, 4096, src.data(), 4096, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpy(d2, 4096, d1, 4096, ACL_MEMCPY_DEVICE_TO_DEVICE), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpy(h, 4096, d2, 4096, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpy(dst.data(), 4096, h, 4096, ACL_MEMCPY_HOST_TO_HOST), ACL_SUCCESS);
  EXPECT_EQ(dst, src);
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemset(d1, 4096, 0x3C, 4096), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemcpyAsync(dst.data(), 4096, d1, 4096, ACL_MEMCPY_DEFAULT, s), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
  EXPECT_EQ(dst, std::vector<uint8_t>(4096, 0x3C));
  ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
  aclrtPtrAttributes a{};
  ASSERT_EQ(aclrtPointerGetAttributes(static_cast<char *>(d1) + 100, &a), ACL_SUCCESS);
  EXPECT_EQ(a.location.type, ACL_MEM_LOCATION_TYPE_DEVICE);
  EXPECT_EQ(a.location.id, 0u);
  ASSERT_EQ(aclrtPointerGetAttributes(h, &a), ACL_SUCCESS);
  EXPECT_EQ(a.location.type, ACL_MEM_LOCATION_TYPE_HOST);
  ASSERT_EQ(aclrtPointerGetAttributes(src.data(), &a), ACL_SUCCESS);
  EXPECT_EQ(a.location.type, ACL_MEM_LOCATION_TYPE_UNREGISTERED);
  EXPECT_EQ(aclrtFree(d1), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(d2), ACL_SUCCESS);
  EXPECT_EQ(aclrtFreeHost(h), ACL_SUCCESS);
  EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
  EXPECT_EQ(aclInit(nullptr), ACL_SUCCESS);
  EXPECT_EQ(aclInit(nullptr), ACL_ERROR_REPEAT_INITIALIZE);
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
}

TEST(AclHostRuntime, AnotherThreadAdoptsTheContextAndItsDevice) {
  ASSERT_EQ(aclrtSetDevice(3), ACL_SUCCESS);
  aclrtContext ctx = nullptr;
  ASSERT_EQ(aclrtGetCurrentContext(&ctx), ACL_SUCCESS);
  int32_t seen = -1;
  aclError get_before = ACL_SUCCESS;
  std::thread t([&] {
    aclrtContext none = nullptr;
    get_before = aclrtGetCurrentContext(&none);  // a new thread has none
    if (aclrtSetCurrentContext(ctx) == ACL_SUCCESS) aclrtGetDevice(&seen);
  });
  t.join();
  EXPECT_EQ(get_before, ACL_ERROR_RT_CONTEXT_NULL);
  EXPECT_EQ(seen, 3);
  EXPECT_EQ(aclrtSetCurrentContext(reinterpret_cast<aclrtContext>(&seen)), ACL_ERROR_RT_PARAM_INVALID);
  aclrtContext c5 = nullptr;
  ASSERT_EQ(aclrtCreateContext(&c5, 5), ACL_SUCCESS);
  int32_t dev = -1;
  EXPECT_EQ(aclrtGetDevice(&dev), ACL_SUCCESS);
  EXPECT_EQ(dev, 5);
  EXPECT_EQ(aclrtDestroyContext(c5), ACL_SUCCESS);
  EXPECT_EQ(aclrtResetDevice(5), ACL_SUCCESS);
  EXPECT_EQ(aclrtResetDevice(3), ACL_SUCCESS);
}

TEST(AclHostRuntime, BadInputGivesAStatusAndARecentErrorMessage) {
  RecentErr();  // start clean
  EXPECT_EQ(aclGetRecentErrMsg(), nullptr);
  void *d = nullptr;
  EXPECT_EQ(aclrtMalloc(&d, 0, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(RecentErr().find("size is 0"), std::string::npos);
  EXPECT_EQ(aclrtSetDevice(100000), ACL_ERROR_RT_INVALID_DEVICEID);
  EXPECT_NE(RecentErr().find("no such device"), std::string::npos);
  ASSERT_EQ(aclrtMalloc(&d, 8192, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  EXPECT_EQ(aclrtFreeHost(d), ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_NE(RecentErr().find("free it with aclrtFree"), std::string::npos);
  EXPECT_EQ(aclrtFree(static_cast<char *>(d) + 16), ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_NE(RecentErr().find("not the start of a block"), std::string::npos);
  std::vector<uint8_t> host(16384);
  EXPECT_EQ(aclrtMemcpy(d, 16384, host.data(), 16384, ACL_MEMCPY_HOST_TO_DEVICE), ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_NE(RecentErr().find("past the end"), std::string::npos);
  EXPECT_EQ(aclrtMemcpy(host.data(), 100, d, 200, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(RecentErr().find("destMax"), std::string::npos);
  EXPECT_EQ(aclrtMemcpy(host.data(), 16, host.data() + 16, 16, ACL_MEMCPY_DEVICE_TO_HOST), ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_NE(RecentErr().find("not device memory"), std::string::npos);
  EXPECT_EQ(aclrtFree(d), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(d), ACL_ERROR_RT_PARAM_INVALID);  // double free
  EXPECT_NE(RecentErr().find("already freed"), std::string::npos);
  EXPECT_EQ(aclrtFree(host.data()), ACL_ERROR_RT_PARAM_INVALID);  // never allocated
  EXPECT_NE(RecentErr().find("unknown pointer"), std::string::npos);
  EXPECT_EQ(aclrtDestroyStream(reinterpret_cast<aclrtStream>(host.data())), ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_EQ(aclGetRecentErrMsg() != nullptr, true);
  EXPECT_EQ(aclGetRecentErrMsg(), nullptr);  // taken: cleared
}

TEST(AclHostEngine, DeviceMemoryRegistersAsMemDeviceRangeChecked) {
  AdxlEngine engine;
  ASSERT_EQ(engine.Initialize("127.0.0.1", {}), SUCCESS);
  void *d = nullptr;
  ASSERT_EQ(aclrtMalloc(&d, kSize, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  const uintptr_t a = reinterpret_cast<uintptr_t>(d);
  MemHandle h = nullptr;
  EXPECT_EQ(engine.RegisterMem(MemDesc{a + 4096, kSize - 8192}, MEM_DEVICE, h), SUCCESS);
  EXPECT_EQ(engine.DeregisterMem(h), SUCCESS);
  RecentErr();
  EXPECT_EQ(engine.RegisterMem(MemDesc{a, kSize + 1}, MEM_DEVICE, h), PARAM_INVALID);
  EXPECT_NE(RecentErr().find("past the end of the aclrtMalloc block"), std::string::npos);
  std::vector<uint8_t> heap(4096);
  EXPECT_EQ(engine.RegisterMem(MemDesc{reinterpret_cast<uintptr_t>(heap.data()), heap.size()}, MEM_DEVICE, h),
            PARAM_INVALID);
  const std::string msg = RecentErr();
  EXPECT_NE(msg.find("not memory from aclrtMalloc"), std::string::npos) << msg;
  EXPECT_NE(msg.find("RegisterMem"), std::string::npos) << msg;
  // Host memory of the emulation is host memory.
  void *hm = nullptr;
  ASSERT_EQ(aclrtMallocHost(&hm, 4096), ACL_SUCCESS);
  EXPECT_EQ(engine.RegisterMem(MemDesc{reinterpret_cast<uintptr_t>(hm), 4096}, MEM_DEVICE, h), PARAM_INVALID);
  EXPECT_EQ(engine.RegisterMem(MemDesc{reinterpret_cast<uintptr_t>(hm), 4096}, MEM_HOST, h), SUCCESS);
  EXPECT_EQ(engine.DeregisterMem(h), SUCCESS);
  engine.Finalize();
  EXPECT_EQ(aclrtFreeHost(hm), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(d), ACL_SUCCESS);
}

// A program asking for hardware no host here has learns why from
// aclGetRecentErrMsg, as the vendor's programs print it.
TEST(AclHostEngine, InitializeWithUbLinksIsRefusedAndTheRecentErrorSaysWhy) {
  RecentErr();
  AdxlEngine engine;
  EXPECT_EQ(engine.Initialize("127.0.0.1", Options("ub_ctp:device")), PARAM_INVALID);
  const std::string msg = RecentErr();
  EXPECT_NE(msg.find("needs UB links"), std::string::npos) << msg;
  EXPECT_NE(msg.find("roce:device"), std::string::npos) << msg;
  EXPECT_EQ(engine.Initialize("127.0.0.1", Options("uboe:device")), PARAM_INVALID);
  EXPECT_NE(RecentErr().find("uboe:device"), std::string::npos);
}

// protocol: "" (default: the same-node lane) or "roce:device" (the network lane).
class AclHostTransfer : public ::testing::TestWithParam<std::pair<std::string, std::string>> {};

TEST_P(AclHostTransfer, ReadAndWriteDeviceMemoryBetweenTwoProcesses) {
  const std::string protocol = GetParam().first;
  const std::string lane = GetParam().second;
  const std::string peer_name = adxl_test::LoopbackName(adxl_test::FreePort());
  Peer peer(peer_name, protocol);
  const uintptr_t remote = peer.ReadAddress();
  ASSERT_NE(remote, 0u) << "the peer did not start";

  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  void *dev = nullptr;
  ASSERT_EQ(aclrtMalloc(&dev, kSize, ACL_MEM_MALLOC_HUGE_ONLY), ACL_SUCCESS);
  ASSERT_EQ(aclrtMemset(dev, kSize, 0, kSize), ACL_SUCCESS);
  AdxlEngine engine;
  ASSERT_EQ(engine.Initialize("127.0.0.1", Options(protocol)), SUCCESS);
  MemHandle h = nullptr;
  ASSERT_EQ(engine.RegisterMem(MemDesc{reinterpret_cast<uintptr_t>(dev), kSize}, MEM_DEVICE, h), SUCCESS);
  ASSERT_EQ(engine.Connect(peer_name.c_str(), 5000), SUCCESS);
  ext::LinkInfo info;
  ASSERT_EQ(ext::GetLinkInfo(engine, peer_name.c_str(), info), SUCCESS);
  EXPECT_EQ(info.lane, lane);
  std::vector<ext::LinkRegion> regions;
  ASSERT_EQ(ext::GetLinkRegions(engine, peer_name.c_str(), regions), SUCCESS);
  ASSERT_EQ(regions.size(), 1u);
  EXPECT_EQ(regions[0].mem_type, MEM_DEVICE);

  // READ: the peer's pattern 1 into our device memory, in 64 descriptors.
  std::vector<TransferOpDesc> descs;
  for (size_t off = 0; off < kSize; off += kSize / 64) {
    descs.push_back({reinterpret_cast<uintptr_t>(dev) + off, remote + off, kSize / 64});
  }
  ASSERT_EQ(engine.TransferSync(peer_name.c_str(), READ, descs, 10000), SUCCESS);
  std::vector<uint8_t> got(kSize);
  ASSERT_EQ(aclrtMemcpy(got.data(), kSize, dev, kSize, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
  EXPECT_TRUE(got == Pattern(1)) << "READ moved wrong bytes";

  // WRITE: pattern 2 from our device memory into the peer's, one descriptor.
  std::vector<uint8_t> p2 = Pattern(2);
  ASSERT_EQ(aclrtMemcpy(dev, kSize, p2.data(), kSize, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  ASSERT_EQ(engine.TransferSync(peer_name.c_str(), WRITE, {{reinterpret_cast<uintptr_t>(dev), remote, kSize}}, 10000),
            SUCCESS);
  EXPECT_EQ(engine.Disconnect(peer_name.c_str(), 5000), SUCCESS);
  EXPECT_EQ(peer.Finish(), 0) << "the peer's device memory does not hold what was written";
  EXPECT_EQ(engine.DeregisterMem(h), SUCCESS);
  engine.Finalize();
  EXPECT_EQ(aclrtFree(dev), ACL_SUCCESS);
}

INSTANTIATE_TEST_SUITE_P(Lanes, AclHostTransfer,
                         ::testing::Values(std::make_pair(std::string(), std::string("hccs")),
                                           std::make_pair(std::string("roce:device"), std::string("rdma"))),
                         [](const auto &info) { return info.param.second; });

}  // namespace

int main(int argc, char **argv) {
  if (getenv(kPeerEnv) != nullptr && argc == 3) {
    return PeerMain(argv[1], strcmp(argv[2], "-") == 0 ? "" : argv[2]);
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
