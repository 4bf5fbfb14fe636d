// The region table a peer receives when it connects, while the engine it
// connects to keeps registering and deregistering (src/core/registrar.h: the
// handshake answer is encoded from a snapshot outside the registry lock and
// queued only if no change came in between).  Two engines in this process,
// linked over loopback.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "adxl/adxl_engine.h"
#include "adxl/adxl_ext.h"
#include "error_lines.h"
#include "mp_fixture.h"

using namespace adxl;
using namespace adxl_test;

namespace {

// A peer that connects must never hold a region whose DeregisterMem
// returned (after the peer connected): the owner waited for the
// acknowledgements of its subscribers only, and a handshake answer built
// before the withdrawal but queued after it would hand the peer memory the
// owner gave back.  The owner holds 2000 more regions so that each answer
// takes a while to build, widening the window the race needs.
TEST(TableSnapshotTest, ConcurrentConnectsNeverHoldAWithdrawnRegion) {
  constexpr size_t kPage = 4096;
  constexpr int kStatic = 2000, kChurn = 4000;
  const std::string owner_name = LoopbackName(FreePort());
  AdxlEngine owner, reader;
  // The most the option accepts (the regions a handshake answer carries);
  // the test holds at most kStatic + 1 at once.
  ASSERT_EQ(owner.Initialize(owner_name.c_str(), {{"adxl.MaxRegistrations", "4096"}}), SUCCESS);
  ASSERT_EQ(reader.Initialize("127.0.0.1", {}), SUCCESS);
  AlignedBuffer fixed(kStatic * kPage), churn(kChurn * kPage);
  for (int i = 0; i < kStatic; ++i) {
    MemHandle h = nullptr;
    ASSERT_EQ(owner.RegisterMem({fixed.addr() + i * kPage, kPage}, MEM_HOST, h), SUCCESS);
  }
  // Page i of `churn` is registered, then deregistered; `withdrawn` is the
  // highest i whose DeregisterMem returned.
  std::atomic<int> withdrawn{-1};
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::thread churner([&] {
    for (int i = 0; i < kChurn && !stop.load(); ++i) {
      MemHandle h = nullptr;
      if (owner.RegisterMem({churn.addr() + i * kPage, kPage}, MEM_HOST, h) != SUCCESS ||
          owner.DeregisterMem(h) != SUCCESS) {
        failures.fetch_add(1);
        return;
      }
      withdrawn.store(i);
    }
  });
  int connects = 0, stale = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2) && withdrawn.load() < kChurn - 1) {
    ASSERT_EQ(reader.Connect(owner_name.c_str(), 5000), SUCCESS);
    // Read after the connect: a withdrawal that returned since waited for
    // this reader's acknowledgement if it was subscribed already, so the
    // region is gone from its table; one that returned before it was
    // subscribed must not be in the answer it got.
    const int gone = withdrawn.load();
    std::vector<ext::LinkRegion> regions;
    ASSERT_EQ(ext::GetLinkRegions(reader, owner_name.c_str(), regions), SUCCESS);
    size_t fixed_seen = 0;
    for (const auto &r : regions) {
      if (r.addr >= fixed.addr() && r.addr < fixed.addr() + fixed.size()) ++fixed_seen;
      if (r.addr < churn.addr() || r.addr >= churn.addr() + churn.size()) continue;
      const int page = static_cast<int>((r.addr - churn.addr()) / kPage);
      if (page <= gone) {
        ++stale;
        ADD_FAILURE() << "connect " << connects << ": holds page " << page << ", whose DeregisterMem returned (up to "
                      << gone << ") before the table was read";
      }
    }
    EXPECT_EQ(fixed_seen, static_cast<size_t>(kStatic)) << "a region registered before the connect is missing";
    ASSERT_EQ(reader.Disconnect(owner_name.c_str(), 5000), SUCCESS);
    ++connects;
    if (stale > 5) break;
  }
  stop.store(true);
  churner.join();
  EXPECT_EQ(failures.load(), 0) << "RegisterMem or DeregisterMem failed during the churn";
  std::printf("[ INFO     ] %d connects while %d pages were registered and withdrawn\n", connects,
              withdrawn.load() + 1);
  EXPECT_GE(connects, 20);
  EXPECT_GE(withdrawn.load(), 20);
  reader.Finalize();
  owner.Finalize();
}

// adxl.MaxRegistrations is bounded by what a handshake answer carries:
// above it Initialize refuses with one ERROR line; at it, an engine holding
// every registration it may still answers a Connect with the whole table.
TEST(TableSnapshotTest, AnEngineAtItsRegistrationLimitCanStillBeConnectedTo) {
  constexpr size_t kPage = 4096;
  constexpr int kLimit = 4096;
  {
    AdxlEngine refused;
    const std::string over = std::to_string(kLimit + 1);
    EXPECT_EQ(ErrorLines([&] {
                EXPECT_EQ(refused.Initialize("127.0.0.1", {{"adxl.MaxRegistrations", over.c_str()}}), PARAM_INVALID);
              }),
              1);
  }
  const std::string owner_name = LoopbackName(FreePort());
  AdxlEngine owner, reader;
  ASSERT_EQ(owner.Initialize(owner_name.c_str(), {{"adxl.MaxRegistrations", std::to_string(kLimit).c_str()}}),
            SUCCESS);
  ASSERT_EQ(reader.Initialize("127.0.0.1", {}), SUCCESS);
  AlignedBuffer pages(kLimit * kPage);
  for (int i = 0; i < kLimit; ++i) {
    MemHandle h = nullptr;
    ASSERT_EQ(owner.RegisterMem({pages.addr() + i * kPage, kPage}, MEM_HOST, h), SUCCESS) << "page " << i;
  }
  ASSERT_EQ(reader.Connect(owner_name.c_str(), 10000), SUCCESS);
  std::vector<ext::LinkRegion> regions;
  ASSERT_EQ(ext::GetLinkRegions(reader, owner_name.c_str(), regions), SUCCESS);
  EXPECT_EQ(regions.size(), static_cast<size_t>(kLimit));
  EXPECT_EQ(reader.Disconnect(owner_name.c_str(), 5000), SUCCESS);
  reader.Finalize();
  owner.Finalize();
}

}  // namespace
