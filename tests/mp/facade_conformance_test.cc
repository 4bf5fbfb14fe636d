// Both facades (adxl::AdxlEngine, hixl::Hixl) through the same contract checks
// (docs/contract.md §3, §5-§7) against a real peer process: one engine core behind both.
#include <cstring>
#include <thread>
#include <vector>

#include "facade_fixture.h"

using namespace adxl_test;
using adxl::Status;

namespace {

template <typename Api>
class FacadeConformance : public FacadeTest<Api> {};
TYPED_TEST_SUITE(FacadeConformance, Facades, FacadeNames);

TYPED_TEST(FacadeConformance, EveryMethodIsFailedBeforeInitializeAndAfterFinalize) {
  auto check = [&](const char *when) {
    auto &e = this->engine_;
    typename TypeParam::MemDesc d{};
    d.addr = this->local_.addr();
    d.len = 4096;
    adxl::MemHandle h = nullptr;
    EXPECT_EQ(e.RegisterMem(d, adxl::MEM_HOST, h), adxl::FAILED) << when;
    EXPECT_EQ(e.DeregisterMem(reinterpret_cast<adxl::MemHandle>(1)), adxl::FAILED) << when;
    EXPECT_EQ(e.Connect(this->peer_name_.c_str()), adxl::FAILED) << when;
    EXPECT_EQ(e.Disconnect(this->peer_name_.c_str()), adxl::FAILED) << when;
    EXPECT_EQ(this->Sync(adxl::WRITE, {{this->local_.addr(), this->remote_, 64}}), adxl::FAILED) << when;
    adxl::TransferReq req = nullptr;
    EXPECT_EQ(e.TransferAsync(this->peer_name_.c_str(), adxl::WRITE, {{this->local_.addr(), this->remote_, 64}},
                              typename TypeParam::TransferArgs{}, req),
              adxl::FAILED)
        << when;
    adxl::TransferStatus ts;
    EXPECT_EQ(e.GetTransferStatus(reinterpret_cast<adxl::TransferReq>(1), ts), adxl::FAILED) << when;
    EXPECT_EQ(e.SendNotify(this->peer_name_.c_str(), adxl::NotifyDesc{"n", "m"}), adxl::FAILED) << when;
    std::vector<adxl::NotifyDesc> n;
    EXPECT_EQ(e.GetNotifies(n), adxl::FAILED) << when;
  };
  check("before Initialize");
  this->Init({});
  EXPECT_EQ(this->engine_.Initialize("127.0.0.1", {}), adxl::FAILED);  // twice
  this->engine_.Finalize();
  this->engine_.Finalize();  // idempotent
  check("after Finalize");
  int32_t v = 0;
  EXPECT_EQ(TypeParam::Engine::GetCapability(adxl::AUTO_CONNECT, v), adxl::SUCCESS);
  EXPECT_EQ(v, adxl::FEATURE_SUPPORTED);
  EXPECT_EQ(TypeParam::Engine::GetCapability(static_cast<adxl::FeatureType>(-1), v), adxl::PARAM_INVALID);
}

TYPED_TEST(FacadeConformance, OptionsAreCheckedAtInitialize) {
  typename TypeParam::Engine e;
  EXPECT_EQ(e.Initialize("127.0.0.1", {{"NoSuchOption", "1"}}), adxl::PARAM_INVALID);
  EXPECT_EQ(e.Initialize("127.0.0.1", {{TypeParam::BufferPoolKey(), "4"}}), adxl::PARAM_INVALID);
  EXPECT_EQ(e.Initialize("127.0.0.1", {{TypeParam::AutoConnectKey(), "yes"}}), adxl::PARAM_INVALID);
  EXPECT_EQ(e.Initialize("not-an-address", {}), adxl::PARAM_INVALID);
  // What real callers pass.
  EXPECT_EQ(e.Initialize("127.0.0.1", {{"RdmaTrafficClass", "132"},
                                       {"RdmaServiceLevel", "4"},
                                       {"LocalCommRes", "{\"version\":\"1.3\"}"},
                                       {TypeParam::AutoConnectKey(), "1"},
                                       {TypeParam::BufferPoolKey(), "0:0"},
                                       {"GlobalResourceConfig", "{\"connect_pool.thread_num\": 3}"}}),
            adxl::SUCCESS);
}

TYPED_TEST(FacadeConformance, LinksTransfersAndNotifies) {
  this->Init({});
  auto &e = this->engine_;
  const char *peer = this->peer_name_.c_str();
  EXPECT_EQ(this->Sync(adxl::WRITE, {{this->local_.addr(), this->remote_, 64}}), adxl::NOT_CONNECTED);
  EXPECT_EQ(e.Connect(peer, 0), adxl::PARAM_INVALID);
  EXPECT_EQ(e.Connect("127.0.0.1:0x10", 1000), adxl::PARAM_INVALID);
  ASSERT_EQ(e.Connect(peer, 5000), adxl::SUCCESS);
  EXPECT_EQ(e.Connect(peer, 5000), adxl::ALREADY_CONNECTED);
  // Sync WRITE / READ, every byte.
  FillPattern(this->local_.data(), 1 << 20, 11);
  ASSERT_EQ(this->Sync(adxl::WRITE, {{this->local_.addr(), this->remote_, 1 << 20}}), adxl::SUCCESS);
  EXPECT_EQ(this->RemoteHash(0, 1 << 20), Hash(this->local_.data(), 1 << 20));
  memset(this->local_.data(), 0, 1 << 20);
  ASSERT_EQ(this->Sync(adxl::READ, {{this->local_.addr(), this->remote_ + 4096, 4096}}), adxl::SUCCESS);
  EXPECT_EQ(Hash(this->local_.data(), 4096), this->RemoteHash(4096, 4096));
  // Argument checks before anything moves.
  EXPECT_EQ(this->Sync(adxl::WRITE, {}), adxl::PARAM_INVALID);
  EXPECT_EQ(this->Sync(adxl::WRITE, {{this->local_.addr(), this->remote_, 64}}, 0), adxl::PARAM_INVALID);
  EXPECT_EQ(this->Sync(adxl::WRITE, {{this->local_.addr(), this->remote_ + this->kRemoteSize, 64}}),
            adxl::PARAM_INVALID);
  // Async: WAITING / COMPLETED, reported once.
  adxl::TransferReq req = nullptr;
  ASSERT_EQ(e.TransferAsync(peer, adxl::WRITE, {{this->local_.addr(), this->remote_, 65536}},
                            typename TypeParam::TransferArgs{}, req),
            adxl::SUCCESS);
  EXPECT_EQ(this->WaitFor(req), adxl::TransferStatus::COMPLETED);
  adxl::TransferStatus ts;
  EXPECT_EQ(e.GetTransferStatus(req, ts), adxl::PARAM_INVALID);
  adxl::TransferReq null_req = nullptr;
  EXPECT_EQ(e.GetTransferStatus(null_req, ts), adxl::FAILED);
  // Notifies reach the peer.
  EXPECT_EQ(e.SendNotify(peer, adxl::NotifyDesc{"name", std::string(1025, 'm')}), adxl::PARAM_INVALID);
  ASSERT_EQ(e.SendNotify(peer, adxl::NotifyDesc{"req7", "done"}, 2000), adxl::SUCCESS);
  EXPECT_EQ(this->peer_->Command("notifies"), "ok 1 req7=done");
  // Disconnect.
  EXPECT_EQ(e.Disconnect(peer, 1000), adxl::SUCCESS);
  EXPECT_EQ(e.Disconnect(peer, 1000), adxl::NOT_CONNECTED);
  EXPECT_EQ(this->Sync(adxl::WRITE, {{this->local_.addr(), this->remote_, 64}}), adxl::NOT_CONNECTED);
}

TYPED_TEST(FacadeConformance, PeerDeathIsDetectedByTheHeartbeat) {
  this->Init({});
  ASSERT_EQ(this->engine_.Connect(this->peer_name_.c_str(), 5000), adxl::SUCCESS);
  this->peer_->KillAndWait();
  const auto t0 = std::chrono::steady_clock::now();
  Status st = adxl::SUCCESS;
  while (MsSince(t0) < 3000) {
    st = this->Sync(adxl::READ, {{this->local_.addr(), this->remote_, 64}}, 1000);
    if (st == adxl::FAILED) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(st, adxl::FAILED);
  EXPECT_EQ(this->engine_.Disconnect(this->peer_name_.c_str(), 1000), adxl::SUCCESS);  // cleaned up locally
}

// MemDesc::local_only (docs/contract.md §4.9) through each facade: a peer
// connected to this engine cannot reach the local_only region, while this
// engine uses it as the local side of its own transfers.
TYPED_TEST(FacadeConformance, LocalOnlyIsUnreachableByPeersAndUsableLocally) {
  typename TypeParam::Engine e;
  const std::string name = LoopbackName(FreePort());
  ASSERT_EQ(e.Initialize(name.c_str(), {{"adxl.HeartbeatMs", this->kHeartbeatMs}}), adxl::SUCCESS);
  std::vector<uint8_t> open(65536), hidden(65536);
  FillPattern(hidden.data(), hidden.size(), 5);
  adxl::MemHandle ho = nullptr, hh = nullptr;
  typename TypeParam::MemDesc d{};
  d.addr = reinterpret_cast<uintptr_t>(open.data());
  d.len = open.size();
  ASSERT_EQ(e.RegisterMem(d, adxl::MEM_HOST, ho), adxl::SUCCESS);
  d.addr = reinterpret_cast<uintptr_t>(hidden.data());
  d.local_only = true;
  ASSERT_EQ(e.RegisterMem(d, adxl::MEM_HOST, hh), adxl::SUCCESS);
  ASSERT_EQ(this->peer_->Command("connect " + name + " 5000"), "ok");
  const std::string rd = "read " + name + " 5000 0 0 ";
  EXPECT_EQ(this->peer_->Command(rd + std::to_string(d.addr) + " 4096"), "status " + std::to_string(adxl::PARAM_INVALID));
  EXPECT_EQ(this->peer_->Command(rd + std::to_string(reinterpret_cast<uintptr_t>(open.data())) + " 4096"), "ok");
  // The owner writes from its local_only region to the peer.
  ASSERT_EQ(e.Connect(this->peer_name_.c_str(), 5000), adxl::SUCCESS);
  ASSERT_EQ(e.TransferSync(this->peer_name_.c_str(), adxl::WRITE,
                           {{reinterpret_cast<uintptr_t>(hidden.data()), this->remote_, 4096}}, 5000),
            adxl::SUCCESS);
  EXPECT_EQ(this->RemoteHash(0, 4096), Hash(hidden.data(), 4096));
  EXPECT_EQ(e.DeregisterMem(hh), adxl::SUCCESS);
  EXPECT_EQ(e.DeregisterMem(ho), adxl::SUCCESS);
}

}  // namespace
