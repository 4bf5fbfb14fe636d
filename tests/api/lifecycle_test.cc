// Spec §2, §3 and §8 (GetCapability): names, options and lifecycle through
// the public API, one process.
#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

#include "adxl/adxl_engine.h"
#include "peer_process.h"

using namespace adxl;

namespace {

TEST(Lifecycle, EveryMethodFailsBeforeInitializeAndAfterFinalize) {
  AdxlEngine e;
  auto check_all = [&](const char *when) {
    SCOPED_TRACE(when);
    uint8_t buf[64];
    MemHandle h = nullptr;
    EXPECT_EQ(e.RegisterMem({reinterpret_cast<uintptr_t>(buf), sizeof(buf)}, MEM_HOST, h), FAILED);
    EXPECT_EQ(e.DeregisterMem(reinterpret_cast<MemHandle>(uintptr_t{1})), FAILED);
    EXPECT_EQ(e.Connect("127.0.0.1:9", 100), FAILED);
    EXPECT_EQ(e.Disconnect("127.0.0.1:9", 100), FAILED);
    EXPECT_EQ(e.TransferSync("127.0.0.1:9", READ, {{1, 1, 1}}, 100), FAILED);
    TransferReq req = nullptr;
    EXPECT_EQ(e.TransferAsync("127.0.0.1:9", READ, {{1, 1, 1}}, TransferArgs{}, req), FAILED);
    TransferStatus st;
    EXPECT_EQ(e.GetTransferStatus(reinterpret_cast<TransferReq>(uintptr_t{1}), st), FAILED);
    EXPECT_EQ(e.SendNotify("127.0.0.1:9", {"a", "b"}, 100), FAILED);
    std::vector<NotifyDesc> n;
    EXPECT_EQ(e.GetNotifies(n), FAILED);
  };
  check_all("before Initialize");
  ASSERT_EQ(e.Initialize("127.0.0.1", {}), SUCCESS);
  e.Finalize();
  check_all("after Finalize");
  e.Finalize();  // idempotent
}

TEST(Lifecycle, InitializeTwiceIsFailedAndAFailedInitializeChangesNothing) {
  AdxlEngine e;
  EXPECT_EQ(e.Initialize("not-an-address", {}), PARAM_INVALID);
  EXPECT_EQ(e.Initialize("127.0.0.1", {{"NoSuchOption", "1"}}), PARAM_INVALID);
  std::vector<NotifyDesc> n;
  EXPECT_EQ(e.GetNotifies(n), FAILED);  // still not initialized
  ASSERT_EQ(e.Initialize("127.0.0.1", {}), SUCCESS);
  EXPECT_EQ(e.Initialize("127.0.0.1", {}), FAILED);
  EXPECT_EQ(e.GetNotifies(n), SUCCESS);  // still the first, live engine
  e.Finalize();
  EXPECT_EQ(e.Initialize("127.0.0.1", {}), SUCCESS);  // usable again after Finalize
}

TEST(Lifecycle, EngineNames) {
  const uint16_t port = adxl_test::FreePort();
  const char *bad[] = {"", "localhost", "localhost:26000", "::1", "[::1", "[::1]x", "1.2.3.4:", "1.2.3.4:65536",
                       "1.2.3.4:-1", "1.2.3.4:http", "1.2.3.256", " 127.0.0.1"};
  for (const char *name : bad) {
    AdxlEngine e;
    EXPECT_EQ(e.Initialize(name, {}), PARAM_INVALID) << name;
  }
  const std::string good[] = {"127.0.0.1", "127.0.0.1:0", "127.0.0.1:" + std::to_string(port), "[::1]",
                              "[::1]:" + std::to_string(adxl_test::FreePort())};
  for (const std::string &name : good) {
    AdxlEngine e;
    EXPECT_EQ(e.Initialize(name.c_str(), {}), SUCCESS) << name;
  }
}

TEST(Lifecycle, ListeningOnABusyPortIsFailed) {
  const std::string name = adxl_test::LoopbackName(adxl_test::FreePort());
  AdxlEngine a, b;
  ASSERT_EQ(a.Initialize(name.c_str(), {}), SUCCESS);
  EXPECT_EQ(b.Initialize(name.c_str(), {}), FAILED);
}

TEST(Lifecycle, OptionsOfRealCallersInitialize) {
  AdxlEngine e;
  EXPECT_EQ(e.Initialize("127.0.0.1", {{"adxl.RdmaTrafficClass", "132"},
                                       {"adxl.RdmaServiceLevel", "4"},
                                       {"adxl.LocalCommRes", "{\"version\":\"1.3\"}"},
                                       {"AutoConnect", "1"},
                                       {"adxl.BufferPool", "0:0"}}),
            SUCCESS);
}

TEST(Lifecycle, MalformedOptionsAreParamInvalid) {
  const std::map<AscendString, AscendString> bad[] = {
      {{"adxl.RdmaTrafficClass", "130"}}, {{"RdmaTrafficClass", "256"}}, {{"adxl.RdmaServiceLevel", "8"}},
      {{"AutoConnect", "yes"}},           {{"adxl.BufferPool", "4:0"}},  {{"BufferPool", "x"}},
      {{"adxl.LocalCommRes", "[1]"}},     {{"GlobalResourceConfig", "{"}},
      {{"GlobalResourceConfig", "{\"comm_resource_config.protocol_desc\":\"ub:host\"}"}},
      {{"EnableUseFabricMem", "2"}},      {{"adxl.MaxRegistrations", "0"}}, {{"adxl.Unknown", "1"}},
  };
  for (const auto &opts : bad) {
    AdxlEngine e;
    EXPECT_EQ(e.Initialize("127.0.0.1", opts), PARAM_INVALID) << opts.begin()->first.GetString();
  }
}

TEST(Lifecycle, UnprefixedOptionWinsOverPrefixed) {
  AdxlEngine e;
  // The prefixed value is invalid, the un-prefixed valid one wins.
  EXPECT_EQ(e.Initialize("127.0.0.1", {{"adxl.RdmaTrafficClass", "7"}, {"RdmaTrafficClass", "8"}}), SUCCESS);
  AdxlEngine f;
  EXPECT_EQ(f.Initialize("127.0.0.1", {{"adxl.RdmaTrafficClass", "8"}, {"RdmaTrafficClass", "7"}}), PARAM_INVALID);
}

TEST(Lifecycle, DestructorFinalizesALiveEngine) {
  const std::string name = adxl_test::LoopbackName(adxl_test::FreePort());
  {
    AdxlEngine e;
    ASSERT_EQ(e.Initialize(name.c_str(), {}), SUCCESS);
  }
  AdxlEngine again;  // the port is free again: threads and sockets are gone
  EXPECT_EQ(again.Initialize(name.c_str(), {}), SUCCESS);
}

TEST(Lifecycle, MethodsMayBeCalledFromAnyThread) {
  AdxlEngine e;
  ASSERT_EQ(e.Initialize("127.0.0.1", {}), SUCCESS);
  std::vector<uint8_t> buf(1 << 16);
  MemHandle h = nullptr;
  std::thread([&] {
    EXPECT_EQ(e.RegisterMem({reinterpret_cast<uintptr_t>(buf.data()), buf.size()}, MEM_HOST, h), SUCCESS);
  }).join();
  std::thread([&] { EXPECT_EQ(e.DeregisterMem(h), SUCCESS); }).join();
}

TEST(Capability, Features) {
  int32_t v = -1;
  EXPECT_EQ(AdxlEngine::GetCapability(AUTO_CONNECT, v), SUCCESS);
  EXPECT_EQ(v, FEATURE_SUPPORTED);
  EXPECT_EQ(AdxlEngine::GetCapability(CLIENT_SERVER_COMM, v), SUCCESS);
  EXPECT_EQ(v, FEATURE_SUPPORTED);
  EXPECT_EQ(AdxlEngine::GetCapability(static_cast<FeatureType>(2), v), SUCCESS);
  EXPECT_EQ(v, FEATURE_NOT_SUPPORTED);
  EXPECT_EQ(AdxlEngine::GetCapability(static_cast<FeatureType>(12345), v), SUCCESS);
  EXPECT_EQ(v, FEATURE_NOT_SUPPORTED);
  EXPECT_EQ(AdxlEngine::GetCapability(static_cast<FeatureType>(-1), v), PARAM_INVALID);
}

}  // namespace
