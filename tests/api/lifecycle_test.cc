// docs/contract.md §2, §3 and §8 (GetCapability): names, options and lifecycle through
// the public API, one process.
#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

#include "adxl/adxl_engine.h"
#include "peer_process.h"

using namespace adxl;

namespace {

TEST(Lifecycle, ListeningOnABusyPortIsFailed) {
  const std::string name = adxl_test::LoopbackName(adxl_test::FreePort());
  AdxlEngine a, b;
  ASSERT_EQ(a.Initialize(name.c_str(), {}), SUCCESS);
  EXPECT_EQ(b.Initialize(name.c_str(), {}), FAILED);
}

TEST(Lifecycle, UnprefixedOptionWinsOverPrefixed) {
  AdxlEngine e;
  // The prefixed value is invalid, the un-prefixed valid one wins.
  EXPECT_EQ(e.Initialize("127.0.0.1", {{"adxl.RdmaTrafficClass", "7"}, {"RdmaTrafficClass", "8"}}), SUCCESS);
  AdxlEngine f;
  EXPECT_EQ(f.Initialize("127.0.0.1", {{"adxl.RdmaTrafficClass", "8"}, {"RdmaTrafficClass", "7"}}), PARAM_INVALID);
}

}  // namespace
