// adxl::Endpoint (src/transport/transport.h) over the UCX plugin: a teardown
// in progress never holds up the calls that meet it.  The test build's plugin
// (ADXL_UCX_FAULTS_PLUGIN_PATH), whose test_ep_destroy_delay_us parameter
// keeps ep_destroy busy for a known time (plugin/ucx/fault_injection.h).
#include "transport/transport.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "transport/plugin_loader.h"
#include "time_scale.h"

namespace adxl {
namespace {

using Clock = std::chrono::steady_clock;
using Ms = std::chrono::milliseconds;

constexpr auto kDestroyDelay = std::chrono::milliseconds(1500);
// Time the teardown is given to start (the closer thread to take the handle).
constexpr auto kTeardownStarted = std::chrono::milliseconds(200);
// A call that meets the teardown answers well within the rest of it.
constexpr auto kPrompt = std::chrono::milliseconds(400);

std::shared_ptr<Transport> OpenUcx(const char *path = ADXL_UCX_FAULTS_PLUGIN_PATH) {
  std::string why;
  auto lib = PluginLibrary::LoadFile(path, ADXL_PLUGIN_ABI_VERSION, &why);
  if (lib == nullptr) return nullptr;
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(kDestroyDelay).count();
  return Transport::Open(std::move(lib), {{"test_ep_destroy_delay_us", std::to_string(us)}}, &why);
}

struct Fixture {
  std::shared_ptr<Transport> t;
  std::shared_ptr<Endpoint> ep;
  std::vector<char> buf = std::vector<char>(4096);
  std::unique_ptr<TransportMem> mem;

  bool Start(const char *path = ADXL_UCX_FAULTS_PLUGIN_PATH) {
    t = OpenUcx(path);
    if (t == nullptr) return false;
    // To itself over the RDMA lane (UCP over loopback): no peer process.
    if (Endpoint::Create(t, t->address(), ADXL_PLUGIN_LANE_RDMA, &ep) != ADXL_PLUGIN_OK) return false;
    return TransportMem::Register(t, buf.data(), buf.size(), ADXL_PLUGIN_MEM_HOST, &mem) == ADXL_PLUGIN_OK;
  }
};

// The control thread unpacks the keys of a peer's region update on the
// link's endpoint.  While a teardown of that endpoint is in progress it
// must not wait for it (on the old code it waited the whole teardown).
TEST(EndpointTeardown, ARegionUpdateDuringATeardownDoesNotWaitForIt) {
  Fixture f;
  ASSERT_TRUE(f.Start());
  auto closing = std::async(std::launch::async, [&] { f.ep->Cancel(); });
  std::this_thread::sleep_for(kTeardownStarted);
  const auto start = Clock::now();
  std::unique_ptr<RemoteKey> key;
  const int rc = RemoteKey::Unpack(f.ep, f.mem->packed_key(), &key);
  const auto took = Clock::now() - start;
  EXPECT_EQ(rc, ADXL_PLUGIN_ERR_IO);  // the endpoint is going: its keys are of no use
  EXPECT_LT(std::chrono::duration_cast<Ms>(took).count(), adxl_test::ScaledMs(kPrompt.count()))
      << "ms: the key unpack waited for the endpoint teardown";
  EXPECT_EQ(f.ep->Describe(), "closed");
  std::unique_ptr<Batch> batch;
  EXPECT_EQ(f.ep->Post(ADXL_PLUGIN_PUT, nullptr, 0, &batch), ADXL_PLUGIN_ERR_IO);
  EXPECT_LT(std::chrono::duration_cast<Ms>(Clock::now() - start).count(), adxl_test::ScaledMs(kPrompt.count()));
  closing.get();
}

// A second Cancel returns only once the first has destroyed the handle:
// the TIMEOUT fence holds for every caller.
TEST(EndpointTeardown, ASecondCancelWaitsForTheFirst) {
  Fixture f;
  ASSERT_TRUE(f.Start());
  const auto start = Clock::now();
  auto closing = std::async(std::launch::async, [&] { f.ep->Cancel(); });
  std::this_thread::sleep_for(kTeardownStarted);
  f.ep->Cancel();
  EXPECT_GE(std::chrono::duration_cast<Ms>(Clock::now() - start).count(), kDestroyDelay.count());
  closing.get();
}

// The installed plugin has no fault-injection seams (plugin/ucx/
// fault_injection.h): it ignores test_ep_destroy_delay_us, so its teardown
// does not take the delay the test build's plugin sleeps.
TEST(EndpointTeardown, TheInstalledPluginIgnoresTheFaultInjectionParameters) {
  Fixture f;
  ASSERT_TRUE(f.Start(ADXL_UCX_PLUGIN_PATH));
  const auto start = Clock::now();
  f.ep->Cancel();
  EXPECT_LT(std::chrono::duration_cast<Ms>(Clock::now() - start).count(), kDestroyDelay.count() / 2)
      << "ms: the installed plugin slept at a fault-injection seam";
}

}  // namespace
}  // namespace adxl
