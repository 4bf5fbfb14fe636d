// docs/contract.md §4 (registration) through the public API, one process.
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

TEST_F(RegistrationTest, LimitFromTheEnvironment) {
  setenv("ADXL_MAX_REGISTRATIONS", "1", 1);
  Init();
  unsetenv("ADXL_MAX_REGISTRATIONS");
  MemHandle a, b;
  ASSERT_EQ(Reg(base(), 4096, a), SUCCESS);
  EXPECT_EQ(Reg(base() + 4096, 4096, b), RESOURCE_EXHAUSTED);
}

// MEM_DEVICE registrations (UNSUPPORTED without a device-capable UCX,
// PARAM_INVALID for host memory where there is one): tests/device.

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
