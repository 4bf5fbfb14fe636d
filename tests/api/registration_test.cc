// Spec §4 (registration) through the public API, one process.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "adxl/adxl_engine.h"

using namespace adxl;

namespace {

class RegistrationTest : public ::testing::Test {
 protected:
  void Init(const std::map<AscendString, AscendString> &opts = {}) { ASSERT_EQ(e_.Initialize("127.0.0.1", opts), SUCCESS); }
  Status Reg(uintptr_t addr, size_t len, MemHandle &h, MemType t = MEM_HOST) { return e_.RegisterMem({addr, len}, t, h); }
  uintptr_t base() const { return reinterpret_cast<uintptr_t>(buf_.data()); }

  AdxlEngine e_;
  std::vector<uint8_t> buf_ = std::vector<uint8_t>(1 << 20);
};

TEST_F(RegistrationTest, InvalidRanges) {
  Init();
  MemHandle h = nullptr;
  EXPECT_EQ(Reg(0, 4096, h), PARAM_INVALID);
  EXPECT_EQ(Reg(base(), 0, h), PARAM_INVALID);
  EXPECT_EQ(Reg(UINTPTR_MAX - 100, 4096, h), PARAM_INVALID);
  EXPECT_EQ(Reg(base(), 4096, h, static_cast<MemType>(2)), PARAM_INVALID);
  EXPECT_EQ(Reg(base(), 4096, h, static_cast<MemType>(-1)), PARAM_INVALID);
}

TEST_F(RegistrationTest, IdenticalRangeGivesTheSameHandleAndIsCounted) {
  Init();
  MemHandle a = nullptr, b = nullptr, c = nullptr;
  ASSERT_EQ(Reg(base(), 65536, a), SUCCESS);
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(Reg(base(), 65536, b), SUCCESS);
  EXPECT_EQ(a, b);
  EXPECT_EQ(e_.DeregisterMem(a), SUCCESS);
  // Still registered once: an overlapping range is still refused.
  EXPECT_EQ(Reg(base() + 4096, 4096, c), PARAM_INVALID);
  EXPECT_EQ(e_.DeregisterMem(a), SUCCESS);
  EXPECT_EQ(Reg(base() + 4096, 4096, c), SUCCESS);  // now gone
}

TEST_F(RegistrationTest, OverlapIsRefusedAdjacencyIsFine) {
  Init();
  MemHandle a, b;
  ASSERT_EQ(Reg(base() + 8192, 8192, a), SUCCESS);
  EXPECT_EQ(Reg(base() + 4096, 8192, b), PARAM_INVALID);   // overlaps the start
  EXPECT_EQ(Reg(base() + 12288, 8192, b), PARAM_INVALID);  // overlaps the end
  EXPECT_EQ(Reg(base(), 65536, b), PARAM_INVALID);         // contains it
  EXPECT_EQ(Reg(base() + 9000, 100, b), PARAM_INVALID);    // inside it
  EXPECT_EQ(Reg(base() + 8192, 4096, b), PARAM_INVALID);   // same start, other length
  EXPECT_EQ(Reg(base(), 8192, b), SUCCESS);                // adjacent below
  EXPECT_EQ(Reg(base() + 16384, 8192, b), SUCCESS);        // adjacent above
}

TEST_F(RegistrationTest, DeregisterRules) {
  Init();
  EXPECT_EQ(e_.DeregisterMem(nullptr), PARAM_INVALID);
  EXPECT_EQ(e_.DeregisterMem(reinterpret_cast<MemHandle>(uintptr_t{987654})), SUCCESS);
  MemHandle h;
  ASSERT_EQ(Reg(base(), 4096, h), SUCCESS);
  EXPECT_EQ(e_.DeregisterMem(h), SUCCESS);
  EXPECT_EQ(e_.DeregisterMem(h), SUCCESS);  // second time: nothing to do
}

TEST_F(RegistrationTest, CountLimitIsResourceExhaustedAndChangesNothing) {
  Init({{"adxl.MaxRegistrations", "3"}});
  MemHandle h[4];
  for (int i = 0; i < 3; ++i) ASSERT_EQ(Reg(base() + i * 4096, 4096, h[i]), SUCCESS);
  EXPECT_EQ(Reg(base() + 3 * 4096, 4096, h[3]), RESOURCE_EXHAUSTED);
  MemHandle same;
  EXPECT_EQ(Reg(base(), 4096, same), SUCCESS);  // an identical range is not a new registration
  EXPECT_EQ(same, h[0]);
  EXPECT_EQ(e_.DeregisterMem(h[1]), SUCCESS);
  EXPECT_EQ(Reg(base() + 3 * 4096, 4096, h[3]), SUCCESS);
}

TEST_F(RegistrationTest, HostByteLimitIsResourceExhausted) {
  Init({{"adxl.MaxHostMemory", "65536"}});
  MemHandle a, b;
  ASSERT_EQ(Reg(base(), 61440, a), SUCCESS);
  EXPECT_EQ(Reg(base() + 65536, 8192, b), RESOURCE_EXHAUSTED);
  EXPECT_EQ(Reg(base() + 65536, 4096, b), SUCCESS);  // exactly at the limit
}

TEST_F(RegistrationTest, LimitFromTheEnvironment) {
  setenv("ADXL_MAX_REGISTRATIONS", "1", 1);
  Init();
  unsetenv("ADXL_MAX_REGISTRATIONS");
  MemHandle a, b;
  ASSERT_EQ(Reg(base(), 4096, a), SUCCESS);
  EXPECT_EQ(Reg(base() + 4096, 4096, b), RESOURCE_EXHAUSTED);
}

TEST_F(RegistrationTest, DeviceMemoryWithoutADeviceCapableTransportIsUnsupported) {
  Init();
  MemHandle h;
  // This UCX build has no CUDA/ROCm memory type (Debian's CPU build).
  EXPECT_EQ(Reg(base(), 4096, h, MEM_DEVICE), UNSUPPORTED);
}

TEST(MallocMem, ArgumentChecks) {
  void *p = nullptr;
  EXPECT_EQ(AdxlEngine::MallocMem(MEM_HOST, 0, &p), PARAM_INVALID);
  EXPECT_EQ(AdxlEngine::MallocMem(MEM_HOST, 4096, nullptr), PARAM_INVALID);
  ShareableHandle sh;
  int x;
  EXPECT_EQ(AdxlEngine::ExportToShareableHandle(&x, sh), PARAM_INVALID);
  EXPECT_EQ(AdxlEngine::FreeMem(&x), PARAM_INVALID);
}

}  // namespace
