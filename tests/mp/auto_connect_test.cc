// docs/contract.md §5.8 AutoConnect, on both facades, with real peer processes: transfers
// and notifies to unconnected peers connect on demand; a link-fatal error
// (timeout, peer death) drops the link and the next call reconnects.
#include <csignal>
#include <cstring>
#include <thread>

#include "facade_fixture.h"

using namespace adxl_test;
using adxl::Status;

namespace {

template <typename Api>
class AutoConnect : public FacadeTest<Api> {
 protected:
  void InitAuto() { this->Init({{Api::AutoConnectKey(), "1"}}); }
};
TYPED_TEST_SUITE(AutoConnect, Facades, FacadeNames);

TYPED_TEST(AutoConnect, OffMeansNotConnected) {
  this->Init({{TypeParam::AutoConnectKey(), "0"}});
  const char *peer = this->peer_name_.c_str();
  EXPECT_EQ(this->Sync(adxl::WRITE, {{this->local_.addr(), this->remote_, 64}}), adxl::NOT_CONNECTED);
  adxl::TransferReq req = nullptr;
  EXPECT_EQ(this->engine_.TransferAsync(peer, adxl::WRITE, {{this->local_.addr(), this->remote_, 64}},
                                        typename TypeParam::TransferArgs{}, req),
            adxl::NOT_CONNECTED);
  EXPECT_EQ(this->engine_.SendNotify(peer, adxl::NotifyDesc{"a", "b"}), adxl::NOT_CONNECTED);
}

TYPED_TEST(AutoConnect, SyncTransferConnectsOnDemand) {
  this->InitAuto();
  FillPattern(this->local_.data(), 1 << 20, 21);
  ASSERT_EQ(this->Sync(adxl::WRITE, {{this->local_.addr(), this->remote_, 1 << 20}}), adxl::SUCCESS);
  EXPECT_EQ(this->RemoteHash(0, 1 << 20), Hash(this->local_.data(), 1 << 20));
  // The link stays: an explicit Connect finds it.
  EXPECT_EQ(this->engine_.Connect(this->peer_name_.c_str(), 1000), adxl::ALREADY_CONNECTED);
}

TYPED_TEST(AutoConnect, AsyncTransferConnectsOnDemand) {
  this->InitAuto();
  FillPattern(this->local_.data(), 65536, 22);
  adxl::TransferReq req = nullptr;
  ASSERT_EQ(this->engine_.TransferAsync(this->peer_name_.c_str(), adxl::WRITE,
                                        {{this->local_.addr(), this->remote_, 65536}},
                                        typename TypeParam::TransferArgs{}, req),
            adxl::SUCCESS);
  EXPECT_EQ(this->WaitFor(req), adxl::TransferStatus::COMPLETED);
  EXPECT_EQ(this->RemoteHash(0, 65536), Hash(this->local_.data(), 65536));
}

TYPED_TEST(AutoConnect, NotifyConnectsOnDemand) {
  this->InitAuto();
  ASSERT_EQ(this->engine_.SendNotify(this->peer_name_.c_str(), adxl::NotifyDesc{"k", "v"}, 3000), adxl::SUCCESS);
  EXPECT_EQ(this->peer_->Command("notifies"), "ok 1 k=v");
}

TYPED_TEST(AutoConnect, NobodyListeningFailsWithinTheCallsTimeout) {
  this->InitAuto();
  const std::string nobody = LoopbackName(FreePort());
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(this->engine_.TransferSync(nobody.c_str(), adxl::WRITE, {{this->local_.addr(), this->remote_, 64}}, 500),
            adxl::FAILED);
  EXPECT_LT(MsSince(t0), ScaledMs(1500));
  EXPECT_EQ(this->engine_.SendNotify(nobody.c_str(), adxl::NotifyDesc{"a", "b"}, 500), adxl::FAILED);
}

TYPED_TEST(AutoConnect, DeadPeerIsDroppedByTheHeartbeatAndTheNextCallReconnects) {
  this->InitAuto();
  ASSERT_EQ(this->Sync(adxl::WRITE, {{this->local_.addr(), this->remote_, 64}}), adxl::SUCCESS);
  const uint16_t port = static_cast<uint16_t>(std::stoi(this->peer_name_.substr(this->peer_name_.rfind(':') + 1)));
  // A stopped peer closes nothing: only the heartbeat (200 ms, dead after 3
  // silent periods) can tell.  With AutoConnect the dead link is removed,
  // not kept FAILED, so Disconnect afterwards finds nothing.
  ASSERT_TRUE(StopProcess(this->peer_->pid()));
  // A fixed wait on purpose: the only probe both facades have, Disconnect,
  // removes the link it finds, so it cannot be polled; 1500 ms is the bound
  // (2.5 times the 600 ms of the heartbeat) by which the link must be gone.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_EQ(this->engine_.Disconnect(this->peer_name_.c_str(), 1000), adxl::NOT_CONNECTED);
  // A new engine under the same name: the next call connects to it.
  this->peer_->KillAndWait();
  this->StartPeer({}, port);
  FillPattern(this->local_.data(), 4096, 23);
  ASSERT_EQ(this->Sync(adxl::WRITE, {{this->local_.addr(), this->remote_, 4096}}), adxl::SUCCESS);
  EXPECT_EQ(this->RemoteHash(0, 4096), Hash(this->local_.data(), 4096));
}

TYPED_TEST(AutoConnect, KilledPeerIsDroppedAtOnceAndTheNextCallReconnects) {
  this->InitAuto();
  ASSERT_EQ(this->Sync(adxl::WRITE, {{this->local_.addr(), this->remote_, 64}}), adxl::SUCCESS);
  const uint16_t port = static_cast<uint16_t>(std::stoi(this->peer_name_.substr(this->peer_name_.rfind(':') + 1)));
  this->peer_->KillAndWait();  // its sockets close: the control connection ends
  // A fixed bound on purpose (Disconnect cannot be polled, see above): "at
  // once" is within 300 ms.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(this->engine_.Disconnect(this->peer_name_.c_str(), 1000), adxl::NOT_CONNECTED);
  EXPECT_EQ(this->Sync(adxl::WRITE, {{this->local_.addr(), this->remote_, 64}}, 500), adxl::FAILED);  // nobody there
  this->StartPeer({}, port);
  ASSERT_EQ(this->Sync(adxl::WRITE, {{this->local_.addr(), this->remote_, 4096}}), adxl::SUCCESS);
}

// Disconnect would answer SUCCESS for a link kept FAILED; probe without it:
// after a timeout the next call succeeds without Disconnect + Connect.
TYPED_TEST(AutoConnect, TimeoutDropsTheLinkAndTheNextCallReconnects) {
  this->StartPeer(RemoteTcpPeerEnv());
  this->InitAuto();
  ASSERT_EQ(this->Sync(adxl::WRITE, {{this->local_.addr(), this->remote_, 64}}), adxl::SUCCESS);
  ASSERT_TRUE(StopProcess(this->peer_->pid()));
  // 64 MiB (the same remote range 16 times): more than any socket buffer holds.
  const std::vector<adxl::TransferOpDesc> big(16, {this->local_.addr(), this->remote_, this->kRemoteSize});
  ASSERT_EQ(this->Sync(adxl::WRITE, big, 300), adxl::TIMEOUT);  // on time: Sync checks it
  // §6.4 holds with AutoConnect too: nothing of the call lands afterwards.
  LateBytesProbe probe(adxl::WRITE, this->peer_->pid(), this->local_.addr(), this->remote_, this->kRemoteSize);
  this->peer_->Signal(SIGCONT);
  std::this_thread::sleep_for(std::chrono::milliseconds(kStragglerWaitMs));  // nothing may land meanwhile
  EXPECT_TRUE(probe.NothingLanded());
  FillPattern(this->local_.data(), 4096, 24);
  EXPECT_EQ(this->Sync(adxl::WRITE, {{this->local_.addr(), this->remote_, 4096}}, 5000), adxl::SUCCESS);
  EXPECT_EQ(this->RemoteHash(0, 4096), Hash(this->local_.data(), 4096));
}

}  // namespace
